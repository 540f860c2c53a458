"""The A2A HTTP transports keep to ``--max-message-bytes`` as the gRPC ports do: a body over it gets
HTTP 413 with the transport's error body, before the server reads it (Content-Length) or as soon as
it passes the limit (chunked), and a body within it is served as before, chunked or not."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import TaskState
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import InvalidRequestError

from e2a_grpc.a2a_server.errors import FrontDoorError
from e2a_grpc.settings import A2A_REST_PATH
from tests.a2a_server.conftest import a2a_client, a2a_server, send_request, stream_events, user_message
from tests.support.a2a_errors import json_rpc_code

LIMIT = 64 * 1024
TIMEOUT = 20.0
pytestmark = pytest.mark.asyncio


def _send_body(text: str) -> bytes:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": message}}).encode()


def _error_info(details: list[dict[str, Any]]) -> dict[str, Any]:
    (info,) = [detail for detail in details if detail.get("@type", "").endswith("ErrorInfo")]
    return info


async def _raw_request(port: int, head: bytes, body_part: bytes) -> tuple[int, dict[str, bytes], dict[str, Any]]:
    """Send ``head`` and the start of a body, never the rest; the response the server gives meanwhile."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + body_part)
        await writer.drain()
        async with asyncio.timeout(TIMEOUT):
            status_line = await reader.readline()
            headers: dict[str, bytes] = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                headers[name.strip().lower().decode()] = value.strip()
            body = await reader.readexactly(int(headers["content-length"]))
    finally:
        writer.close()
    return int(status_line.split()[1]), headers, json.loads(body)


def _head(path: str, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", "A2A-Version: 1.0"]
    return ("\r\n".join([*lines, *headers]) + "\r\n\r\n").encode()


@pytest.mark.parametrize("path", ["/", f"{A2A_REST_PATH}/message:send"], ids=["jsonrpc", "http-json"])
async def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(path: str) -> None:
    async with a2a_server(max_message_bytes=LIMIT) as server:
        status, headers, answer = await _raw_request(
            server.port, _head(path, f"Content-Length: {100 * LIMIT}"), b'{"jsonrpc": "2.0"'
        )
    assert status == 413 and headers["connection"] == b"close"
    if path == "/":
        assert answer["id"] is None and answer["error"]["code"] == json_rpc_code(FrontDoorError.REQUEST_TOO_LARGE)
        assert answer["error"]["code"] == -32600
        info = _error_info(answer["error"]["data"])
    else:
        assert (answer["error"]["code"], answer["error"]["status"]) == (413, "INVALID_ARGUMENT")
        info = _error_info(answer["error"]["details"])
    assert f"limit of {LIMIT} bytes" in json.dumps(answer)
    assert info["metadata"] == {
        "reason": "request_too_large",
        "retryable": False,
        "maxMessageBytes": LIMIT,
        "contentLength": 100 * LIMIT,
    }


@pytest.mark.parametrize("path", ["/", f"{A2A_REST_PATH}/message:send"], ids=["jsonrpc", "http-json"])
async def test_a_chunked_body_is_refused_once_it_passes_the_limit(path: str) -> None:
    chunk = b"x" * (LIMIT // 4)
    over = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(5))  # no last chunk: never ends
    async with a2a_server(max_message_bytes=LIMIT) as server:
        status, _, answer = await _raw_request(server.port, _head(path, "Transfer-Encoding: chunked"), over)
    assert status == 413
    details = answer["error"]["data"] if path == "/" else answer["error"]["details"]
    assert _error_info(details)["metadata"] == {
        "reason": "request_too_large",
        "retryable": False,
        "maxMessageBytes": LIMIT,
    }


async def test_a_chunked_body_within_the_limit_is_served() -> None:
    body = _send_body("hello chunked")

    async def chunks() -> Any:
        for start in range(0, len(body), 7):
            yield body[start : start + 7]

    async with a2a_server(max_message_bytes=LIMIT) as server, httpx.AsyncClient(timeout=TIMEOUT) as http:
        reply = await http.post(
            f"http://127.0.0.1:{server.port}/",
            content=chunks(),
            headers={"A2A-Version": "1.0", "Content-Type": "application/json"},
        )
    assert reply.request.headers["transfer-encoding"] == "chunked"
    assert reply.status_code == 200
    task = reply.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_sdk_client_on_http_json_gets_invalid_request_naming_the_limit() -> None:
    async with (
        a2a_server(max_message_bytes=LIMIT) as server,
        a2a_client(server, TransportProtocol.HTTP_JSON) as client,
    ):
        with pytest.raises(InvalidRequestError, match=f"limit of {LIMIT} bytes") as caught:
            await stream_events(client, send_request(user_message("x" * 2 * LIMIT)))
        assert isinstance(caught.value.data, dict) and caught.value.data["reason"] == "request_too_large"
        # Within the limit, the same client is served.
        events = await stream_events(client, send_request(user_message("x" * (LIMIT // 2))))
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_the_sdk_client_on_json_rpc_sees_http_413() -> None:
    async with a2a_server(max_message_bytes=LIMIT) as server, a2a_client(server, TransportProtocol.JSONRPC) as client:
        # The SDK's JSON-RPC client raises on the HTTP status before it reads the error body.
        with pytest.raises(A2AClientError, match="413"):
            await stream_events(client, send_request(user_message("x" * 2 * LIMIT)))
