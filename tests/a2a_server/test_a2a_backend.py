"""The A2A server in front of the a2a backend, which calls a real a2a-sdk agent
(tests/support/agents/a2a_agent.py): A2A to E2A and back. The agent's events reach the client as
events of this server's task, and a cancel reaches the agent as A2A CancelTask."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, Part, Role, StreamResponse, TaskState
from a2a.utils.constants import TransportProtocol
from google.protobuf import json_format, struct_pb2

from e2a_grpc.backends.a2a import A2ABackend
from e2a_grpc.settings import A2A_DEFAULT_TRANSPORTS, A2A_GRPC_BINDING
from tests.a2a_server.conftest import (
    a2a_client,
    a2a_server,
    artifact_text,
    send_request,
    states,
    stream_events,
    streamed_text,
    task_of,
    user_message,
)
from tests.servicer.test_chat_a2a import AGENT_TRANSPORTS, DEFAULT_MAX_MESSAGE_BYTES, Agent, running_agent
from tests.support.processes import free_port

pytestmark = pytest.mark.subprocess  # the a2a-sdk test agent is a real subprocess


def _backend(agent: Agent) -> A2ABackend:
    """The a2a backend on ``agent`` as ``serve --backend a2a`` makes it by default."""
    return A2ABackend(
        agent.url,
        timeout_seconds=30,
        answer_timeout_seconds=30,
        transports=A2A_DEFAULT_TRANSPORTS,
        max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
    )


@pytest.fixture(scope="module", params=AGENT_TRANSPORTS)
def agent(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Agent]:
    with running_agent(free_port(), tmp_path_factory.mktemp("a2a-agent") / "agent.jsonl", request.param) as running:
        yield running


@pytest.mark.asyncio
async def test_the_agents_events_become_events_of_this_servers_task(agent: Agent, transport: str) -> None:
    context_id = str(uuid.uuid4())
    async with (
        a2a_server(_backend(agent)) as server,
        a2a_client(server, transport) as client,
    ):
        events = await stream_events(client, send_request(user_message("hello", context_id)))
    task_id = events[0].task.id
    assert states(events)[0] == "TASK_STATE_SUBMITTED" and states(events)[-1] == "TASK_STATE_COMPLETED"
    assert streamed_text(events) == "Hello, hello"
    updates = [getattr(event, event.WhichOneof("payload") or "") for event in events[1:]]
    assert {(update.task_id, update.context_id) for update in updates} == {(task_id, context_id)}
    # The agent's own working status (with its "thinking" message) is passed on; its final status is
    # not: this task ends with the turn's final frame.
    working = [event.status_update for event in events if event.status_update.status.message.parts]
    assert working[0].status.message.parts[0].text == "thinking"
    assert len(agent.records("request", context_id)) == 1


@pytest.mark.asyncio
async def test_cancel_reaches_the_agent_as_cancel_task(agent: Agent, transport: str) -> None:
    context_id = str(uuid.uuid4())
    async with (
        a2a_server(_backend(agent)) as server,
        a2a_client(server, transport) as client,
    ):
        received: list[StreamResponse] = []
        async for event in client.send_message(send_request(user_message("slow", context_id))):
            received.append(event)
            if len(streamed_text(received).split()) >= 2:
                break
        cancelled = await client.cancel_task(CancelTaskRequest(id=received[0].task.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert agent.wait_for("cancel_called", context_id), "the agent got no CancelTask"


def _readdressed(event: dict[str, Any], task_id: str, context_id: str) -> dict[str, Any]:
    """An agent's StreamResponse JSON as this server's client gets it: the one documented difference is
    that every task and context id is this server's."""
    ids = {"taskId": task_id, "contextId": context_id}

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            renamed = {k: walk(v, k) for k, v in value.items()}
            for name, new in ids.items():
                if name in renamed:
                    renamed[name] = new
            if key == "task":
                renamed["id"] = task_id
            return renamed
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return {branch: walk(payload, branch) for branch, payload in event.items()}


