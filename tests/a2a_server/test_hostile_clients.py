"""The A2A HTTP port against hostile clients: slow headers and bodies get 408 and are closed, connections
past the cap get 503 at once, JSON nested past ``jsontext.MAX_DEPTH`` is refused before any parser
recurses on it (a2a-sdk 1.3: -32603 "maximum recursion depth exceeded"), and a client that goes away
mid-request is a DEBUG line, not an ERROR traceback (a2a-sdk 1.3: "Unhandled exception")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import pytest
import uvloop

from e2a_grpc.a2a_server.errors import FrontDoorError
from e2a_grpc.jsontext import MAX_DEPTH
from e2a_grpc.settings import A2A_CARD_PATH, A2A_REST_PATH
from tests.a2a_server.conftest import a2a_server
from tests.a2a_server.test_errors import jsonrpc_send, text_message
from tests.support.a2a_errors import json_rpc_code
from tests.support.log_records import log_records

#: Bounds every read of an answer: far longer than the timeouts the tests set.
TIMEOUT = 20.0
#: The header and body timeouts the tests give the server.
SHORT = 0.3
REST_SEND = f"{A2A_REST_PATH}/message:send"
DEEP = 100_000


def _head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _post(path: str, body: bytes) -> bytes:
    return _head("POST", path, "Content-Type: application/json", "A2A-Version: 1.0", f"Content-Length: {len(body)}") + (
        body
    )


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One HTTP response: status, headers (lower-case names), body."""
    async with asyncio.timeout(TIMEOUT):
        status_line = await reader.readline()
        assert status_line, "the server closed the connection without an answer"
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers["content-length"]))
    return int(status_line.split()[1]), headers, body


