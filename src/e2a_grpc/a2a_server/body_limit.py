"""The A2A server's HTTP transports keep to ``max_message_bytes``, as its gRPC ports do.

An ASGI middleware in front of the SDK's routes: a request whose ``Content-Length`` is over the limit
is answered at once, its body unread; one without (chunked) is read here as it arrives, and answered
the same way as soon as it passes the limit, so no more than the limit is ever held in memory. A body
within the limit reaches the SDK as it came (a chunked one in one piece, as the SDK reads it anyway).

The answer is HTTP 413 with the error body of the transport asked: on JSON-RPC an error response
with id null (the request was not read) and code -32600 Invalid Request, the code the SDK itself
gives a payload too large; on HTTP+JSON the SDK's ``google.rpc.Status`` payload, code 413. Both
carry the E2A reason ``request_too_large`` and the limit (``errors.A2A_ERRORS``).
"""

from __future__ import annotations

from typing import Any

import orjson
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.error_handlers import build_rest_error_payload
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error

#: HTTP 413 Content Too Large (RFC 9110 section 15.5.14).
CONTENT_TOO_LARGE = 413


class RequestBodyLimit:
    """Refuses HTTP requests whose body is over ``max_bytes`` (see the module's docstring)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, rest_path: str) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self._rest_prefix = rest_path.rstrip("/") + "/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit():  # h11 refuses a malformed one before the app
            if int(declared) > self.max_bytes:
                await self._refuse(scope, send, int(declared))
                return
            await self.app(scope, receive, send)  # h11 holds the body to its declared length
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away: nobody to answer
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, send, None)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _Replay(b"".join(chunks), receive), send)

    async def _refuse(self, scope: Scope, send: Send, declared: int | None) -> None:
        details: dict[str, Any] = {"max_message_bytes": self.max_bytes}
        if declared is not None:
            details["content_length"] = declared
        error = a2a_error(
            FrontDoorError.REQUEST_TOO_LARGE,
            f"the request body is over this server's limit of {self.max_bytes} bytes (--max-message-bytes)",
            **details,
        )
        path: str = scope.get("path", "")
        if path.startswith(self._rest_prefix):
            payload = build_rest_error_payload(error)
            payload["error"]["code"] = CONTENT_TOO_LARGE
        else:
            payload = build_error_response(None, error)
        body = orjson.dumps(payload)
        await send(
            {
                "type": "http.response.start",
                "status": CONTENT_TOO_LARGE,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode("ascii")),
                    # The rest of the body is not read: the connection cannot carry another request.
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


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
