"""A2A-Version on every transport (``a2a_server.versions``) and the spec's gRPC statuses
(``errors.SPEC_GRPC_STATUS``): where a2a-sdk 1.3 served an unsupported version (gRPC), took any minor
version, or gave FAILED_PRECONDITION for what the spec says is UNIMPLEMENTED."""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import SendMessageRequest, TaskPushNotificationConfig, TaskState
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import PushNotificationNotSupportedError
from a2a.utils.grpc_status import status_from_call
from google.rpc import error_details_pb2

from e2a_grpc.a2a_server.errors import FrontDoorError
from e2a_grpc.a2a_server.versions import major_minor, version_refusal
from e2a_grpc.settings import A2A_REST_PATH
from tests.a2a_server.conftest import a2a_client, a2a_server, user_message
from tests.a2a_server.test_errors import jsonrpc_send, reason_of, text_message
from tests.support.a2a_errors import json_rpc_code

TIMEOUT = 20.0


def test_a_version_is_its_major_minor() -> None:
    assert [major_minor(v) for v in ("1.0", " 1.0.7 ", "0.3", "01.0", "1", "1.x", "", "v1.0")] == [
        "1.0",
        "1.0",
        "0.3",
        "1.0",
        None,
        None,
        None,
        None,
    ]
    assert major_minor("\u0661.0") is None  # a digit, but not an ASCII one
    assert version_refusal("1.0.2", ("1.0",)) is None
    assert version_refusal(None, ("0.3",)) is None  # none is 0.3
    refusal = version_refusal("", ("1.0",))
    assert refusal is not None and "without A2A-Version" in refusal.message


async def _post(port: int, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(f"http://127.0.0.1:{port}{path}", json=body, headers=headers)


@pytest.mark.parametrize("version", ["99.0", "1.1", "2.0", "one"])
@pytest.mark.asyncio
async def test_json_rpc_refuses_a_version_it_does_not_speak(version: str) -> None:
    async with a2a_server() as server:
        reply = await _post(server.port, "/", jsonrpc_send(text_message("hi")), **{"A2A-Version": version})
    answer = reply.json()
    assert reply.status_code == 200 and answer["id"] == 7
    assert answer["error"]["code"] == json_rpc_code(FrontDoorError.VERSION_UNSUPPORTED) == -32009
    assert reason_of(answer["error"]) == "version_unsupported"
    assert f"{version!r} is not supported" in answer["error"]["message"]


@pytest.mark.asyncio
async def test_a_0_3_request_naming_an_unknown_version_gets_version_not_supported() -> None:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "kind": "message",
        "parts": [{"kind": "text", "text": "hi"}],
    }
    body = {"jsonrpc": "2.0", "id": "a", "method": "message/send", "params": {"message": message}}
    async with a2a_server() as server:
        refused = (await _post(server.port, "/", body, **{"A2A-Version": "99.0"})).json()
        served = (await _post(server.port, "/", body, **{"A2A-Version": "0.3"})).json()
    # The SDK's 0.3 adapter answered -32603 Internal error.
    assert refused["id"] == "a" and refused["error"]["code"] == -32009
    assert served["result"]["status"]["state"] == "completed"


@pytest.mark.asyncio
async def test_the_version_may_be_a_query_parameter() -> None:
    async with a2a_server() as server:
        served = (await _post(server.port, "/?A2A-Version=1.0", jsonrpc_send(text_message("hi")))).json()
        refused = [
            (await _post(server.port, f"/?a2a-version={version}", jsonrpc_send(text_message("hi")))).json()
            for version in ("99.0", "%E2%82%AC", "%D9%A1.0")  # the euro sign; an Arabic-Indic digit one
        ]
    assert served["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [answer["error"]["code"] for answer in refused] == [-32009] * 3


@pytest.mark.asyncio
async def test_http_json_refuses_a_version_it_does_not_speak() -> None:
    async with a2a_server() as server:
        reply = await _post(
            server.port, f"{A2A_REST_PATH}/message:send", {"message": text_message("hi")}, **{"A2A-Version": "99.0"}
        )
    error = reply.json()["error"]
    assert reply.status_code == 400 and reply.headers["content-type"] == "application/json"
    # AIP-193's status is the gRPC code: the spec's UNIMPLEMENTED, not the SDK's FAILED_PRECONDITION.
    assert (error["code"], error["status"]) == (400, "UNIMPLEMENTED")
    (info,) = error["details"]
    assert info["reason"] == "VERSION_NOT_SUPPORTED"
    assert info["metadata"] == {
        "reason": "version_unsupported",
        "retryable": False,
        "requested": "99.0",
        "supported": ["1.0", "0.3"],
    }


def _error_reason(error: grpc.aio.AioRpcError) -> str:
    status = status_from_call(error)
    assert status is not None and status.code == error.code().value[0]
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.domain == "a2a-protocol.org"
    reason: str = info.reason
    return reason


async def _grpc_send(port: int, metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    request = SendMessageRequest(message=user_message("hi"))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        try:
            reply = await stub.SendMessage(request, metadata=metadata, timeout=TIMEOUT)
        except grpc.aio.AioRpcError as error:
            assert _error_reason(error) == "VERSION_NOT_SUPPORTED"
            code: grpc.StatusCode = error.code()
            return code
    assert reply.task.status.state == TaskState.TASK_STATE_COMPLETED
    return grpc.StatusCode.OK


@pytest.mark.asyncio
async def test_grpc_checks_the_a2a_version_metadata() -> None:
    async with a2a_server() as server:
        assert server.grpc_port is not None
        codes = {
            version: await _grpc_send(server.grpc_port, (("a2a-version", version),) if version else ())
            for version in ("99.0", "1.1", "0.3", "", "1.0", "1.0.4")
        }
    # The SDK served every one of them; no version is 0.3, which its gRPC service is not.
    unimplemented = grpc.StatusCode.UNIMPLEMENTED
    assert codes == {
        "99.0": unimplemented,
        "1.1": unimplemented,
        "0.3": unimplemented,
        "": unimplemented,
        "1.0": grpc.StatusCode.OK,
        "1.0.4": grpc.StatusCode.OK,
    }


@pytest.mark.asyncio
async def test_grpc_push_notification_not_supported_is_unimplemented() -> None:
    config = TaskPushNotificationConfig(task_id="some-task", url="http://127.0.0.1:1/hook")
    async with a2a_server() as server:
        assert server.grpc_port is not None
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.CreateTaskPushNotificationConfig(config, metadata=(("a2a-version", "1.0"),), timeout=TIMEOUT)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED  # the SDK: FAILED_PRECONDITION
        assert _error_reason(caught.value) == "PUSH_NOTIFICATION_NOT_SUPPORTED"
        # The official client still reads it as the A2A error it is.
        async with a2a_client(server, TransportProtocol.GRPC) as client:
            with pytest.raises(PushNotificationNotSupportedError):
                await client.create_task_push_notification_config(config)