async def _closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closes the connection (with nothing more to read) before TIMEOUT."""
    async with asyncio.timeout(TIMEOUT):
        return await reader.read() == b""


@contextlib.asynccontextmanager
async def _connection(port: int) -> Any:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def _error_metadata(path: str, answer: dict[str, Any]) -> dict[str, Any]:
    details = answer["error"]["details"] if path.startswith(A2A_REST_PATH) else answer["error"]["data"]
    (info,) = [detail for detail in details if detail.get("@type", "").endswith("ErrorInfo")]
    metadata: dict[str, Any] = info["metadata"]
    return metadata


# --- slow clients ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_connections_that_send_no_headers_or_trickle_them_get_408_and_are_closed() -> None:
    await _silent_and_trickling_connections_get_408()


async def _silent_and_trickling_connections_get_408() -> None:
    async with (
        a2a_server(a2a_header_timeout_seconds=SHORT) as server,
        _connection(server.port) as (silent, _),
        _connection(server.port) as (trickling, trickle),
    ):
        trickle.write(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and no more
        for reader in (silent, trickling):
            status, headers, body = await _response(reader)
            assert (status, headers["connection"]) == (408, "close")
            assert f"within {SHORT:g} s (--a2a-header-timeout-seconds)" in body.decode()
            assert await _closed(reader)


@pytest.mark.asyncio
async def test_the_header_timeout_applies_to_each_request_of_a_kept_alive_connection() -> None:
    async with a2a_server(a2a_header_timeout_seconds=SHORT) as server, _connection(server.port) as (reader, writer):
        writer.write(_head("GET", A2A_CARD_PATH))
        status, _, _ = await _response(reader)
        assert status == 200
        # The next request's first bytes, then nothing: uvicorn's keep-alive timer (5 s) no longer runs.
        writer.write(b"GET / HTTP/1.1\r\n")
        status, _, _ = await _response(reader)
        assert status == 408 and await _closed(reader)


@pytest.mark.parametrize("path", ["/", REST_SEND], ids=["jsonrpc", "http-json"])
@pytest.mark.asyncio
async def test_a_body_slower_than_its_timeout_gets_408_in_the_transports_error_body(path: str) -> None:
    # The header timeout is shorter than the body's: it stops once the headers are in.
    async with (
        a2a_server(a2a_header_timeout_seconds=SHORT / 3, a2a_body_timeout_seconds=SHORT) as server,
        _connection(server.port) as (reader, writer),
    ):
        body = json.dumps(jsonrpc_send(text_message("hi"))).encode()
        writer.write(_post(path, body)[: -len(body) // 2])  # half the body, then nothing
        status, headers, answer_bytes = await _response(reader)
        assert (status, headers["connection"]) == (408, "close")
        assert await _closed(reader)
    answer = json.loads(answer_bytes)
    if path == "/":
        assert answer["id"] is None
        assert answer["error"]["code"] == json_rpc_code(FrontDoorError.REQUEST_BODY_TIMEOUT) == -32600
    else:
        assert (answer["error"]["code"], answer["error"]["status"]) == (408, "INVALID_ARGUMENT")
    assert f"did not arrive within {SHORT:g} s" in answer["error"]["message"]
    assert _error_metadata(path, answer) == {
        "reason": "request_body_timeout",
        "retryable": True,
        "bodyTimeoutSeconds": SHORT,
    }


@pytest.mark.asyncio
async def test_connections_past_the_cap_get_503_at_once_and_are_served_again_below_it() -> None:
    await _connections_past_the_cap_get_503()


def test_on_uvloop_too_the_header_timeout_and_the_cap_hold() -> None:
    # serve's default loop, whose transports are not asyncio's classes.
    uvloop.run(_silent_and_trickling_connections_get_408())
    uvloop.run(_connections_past_the_cap_get_503())


async def _connections_past_the_cap_get_503() -> None:
    warned = "new connections get 503"
    with log_records() as logs:
        async with (
            a2a_server(a2a_max_connections=2) as server,
            _connection(server.port) as (first, first_writer),
            _connection(server.port) as (second, second_writer),
        ):
            # Served: both are open and counted.
            for reader, writer in ((first, first_writer), (second, second_writer)):
                writer.write(_head("GET", A2A_CARD_PATH))
                assert (await _response(reader))[0] == 200
            for _ in range(3):
                async with _connection(server.port) as (refused, _):
                    status, headers, body = await _response(refused)
                    assert (status, headers["connection"]) == (503, "close")
                    assert "2 connections open (--a2a-max-connections)" in body.decode()
                    assert await _closed(refused)
            # One closes (the server closes it after its answer); a next connection is served once the
            # server has seen it go, within a bounded number of tries.
            first_writer.write(_head("GET", A2A_CARD_PATH, "Connection: close"))
            assert (await _response(first))[0] == 200 and await _closed(first)
            statuses = []
            for _ in range(100):
                async with _connection(server.port) as (reader, writer):
                    writer.write(_head("GET", A2A_CARD_PATH))
                    statuses.append((await _response(reader))[0])
                if statuses[-1] == 200:
                    break
            assert statuses[-1] == 200 and set(statuses) <= {200, 503}
    warnings = [line for line in logs.at_least(logging.WARNING) if warned in line]
    assert len(warnings) == 1, warnings
    assert any(
        f"accepting connections again ({3 + statuses.count(503)} refused" in line
        for line in logs.at_least(logging.INFO)
    )


# --- deep JSON ------------------------------------------------------------------------------------


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _message(metadata: str | None = None) -> str:
    message = json.dumps(text_message("hi"))
    return message if metadata is None else message[:-1] + f', "metadata": {{"x": {metadata}}}}}'


_JSONRPC_ENVELOPE = '{"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": %s}'
_DEEP_BODIES = {
    "jsonrpc-top-level": ("/", _deep(DEEP)),
    "jsonrpc-params": ("/", _JSONRPC_ENVELOPE % _deep(DEEP)),
    "jsonrpc-metadata": ("/", _JSONRPC_ENVELOPE % f'{{"message": {_message(_deep(DEEP))}}}'),
    "http-json-top-level": (REST_SEND, _deep(DEEP)),
    "http-json-params": (REST_SEND, f'{{"message": {_deep(DEEP)}}}'),
    "http-json-metadata": (REST_SEND, f'{{"message": {_message(_deep(DEEP))}}}'),
}


@pytest.mark.parametrize(("path", "body"), list(_DEEP_BODIES.values()), ids=list(_DEEP_BODIES))
@pytest.mark.asyncio
async def test_json_nested_past_the_limit_is_an_invalid_request_before_any_parse(path: str, body: str) -> None:
    with log_records() as logs:
        async with a2a_server() as server, _connection(server.port) as (reader, writer):
            writer.write(_post(path, body.encode()))
            status, _, answer_bytes = await _response(reader)
            # The connection serves the next request: the body was read whole.
            writer.write(_post("/", json.dumps(jsonrpc_send(text_message("next"))).encode()))
            next_status, _, next_answer = await _response(reader)
    answer = json.loads(answer_bytes)
    if path == "/":
        assert status == 200 and answer["id"] is None
        assert answer["error"]["code"] == json_rpc_code(FrontDoorError.REQUEST_TOO_DEEP) == -32600
    else:  # the SDK's answer to a body it cannot parse
        assert (status, answer["error"]["code"], answer["error"]["status"]) == (400, 400, "INVALID_ARGUMENT")
    assert f"JSON nesting deeper than {MAX_DEPTH} levels" in answer["error"]["message"]
    assert _error_metadata(path, answer) == {"reason": "request_too_deep", "retryable": False, "maxDepth": MAX_DEPTH}
    assert next_status == 200 and json.loads(next_answer)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not [line for line in logs.at_least(logging.ERROR)], logs.at_least(logging.ERROR)


@pytest.mark.parametrize("path", ["/", REST_SEND], ids=["jsonrpc", "http-json"])
@pytest.mark.asyncio
async def test_metadata_at_the_depth_limit_reaches_the_sdk_which_refuses_it_as_params(path: str) -> None:
    # Within MAX_DEPTH over the whole body: the SDK parses it and protobuf's own depth limit (100) speaks.
    inner = _deep(MAX_DEPTH - 10)
    body = (
        _JSONRPC_ENVELOPE % f'{{"message": {_message(inner)}}}' if path == "/" else f'{{"message": {_message(inner)}}}'
    )
    async with a2a_server() as server, _connection(server.port) as (reader, writer):
        writer.write(_post(path, body.encode()))
        status, _, answer_bytes = await _response(reader)
    error = json.loads(answer_bytes)["error"]
    assert "too deep" in json.dumps(error)
    if path == "/":
        assert status == 200 and error["code"] == -32602
    else:
        assert status == 400 and error["status"] == "INVALID_ARGUMENT"


# --- clients that go away -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", REST_SEND], ids=["jsonrpc", "http-json"])
@pytest.mark.asyncio
async def test_a_client_gone_mid_body_is_a_debug_line_not_an_error(path: str) -> None:
    def gone(record: logging.LogRecord) -> bool:
        return record.levelno == logging.DEBUG and "went away before its request body arrived" in record.getMessage()

    with log_records(gone) as logs:
        async with a2a_server() as server:
            body = json.dumps(jsonrpc_send(text_message("hi"))).encode()
            async with _connection(server.port) as (_, writer):
                writer.write(_post(path, body)[:-10])
                await writer.drain()
            async with asyncio.timeout(TIMEOUT):
                await logs.seen.wait()
    assert not logs.at_least(logging.ERROR), logs.at_least(logging.ERROR)
