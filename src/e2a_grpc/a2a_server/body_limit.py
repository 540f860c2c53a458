"""The A2A server's HTTP request bodies: size, read time and JSON nesting limits, checked before the SDK.

An ASGI middleware in front of the SDK's routes reads each request body whole, then hands the SDK the
body as it came (a chunked one in one piece, as the SDK reads it anyway). Before that:

- a ``Content-Length`` over ``max_message_bytes`` is answered at once, the body unread; a chunked body
  is answered as soon as it passes the limit, so no more than the limit is ever held in memory: HTTP 413;
- a body still incomplete ``read_timeout`` seconds after its headers (a client sending it slowly, or
  not at all) is answered HTTP 408 and its connection closed: uvicorn has no body timeout;
- a body nesting JSON deeper than ``jsontext.MAX_DEPTH`` (the E2A JSON rule) is refused without being
  parsed: a2a-sdk 1.3 parses it with Python's recursive ``json`` (and protobuf's), and 100,000 levels
  gave -32603 "maximum recursion depth exceeded" there. JSON-RPC answers it with HTTP 200, as the SDK
  answers its own errors; HTTP+JSON with 400, as the SDK answers a body it cannot parse;
- a client that goes away before its body arrived is logged at DEBUG, and the SDK never called:
  a2a-sdk 1.3's JSON-RPC dispatcher reads the body itself and logged the ``ClientDisconnect`` Starlette
  raises as "Unhandled exception" at ERROR, with a traceback.

Each refusal has the error body of the transport asked: on JSON-RPC an error response with id null (the
request was not read) and code -32600 Invalid Request, the code the SDK itself gives a payload too
large; on HTTP+JSON the SDK's ``google.rpc.Status`` payload. Each carries its E2A reason
(``request_too_large``, ``request_body_timeout``, ``request_too_deep``) and the limit (``errors.A2A_ERRORS``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.errors import A2AError
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error, rest_error_payload
from e2a_grpc.a2a_server.http_binding import JSON_RPC_ERROR_STATUS
from e2a_grpc.jsontext import MAX_DEPTH, nesting_problem

log = logging.getLogger(__name__)

#: HTTP 413 Content Too Large (RFC 9110 section 15.5.14).
CONTENT_TOO_LARGE = 413
#: HTTP 408 Request Timeout (RFC 9110 section 15.5.9).
REQUEST_TIMEOUT = 408


class _TooLarge(Exception):
    """A chunked body passed the limit."""


class RequestBodyLimit:
    """Reads each HTTP request body within the limits of the module's docstring."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, read_timeout: float, rest_path: str) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout = read_timeout
        self._rest_prefix = rest_path.rstrip("/") + "/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        # h11 refuses a malformed Content-Length before the app, and holds the body to a valid one.
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, send, CONTENT_TOO_LARGE, self._too_large(int(declared)), close=True)
            return
        try:
            async with asyncio.timeout(self.read_timeout):
                body = await self._read(receive)
        except TimeoutError:
            error = a2a_error(
                FrontDoorError.REQUEST_BODY_TIMEOUT,
                f"the request body did not arrive within {self.read_timeout:g} s (--a2a-body-timeout-seconds)",
                body_timeout_seconds=self.read_timeout,
            )
            await self._refuse(scope, send, REQUEST_TIMEOUT, error, close=True)
            return
        except _TooLarge:
            await self._refuse(scope, send, CONTENT_TOO_LARGE, self._too_large(None), close=True)
            return
        if body is None:
            log.debug("A2A HTTP: client %s went away before its request body arrived", _client(scope))
            return
        if (problem := nesting_problem(body)) is not None:
            error = a2a_error(
                FrontDoorError.REQUEST_TOO_DEEP, f"the request body is refused unparsed: {problem}", max_depth=MAX_DEPTH
            )
            await self._refuse(scope, send, None, error, close=False)
            return
        await self.app(scope, _Replay(body, receive), send)

    async def _read(self, receive: Receive) -> bytes | None:
        """The whole body; None if the client went away first."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self, declared: int | None) -> A2AError:
        details: dict[str, Any] = {"max_message_bytes": self.max_bytes}
        if declared is not None:
            details["content_length"] = declared
        return a2a_error(
            FrontDoorError.REQUEST_TOO_LARGE,
            f"the request body is over this server's limit of {self.max_bytes} bytes (--max-message-bytes)",
            **details,
        )

    async def _refuse(self, scope: Scope, send: Send, status: int | None, error: A2AError, *, close: bool) -> None:
        """Answer ``error`` in the transport's error body, with HTTP ``status`` (None: the transport's own
        for an error in the request); ``close`` when the body was not read whole."""
        path: str = scope.get("path", "")
        if path.startswith(self._rest_prefix):
            payload = rest_error_payload(error)
            if status is not None:
                payload["error"]["code"] = status
            status = payload["error"]["code"]
        else:
            payload = build_error_response(None, error)
            status = JSON_RPC_ERROR_STATUS if status is None else status
        body = orjson.dumps(payload)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
        if close:  # the rest of the body is not read: the connection cannot carry another request
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "(unknown)"


class _Replay:
    """The ``receive`` of a request whose body was read already: that body, then the connection's own."""

    def __init__(self, body: bytes, receive: Receive) -> None:
        self._body: bytes | None = body
        self._receive = receive

    async def __call__(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        return await self._receive()
