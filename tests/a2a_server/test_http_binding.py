"""The HTTP bindings' media types (``a2a_server.http_binding``): a request body that is not JSON gets
ContentTypeNotSupportedError (a2a-sdk 1.3: -32700 ParseError, or served), and HTTP+JSON answers are
``application/json`` (a2a-sdk 1.3: ``application/a2a+json``)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from e2a_grpc.a2a_server.errors import FrontDoorError
from e2a_grpc.settings import A2A_REST_PATH
from tests.a2a_server.conftest import a2a_server
from tests.a2a_server.test_errors import jsonrpc_send, reason_of, text_message
from tests.support.a2a_errors import json_rpc_code

TIMEOUT = 20.0
VERSION = {"A2A-Version": "1.0"}


def _streaming_send(message: dict[str, Any]) -> dict[str, Any]:
    return {**jsonrpc_send(message), "method": "SendStreamingMessage"}


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
async def test_json_rpc_refuses_a_body_that_is_not_json(method: str) -> None:
    request = {**jsonrpc_send(text_message("hi")), "method": method}
    async with a2a_server() as server, httpx.AsyncClient(timeout=TIMEOUT) as http:
        url = f"http://127.0.0.1:{server.port}/"
        # As a Python repr (not JSON) and as JSON, each labelled text/plain.
        answers = [
            await http.post(url, content=body, headers={**VERSION, "Content-Type": "text/plain"})
            for body in (str(request).encode(), json.dumps(request).encode())
        ]
        # The same connection serves the next request.
        served = await http.post(url, json=jsonrpc_send(text_message("hi")), headers=VERSION)
    for reply in answers:
        assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
        error = reply.json()["error"]
        assert error["code"] == json_rpc_code(FrontDoorError.REQUEST_MEDIA_TYPE_UNSUPPORTED) == -32005
        assert reason_of(error) == "request_media_type_unsupported"
        assert "send Content-Type: application/json" in error["message"]
    assert [reply.json()["id"] for reply in answers] == [None, 7]
    assert served.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.asyncio
@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "Application/JSON", None])
async def test_json_rpc_reads_json_and_a_body_without_a_type(content_type: str | None) -> None:
    headers = {**VERSION, **({"Content-Type": content_type} if content_type else {})}
    async with a2a_server() as server, httpx.AsyncClient(timeout=TIMEOUT) as http:
        reply = await http.post(
            f"http://127.0.0.1:{server.port}/", content=json.dumps(jsonrpc_send(text_message("hi"))), headers=headers
        )
    assert reply.request.headers.get("content-type") == content_type
    assert reply.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.asyncio
async def test_a_streamed_part_of_an_unsupported_media_type_is_content_type_not_supported() -> None:
    message = {**text_message("hi"), "parts": [{"text": "<a/>", "mediaType": "application/xml"}]}
    async with a2a_server() as server, httpx.AsyncClient(timeout=TIMEOUT) as http:
        reply = await http.post(f"http://127.0.0.1:{server.port}/", json=_streaming_send(message), headers=VERSION)
    error = reply.json()["error"]
    assert error["code"] == -32005 and "application/xml is not supported" in error["message"]


@pytest.mark.asyncio
async def test_http_json_refuses_a_body_that_is_not_json_with_415() -> None:
    body = json.dumps({"message": text_message("hi")})
    async with a2a_server() as server, httpx.AsyncClient(timeout=TIMEOUT) as http:
        url = f"http://127.0.0.1:{server.port}{A2A_REST_PATH}/message:send"
        refused = await http.post(url, content=body, headers={**VERSION, "Content-Type": "text/plain"})
        # The media type the spec registers for HTTP+JSON is read too.
        served = await http.post(url, content=body, headers={**VERSION, "Content-Type": "application/a2a+json"})
    assert refused.status_code == 415 and refused.headers["content-type"] == "application/json"
    error = refused.json()["error"]
    assert (error["code"], error["status"]) == (415, "INVALID_ARGUMENT")
    (info,) = error["details"]
    assert info["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert info["metadata"] == {
        "reason": "request_media_type_unsupported",
        "retryable": False,
        "contentType": "text/plain",
    }
    assert served.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.asyncio
async def test_http_json_answers_are_application_json_and_streams_event_streams() -> None:
    async with a2a_server() as server, httpx.AsyncClient(timeout=TIMEOUT) as http:
        base = f"http://127.0.0.1:{server.port}{A2A_REST_PATH}"
        sent = await http.post(f"{base}/message:send", json={"message": text_message("hi")}, headers=VERSION)
        task_id = sent.json()["task"]["id"]
        got = await http.get(f"{base}/tasks/{task_id}", headers=VERSION)
        listed = await http.get(f"{base}/tasks", headers=VERSION)
        missing = await http.get(f"{base}/tasks/no-such-task", headers=VERSION)
        async with http.stream(
            "POST", f"{base}/message:stream", json={"message": text_message("hi")}, headers=VERSION
        ) as streamed:
            stream_type = streamed.headers["content-type"]
            events = [line async for line in streamed.aiter_lines() if line.startswith("data:")]
    assert [reply.status_code for reply in (sent, got, listed, missing)] == [200, 200, 200, 404]
    assert {reply.headers["content-type"] for reply in (sent, got, listed, missing)} == {"application/json"}
    assert got.json()["id"] == task_id
    assert stream_type.startswith("text/event-stream") and events


async def _rest(http: httpx.AsyncClient, port: int, method: str, path: str, body: Any = None) -> httpx.Response:
    return await http.request(
        method, f"http://127.0.0.1:{port}{A2A_REST_PATH}{path}", json=body, headers={**VERSION, **_JSON}
    )


_JSON = {"Content-Type": "application/json"}


@pytest.mark.asyncio
async def test_http_json_errors_have_the_specs_http_status() -> None:
    """a2a-sdk 1.3 answers these 400, 400 and 400 with status FAILED_PRECONDITION (spec 5.4: 415, 409,
    and 400 UNIMPLEMENTED)."""
    part = {"raw": "AAE=", "mediaType": "application/x-unknown"}
    async with a2a_server() as server, httpx.AsyncClient(timeout=TIMEOUT) as http:
        unsupported = await _rest(
            http, server.port, "POST", "/message:send", {"message": {**text_message("hi"), "parts": [part]}}
        )
        done = await _rest(http, server.port, "POST", "/message:send", {"message": text_message("hi")})
        task_id = done.json()["task"]["id"]
        not_cancelable = await _rest(http, server.port, "POST", f"/tasks/{task_id}:cancel")
        not_found = await _rest(http, server.port, "GET", "/tasks/no-such-task")
        no_push = await _rest(
            http, server.port, "POST", f"/tasks/{task_id}/pushNotificationConfigs", {"url": "https://example.com/h"}
        )
    answers = [
        (reply.status_code, reply.json()["error"]) for reply in (unsupported, not_cancelable, not_found, no_push)
    ]
    assert [(status, error["code"], error["status"]) for status, error in answers] == [
        (415, 415, "INVALID_ARGUMENT"),
        (409, 409, "FAILED_PRECONDITION"),
        (404, 404, "NOT_FOUND"),
        (400, 400, "UNIMPLEMENTED"),
    ]
    for reply in (unsupported, not_cancelable, no_push):
        assert reply.headers["content-type"] == "application/json"
        assert int(reply.headers["content-length"]) == len(reply.content)