def _client_json(events: list[StreamResponse]) -> list[dict[str, Any]]:
    return [json_format.MessageToDict(event) for event in events]


@pytest.mark.parametrize("script", ["hello", "parts", "fail"])
@pytest.mark.asyncio
async def test_a_streamed_task_reaches_the_client_as_the_agent_sent_it(
    agent: Agent, transport: str, script: str
) -> None:
    context_id = str(uuid.uuid4())
    async with (
        a2a_server(_backend(agent)) as server,
        a2a_client(server, transport) as client,
    ):
        events = await stream_events(client, send_request(user_message(script, context_id)))
    task_id = events[0].task.id
    sent = [_readdressed(event, task_id, context_id) for event in agent.events(context_id)]
    received = _client_json(events)
    # The agent's task snapshot opens the task; the SDK adds nothing to it but this server's ids.
    assert received == sent
    assert states(events)[-1] == ("TASK_STATE_FAILED" if script == "fail" else "TASK_STATE_COMPLETED")


@pytest.mark.asyncio
async def test_a_message_reply_stays_a_message(agent: Agent, transport: str) -> None:
    context_id = str(uuid.uuid4())
    async with a2a_server(_backend(agent)) as server:
        async with a2a_client(server, transport) as client:
            streamed = await stream_events(client, send_request(user_message("reply", context_id)))
        async with a2a_client(server, transport, streaming=False) as client:
            blocking = await stream_events(client, send_request(user_message("reply", context_id)))
    for events in (streamed, blocking):
        assert len(events) == 1 and events[0].HasField("message"), events
        message = events[0].message
        assert (message.context_id, message.task_id, message.parts[0].text) == (context_id, "", "direct: reply")


