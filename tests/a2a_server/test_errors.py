"""Refusals and their A2A error codes: the official client raises the SDK's error class on every
transport, and a raw JSON-RPC call shows the code and data of the one table (``a2a_server.errors``)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, TaskState
from a2a.utils.errors import (
    JSON_RPC_ERROR_CODE_MAP,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from google.protobuf import json_format

from e2a_grpc.a2a_server.errors import A2A_ERRORS, FrontDoorError
from e2a_grpc.chat.events import BackendError
from e2a_grpc.model import ErrorCode
from tests.a2a_server.conftest import a2a_client, a2a_server, send_request, stream_events, task_of, user_message
from tests.support.a2a_errors import json_rpc_code
from tests.support.fakes import ControlledBackend

TIMEOUT = 20.0


def jsonrpc_send(message: dict[str, Any], **configuration: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "SendMessage",
        "params": {"message": message, "configuration": configuration},
    }


def text_message(text: str) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}


async def jsonrpc_call(port: int, body: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        reply = await http.post(f"http://127.0.0.1:{port}/", json=body, headers={"A2A-Version": "1.0"})
    answer: dict[str, Any] = reply.json()
    return answer


async def jsonrpc_error(port: int, body: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = (await jsonrpc_call(port, body))["error"]
    return error


def reason_of(error: dict[str, Any]) -> str:
    """The E2A reason in the JSON-RPC error's data (an ErrorInfo's metadata)."""
    (info,) = [detail for detail in error["data"] if detail.get("@type", "").endswith("ErrorInfo")]
    reason: str = info["metadata"]["reason"]
    return reason


def test_every_table_entry_has_a_json_rpc_code() -> None:
    assert json_rpc_code(FrontDoorError.OUTPUT_MODE_UNSUPPORTED) == -32005
    assert json_rpc_code(ErrorCode.INVALID_REQUEST) == -32602
    for error_class, _ in A2A_ERRORS.values():
        assert error_class in JSON_RPC_ERROR_CODE_MAP


@pytest.mark.asyncio
async def test_unknown_task(transport: str) -> None:
    async with a2a_server() as server, a2a_client(server, transport) as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(CancelTaskRequest(id="no-such-task"))
        error = await jsonrpc_error(
            server.port, {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "no-such-task"}}
        )
    assert error["code"] == JSON_RPC_ERROR_CODE_MAP[TaskNotFoundError] == -32001


@pytest.mark.asyncio
async def test_cancelling_a_finished_task(transport: str) -> None:
    async with a2a_server() as server, a2a_client(server, transport, streaming=False) as client:
        task = task_of(await stream_events(client, send_request(user_message("done"))))
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task.id))
        error = await jsonrpc_error(
            server.port, {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": task.id}}
        )
    assert error["code"] == -32002


@pytest.mark.asyncio
async def test_unsupported_output_mode(transport: str) -> None:
    async with (
        a2a_server() as server,
        a2a_client(server, transport, output_modes=("image/png",)) as client,
    ):
        with pytest.raises(ContentTypeNotSupportedError):
            await stream_events(client, send_request(user_message("hello")))
        error = await jsonrpc_error(server.port, jsonrpc_send(text_message("hello"), acceptedOutputModes=["image/png"]))
        accepted = await jsonrpc_call(server.port, jsonrpc_send(text_message("hello"), acceptedOutputModes=["text/*"]))
    assert error["code"] == json_rpc_code(FrontDoorError.OUTPUT_MODE_UNSUPPORTED) == -32005
    assert reason_of(error) == FrontDoorError.OUTPUT_MODE_UNSUPPORTED
    assert accepted["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.asyncio
async def test_unsupported_input_mode_is_the_sdks_check(transport: str) -> None:
    async with a2a_server(a2a_input_modes="text/plain") as server, a2a_client(server, transport) as client:
        message = user_message("hi")
        message.parts[0].media_type = "image/png"
        with pytest.raises(ContentTypeNotSupportedError):
            await stream_events(client, send_request(message))


@pytest.mark.asyncio
async def test_capacity_exhausted_is_retryable_and_names_the_limit(transport: str) -> None:
    backend = ControlledBackend()
    async with (
        a2a_server(backend, a2a_max_running_tasks=1) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        running = task_of(await stream_events(client, send_request(user_message("one"), return_immediately=True)))
        await asyncio.wait_for(backend.waiting_turns(1), TIMEOUT)
        with pytest.raises(InternalError, match="retry later"):
            await stream_events(client, send_request(user_message("two")))
        error = await jsonrpc_error(server.port, jsonrpc_send(text_message("three")))
        backend.release.set()
        done = await client.get_task(GetTaskRequest(id=running.id))
    assert done.id == running.id
    assert error["code"] == json_rpc_code(FrontDoorError.CAPACITY_EXHAUSTED) == -32603
    (info,) = error["data"]
    assert info["metadata"] == {"reason": "capacity_exhausted", "retryable": True, "limit": 1}


@pytest.mark.asyncio
async def test_a_slot_is_free_again_once_its_turn_ended(transport: str) -> None:
    async with a2a_server(a2a_max_running_tasks=1) as server, a2a_client(server, transport, streaming=False) as client:
        for text in ("one", "two", "three"):
            task_of(await stream_events(client, send_request(user_message(text))))
        assert server.executor.slots.running == 0


@pytest.mark.parametrize(
    "part",
    [
        pytest.param({"url": ""}, id="empty-url-no-text"),
    ],
)
@pytest.mark.asyncio
async def test_invalid_params(transport: str, part: dict[str, Any]) -> None:
    async with a2a_server() as server, a2a_client(server, transport) as client:
        with pytest.raises(InvalidParamsError) as raised:
            await stream_events(client, send_request(user_message("", **part)))
        assert "message.parts" in str(raised.value)
        error = await jsonrpc_error(
            server.port, jsonrpc_send({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": ""}]})
        )
    assert error["code"] == json_rpc_code(ErrorCode.INVALID_REQUEST) == -32602
    assert reason_of(error) == ErrorCode.INVALID_REQUEST


@pytest.mark.asyncio
async def test_prompt_too_large(transport: str) -> None:
    async with a2a_server(chat_max_prompt_bytes=8) as server, a2a_client(server, transport) as client:
        with pytest.raises(InvalidParamsError, match="at most 8"):
            await stream_events(client, send_request(user_message("nine bytes")))


@pytest.mark.asyncio
async def test_a_backend_error_fails_the_task_with_the_e2a_code(transport: str) -> None:
    backend = ControlledBackend(error=BackendError(ErrorCode.AGENT_CRASHED, "the agent exited"))
    backend.release.set()
    async with a2a_server(backend) as server, a2a_client(server, transport) as client:
        events = await stream_events(client, send_request(user_message("x")))
    final = events[-1].status_update
    assert final.status.state == TaskState.TASK_STATE_FAILED
    assert final.status.message.parts[0].text == "the agent exited"
    assert json_format.MessageToDict(final.metadata)["e2a_error"]["code"] == ErrorCode.AGENT_CRASHED


@pytest.mark.asyncio
async def test_the_grpc_transport_keeps_to_max_message_bytes() -> None:
    request = send_request(user_message("x" * 100_000))
    async with (
        a2a_server(max_message_bytes=64 * 1024) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
    ):
        stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.SendMessage(request, timeout=TIMEOUT)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
