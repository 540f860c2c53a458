"""What the A2A spec's HTTP bindings require and a2a-sdk 1.3's Starlette routes do not do.

An ASGI middleware in front of the JSON-RPC (``/``) and HTTP+JSON (under ``A2A_REST_PATH``) routes:

- A request body whose ``Content-Type`` is not JSON is refused with ContentTypeNotSupportedError
  (JSON-RPC -32005, HTTP+JSON 415: spec 5.4; 9.1 and 11.1 say requests are ``application/json``).
  The SDK ignores the header: a JSON body under any type was served, any other got JSON-RPC -32700
  (ParseError). HTTP+JSON also takes ``application/a2a+json``, the media type the spec registers for
  it (14.1.1). A request without a ``Content-Type`` is read as JSON, as before.
- ``A2A-Version`` (the header, or the ``A2A-Version`` query parameter spec 3.6.1 allows, which the SDK
  never reads) must name a version of ``versions.HTTP_VERSIONS``; any other gets VersionNotSupportedError
  before the SDK sees the request (the SDK's own check takes 1.1 or 0.4 for its 1.0 or 0.3 routes, and
  its 0.3 JSON-RPC routes report a refusal as -32603 InternalError).
- HTTP+JSON responses are ``application/json`` (spec 11.1), not the SDK's ``application/a2a+json``;
  SSE streams stay ``text/event-stream``.
- HTTP+JSON error responses have the spec's HTTP status (5.4): the SDK answers ContentTypeNotSupported
  with 400 (spec: 415), TaskNotCancelable with 400 (409) and InvalidAgentResponse with 500 (502), and
  names FAILED_PRECONDITION where the spec says UNIMPLEMENTED (``errors.with_spec_statuses``). The
  error is known by the ``ErrorInfo`` reason of its body.

Each refusal has the error body of the transport asked, its ``data`` naming the E2A reason
(``errors.A2A_ERRORS``): on JSON-RPC an error response with the request's id (if its body has one) and
HTTP 200, as the SDK's JSON-RPC errors have; on HTTP+JSON the SDK's AIP-193 payload with the spec's
statuses (``errors.rest_error_payload``: 415 and 400).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import orjson
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.constants import A2A_JSON_MEDIA_TYPE, VERSION_HEADER
from a2a.utils.errors import A2A_REASON_TO_ERROR, A2AError
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error, rest_error_payload, with_spec_statuses
from e2a_grpc.a2a_server.versions import HTTP_VERSIONS, version_refusal

JSON_MEDIA_TYPE = "application/json"
#: The request media types each binding reads.
JSON_RPC_REQUEST_TYPES = (JSON_MEDIA_TYPE,)
REST_REQUEST_TYPES = (JSON_MEDIA_TYPE, A2A_JSON_MEDIA_TYPE)
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_VERSION_KEY = VERSION_HEADER.lower().encode("latin-1")
#: The SDK answers every JSON-RPC error with HTTP 200; so do these refusals.
JSON_RPC_ERROR_STATUS = 200


def media_type(content_type: str) -> str:
    """The media type of a ``Content-Type`` value, without parameters, lower case."""
    return content_type.partition(";")[0].strip().lower()


class HttpBinding:
    """The request checks and the response media type of the module's docstring."""

    def __init__(self, app: ASGIApp, *, rest_path: str) -> None:
        self.app = app
        self._rest_prefix = rest_path.rstrip("/") + "/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        rest = path.startswith(self._rest_prefix)
        if scope["type"] != "http" or not (rest or (path == "/" and scope["method"] == "POST")):
            await self.app(scope, receive, send)  # the agent card, and what no A2A route serves
            return
        headers = Headers(scope=scope)
        version = headers.get(VERSION_HEADER)
        from_query = version is None and (version := _query_version(scope)) is not None
        refusal = _media_type_refusal(scope["method"], headers.get("content-type"), rest) or version_refusal(
            version, HTTP_VERSIONS
        )
        if refusal is None:
            if from_query and version is not None:  # a supported version: ASCII
                # The SDK's routes read the version from the headers only.
                scope = {**scope, "headers": [*scope["headers"], (_VERSION_KEY, version.encode("ascii"))]}
            await self.app(scope, receive, _spec_responses(send) if rest else send)
            return
        # The body is read (within max_message_bytes: body_limit comes first) so the connection stays usable.
        body = await _body(receive)
        if rest:
            payload = rest_error_payload(refusal)
            await _answer(send, payload, payload["error"]["code"])
        else:
            await _answer(send, build_error_response(_request_id(body), refusal), JSON_RPC_ERROR_STATUS)


def _media_type_refusal(method: str, content_type: str | None, rest: bool) -> A2AError | None:
    accepted = REST_REQUEST_TYPES if rest else JSON_RPC_REQUEST_TYPES
    if method not in _BODY_METHODS or content_type is None or media_type(content_type) in accepted:
        return None
    return a2a_error(
        FrontDoorError.REQUEST_MEDIA_TYPE_UNSUPPORTED,
        f"the request body is {content_type!r}; send Content-Type: {' or '.join(accepted)}",
        content_type=content_type,
    )


def _query_version(scope: Scope) -> str | None:
    query: bytes = scope.get("query_string", b"")
    for name, value in parse_qsl(query.decode("latin-1")):
        if name.lower() == VERSION_HEADER.lower():
            return value
    return None


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _request_id(body: bytes) -> str | int | None:
    """The id of a JSON-RPC request, if its body has one."""
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    request_id = request.get("id") if isinstance(request, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


async def _answer(send: Send, payload: dict[str, Any], status: int) -> None:
    body = orjson.dumps(payload)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", JSON_MEDIA_TYPE.encode("ascii")),
                (b"content-length", str(len(body)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _spec_responses(send: Send) -> Send:
    """``send`` with the SDK's HTTP+JSON responses labelled ``application/json`` and its error
    responses given the spec's statuses (an error body is small: it is held until complete)."""
    a2a_type = A2A_JSON_MEDIA_TYPE.encode("ascii")
    held: Message | None = None
    chunks: list[bytes] = []

    async def corrected(message: Message) -> None:
        nonlocal held
        if message["type"] == "http.response.start":
            message = {
                **message,
                "headers": [
                    (name, JSON_MEDIA_TYPE.encode("ascii"))
                    if name.lower() == b"content-type" and value.partition(b";")[0].strip().lower() == a2a_type
                    else (name, value)
                    for name, value in message.get("headers", [])
                ],
            }
            if message["status"] >= _FIRST_ERROR_STATUS:
                held = message
                return
        elif held is not None and message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            start, body = _error_with_spec_status(held, b"".join(chunks))
            held = None
            await send(start)
            message = {"type": "http.response.body", "body": body}
        await send(message)

    return corrected


_FIRST_ERROR_STATUS = 400


def _error_with_spec_status(start: Message, body: bytes) -> tuple[Message, bytes]:
    """An SDK error response with the spec's statuses for the A2A error its body names."""
    try:
        payload = orjson.loads(body)
        details = payload["error"]["details"]
        reasons = [detail.get("reason") for detail in details if isinstance(detail, dict)]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return start, body  # not the SDK's AIP-193 body: as it is
    error_class = next((A2A_REASON_TO_ERROR[reason] for reason in reasons if reason in A2A_REASON_TO_ERROR), None)
    if error_class is None:
        return start, body
    status = with_spec_statuses(payload, error_class)
    body = orjson.dumps(payload)
    headers = [(name, value) for name, value in start.get("headers", []) if name.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode("ascii")))
    return {**start, "status": status or start["status"], "headers": headers}, body
