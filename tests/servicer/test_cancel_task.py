"""AgentService.CancelTask: a task that waits for its client (a Chat turn that ended
``e2a.input_required``) cancelled by agent id and task id; NOT_FOUND ``NO_WAITING_TASK`` when nothing
waits there, NOT_FOUND ``UNKNOWN_AGENT`` for an agent the table lacks, INVALID_ARGUMENT without a
task id, an agent's failure as a status naming its code; and through a ``grpc://`` route to an
upstream (in process, port 0) whose ACP agent asked permission."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.backends.acp import AcpBackend
from e2a_grpc.chat.events import BackendError, InputRequired
from e2a_grpc.client.chat import achat
from e2a_grpc.errors import NO_WAITING_TASK_REASON
from e2a_grpc.grpc.status import AGENT_ERROR_REASON, UNKNOWN_AGENT_REASON
from e2a_grpc.model import ErrorCode, WaitReason
from tests.conftest import in_process_server
from tests.support.acp_servers import AGENT
from tests.support.fakes import AskingBackend
from tests.support.status import status_detail
from tests.support.waiting import within

QUESTION = InputRequired(WaitReason.PERMISSION, "May I?", {"content": ""}, options=({"option_id": "yes"},))


async def _frames(channel: grpc.aio.Channel, envelope: E2AEnvelope) -> list[E2AResponse]:
    return [frame async for frame in achat(channel, envelope, timeout=30)]


async def _cancel(channel: grpc.aio.Channel, task_id: str, agent_id: str = "") -> pb.CancelTaskResponse:
    request = pb.CancelTaskRequest(agent_id=agent_id, task_id=task_id)
    return await pb_grpc.AgentServiceStub(channel).CancelTask(request, timeout=30)


async def _refused(channel: grpc.aio.Channel, task_id: str, agent_id: str = "") -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await _cancel(channel, task_id, agent_id)
    return raised.value


def _question(frames: list[E2AResponse]) -> str:
    """The task id of a turn that ended waiting (checked)."""
    final = frames[-1]
    assert final.response_kind == "e2a.input_required" and final.task_id, final.body
    return final.task_id


@pytest.mark.asyncio
async def test_a_waiting_task_is_cancelled_once_and_its_answer_is_refused_after() -> None:
    backend = AskingBackend([QUESTION])
    async with in_process_server(backend=backend) as server, grpc.aio.insecure_channel(server.address) as channel:
        task_id = _question(await _frames(channel, E2AEnvelope(method="chat.send", params={"text": "go"})))
        await within(_cancel(channel, task_id))
        again = await _refused(channel, task_id)
        answer = E2AEnvelope(method="chat.send", task_id=task_id, params={"text": "yes"})
        refused = await _frames(channel, answer)
    assert backend.cancelled_tasks == [task_id, task_id]
    assert again.code() == grpc.StatusCode.NOT_FOUND
    assert status_detail(again, error_details_pb2.ErrorInfo).reason == NO_WAITING_TASK_REASON
    assert refused[-1].body["code"] == ErrorCode.NO_QUESTION_PENDING


@pytest.mark.asyncio
async def test_nothing_waiting_is_not_found_naming_the_task() -> None:
    async with in_process_server() as server, grpc.aio.insecure_channel(server.address) as channel:
        error = await _refused(channel, "task-9")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "'task-9'" in (error.details() or "") and "default agent" in (error.details() or "")
    resource = status_detail(error, error_details_pb2.ResourceInfo)
    assert (resource.resource_type, resource.resource_name) == ("e2a task", "task-9")
    info = status_detail(error, error_details_pb2.ErrorInfo)
    assert (info.reason, dict(info.metadata)) == (NO_WAITING_TASK_REASON, {"agent_id": "", "task_id": "task-9"})


@pytest.mark.asyncio
async def test_an_unknown_agent_is_not_found_as_for_chat() -> None:
    async with (
        in_process_server(agent=["writer=local:echo"]) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        error = await _refused(channel, "task-1", "critic")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert status_detail(error, error_details_pb2.ErrorInfo).reason == UNKNOWN_AGENT_REASON


@pytest.mark.asyncio
async def test_a_cancel_without_task_id_is_invalid_naming_the_field() -> None:
    async with in_process_server() as server, grpc.aio.insecure_channel(server.address) as channel:
        error = await _refused(channel, "")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    violations = status_detail(error, error_details_pb2.BadRequest).field_violations
    assert [violation.field for violation in violations] == ["task_id"]


class _FailingCancel(AskingBackend):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__([QUESTION])
        self.code = code

    async def cancel_task(self, task_id: str) -> bool:
        raise BackendError(self.code, "the agent said no")


@pytest.mark.parametrize(
    ("code", "status"),
    [(ErrorCode.AGENT_UNAVAILABLE, grpc.StatusCode.UNAVAILABLE), (ErrorCode.A2A_AGENT_ERROR, grpc.StatusCode.INTERNAL)],
)
@pytest.mark.asyncio
async def test_an_agent_that_fails_to_cancel_gets_a_status_naming_its_code(
    code: ErrorCode, status: grpc.StatusCode
) -> None:
    async with (
        in_process_server(backend=_FailingCancel(code)) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        error = await _refused(channel, "task-1")
    assert error.code() == status and "the agent said no" in (error.details() or "")
    info = status_detail(error, error_details_pb2.ErrorInfo)
    assert (info.reason, dict(info.metadata)) == (AGENT_ERROR_REASON, {"code": code.value})


@pytest.mark.subprocess  # the upstream's ACP agent
@pytest.mark.asyncio
async def test_a_cancel_through_a_grpc_route_reaches_the_upstreams_acp_agent(tmp_path: Path) -> None:
    events = tmp_path / "agent-events.jsonl"
    acp = AcpBackend([sys.executable, str(AGENT), "--events", str(events)], default_cwd=tmp_path)
    session = f"s-{uuid.uuid4()}"
    async with (
        in_process_server(backend=acp) as upstream,
        in_process_server(agent=[f"up=grpc://{upstream.address}"]) as gateway,
        grpc.aio.insecure_channel(gateway.address) as channel,
    ):
        asking = E2AEnvelope(method="chat.send", agent_id="up", session_id=session, params={"text": "write"})
        task_id = _question(await _frames(channel, asking))
        await within(_cancel(channel, task_id, "up"))
        again = await _refused(channel, task_id, "up")
    records = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    # The agent's question was answered "cancelled", it got session/cancel, and its turn ended.
    assert [record["outcome"] for record in records if record["event"] == "permission"] == [{"outcome": "cancelled"}]
    assert {"cancel", "turn_end"} <= {record["event"] for record in records}
    assert not (tmp_path / "notes.txt").exists()
    # Nothing waits any more: the upstream's NOT_FOUND came back as the gateway's own.
    assert again.code() == grpc.StatusCode.NOT_FOUND
    assert status_detail(again, error_details_pb2.ErrorInfo).reason == NO_WAITING_TASK_REASON