@pytest.mark.parametrize(
    ("script", "state"), [("ask", "TASK_STATE_INPUT_REQUIRED"), ("login", "TASK_STATE_AUTH_REQUIRED")]
)
@pytest.mark.asyncio
async def test_a_waiting_task_stays_open_and_a_message_on_it_continues_the_agents_task(
    agent: Agent, transport: str, script: str, state: str
) -> None:
    context_id = str(uuid.uuid4())
    async with (
        a2a_server(_backend(agent)) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        waiting = task_of(await stream_events(client, send_request(user_message(script, context_id))))
        assert TaskState.Name(waiting.status.state) == state
        question = waiting.status.message
        assert question.parts[0].text == "what is your name?"
        assert json_format.MessageToDict(question.parts[1].data) == {"expects": "name"}
        answer = user_message("Ada", context_id)
        answer.task_id = waiting.id
        done = task_of(await stream_events(client, send_request(answer)))
        stored = await client.get_task(GetTaskRequest(id=waiting.id))
    assert done.id == waiting.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_text(done) == "hello, Ada"
    assert [m.parts[0].text for m in stored.history if m.role == Role.ROLE_USER] == [script, "Ada"]
    # The answer reached the agent's own waiting task, not a new one.
    requests = agent.records("request", context_id)
    assert len(requests) == 2 and requests[1]["message"]["taskId"] == agent.events(context_id)[0]["task"]["id"]


@pytest.mark.asyncio
async def test_cancel_of_a_waiting_task_reaches_the_agents_task(agent: Agent, transport: str) -> None:
    context_id = str(uuid.uuid4())
    async with (
        a2a_server(_backend(agent)) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        waiting = task_of(await stream_events(client, send_request(user_message("ask", context_id))))
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    called = agent.wait_for("cancel_called", context_id)
    assert called[0]["task_id"] == agent.events(context_id)[0]["task"]["id"]


@pytest.mark.asyncio
async def test_cancel_task_says_whether_the_agents_task_waited(agent: Agent) -> None:
    context_id = str(uuid.uuid4())
    backend = _backend(agent)  # closed with the server
    async with a2a_server(backend) as server, a2a_client(server, TransportProtocol.JSONRPC) as client:
        await stream_events(client, send_request(user_message("ask", context_id)))
        agent_task = agent.events(context_id)[0]["task"]["id"]
        assert await backend.cancel_task(agent_task) is True
        # Over now (the agent says not cancelable), or never the agent's: nothing waits there.
        assert await backend.cancel_task(agent_task) is False
        assert await backend.cancel_task(str(uuid.uuid4())) is False


@pytest.mark.asyncio
async def test_every_part_kind_reaches_the_agent_as_sent(agent: Agent, transport: str) -> None:
    context_id = str(uuid.uuid4())
    message = user_message("see these", context_id)
    message.parts.extend(
        [
            Part(raw=b"\x89PNG\r\n", media_type="image/png", filename="dot.png"),
            Part(raw=bytes(range(8)), media_type="application/octet-stream"),
            Part(url="https://example.com/a.txt", media_type="text/plain", filename="a.txt"),
            Part(data=struct_pb2.Value(string_value="x"), media_type="application/json"),
        ]
    )
    async with (
        a2a_server(
            _backend(agent),
            a2a_input_modes="text/plain,application/json,image/png,application/octet-stream",
        ) as server,
        a2a_client(server, transport) as client,
    ):
        await stream_events(client, send_request(message))
    received = agent.records("request", context_id)[0]["message"]
    assert received["parts"] == json_format.MessageToDict(message)["parts"]


@pytest.mark.asyncio
async def test_every_message_of_a_task_that_waits_more_than_once_is_in_its_history(
    agent: Agent, transport: str
) -> None:
    context_id = str(uuid.uuid4())
    async with (
        a2a_server(_backend(agent)) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        waiting = task_of(await stream_events(client, send_request(user_message("ask", context_id))))
        for text in ("one more", "two more", "Ada"):
            follow_up = user_message(text)  # the task alone names the context
            follow_up.task_id = waiting.id
            last = task_of(await stream_events(client, send_request(follow_up)))
        stored = await client.get_task(GetTaskRequest(id=waiting.id, history_length=10))
    assert last.status.state == TaskState.TASK_STATE_COMPLETED
    assert [m.parts[0].text for m in stored.history if m.role == Role.ROLE_USER] == [
        "ask",
        "one more",
        "two more",
        "Ada",
    ]


@pytest.mark.asyncio
async def test_a_blocking_send_reaches_the_agent_as_a_blocking_send(agent: Agent, transport: str) -> None:
    """The caller waits for the end, so the agent is asked for the end: its task as it ended, the same
    task a blocking client of the agent gets, and no stream of its progress is paid for."""
    context_id = str(uuid.uuid4())

    def calls(method: str) -> int:
        return sum(call["method"].rpartition("/")[2] == method for call in agent.records("grpc_call"))

    streams_before = len(agent.records("sse_opened")) + calls("SendStreamingMessage")
    blocking_before = calls("SendMessage")
    async with (
        a2a_server(_backend(agent)) as server,
        a2a_client(server, transport, streaming=False) as client,
        a2a_client(agent.url, TransportProtocol.JSONRPC, streaming=False) as straight,
    ):
        proxied = task_of(await stream_events(client, send_request(user_message("parts", context_id))))
        direct = task_of(await stream_events(straight, send_request(user_message("parts"))))
    assert len(agent.records("sse_opened")) + calls("SendStreamingMessage") == streams_before
    if agent.transport == A2A_GRPC_BINDING:  # the proxied send, over gRPC (the direct one is JSON-RPC's)
        assert calls("SendMessage") == blocking_before + 1
    assert proxied.status.state == direct.status.state == TaskState.TASK_STATE_COMPLETED
    assert list(proxied.artifacts) == list(direct.artifacts)
    assert proxied.metadata == direct.metadata
