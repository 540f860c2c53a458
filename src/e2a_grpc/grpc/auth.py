"""Bearer-token authentication for every call but health checks.

The check runs before the request is parsed, and also for methods the server does not have: without
a valid token every call gets UNAUTHENTICATED, so neither request bytes nor method names can be
probed without credentials.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import grpc

Request = TypeVar("Request")
Response = TypeVar("Response")

_HEALTH_PREFIX = "/grpc.health.v1.Health/"


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """Requires ``authorization: Bearer <token>`` on every call except health checks."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Request, Response] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Request, Response] | None:
        handler = await continuation(handler_call_details)
        if handler_call_details.method.startswith(_HEALTH_PREFIX):
            return handler
        presented = dict(handler_call_details.invocation_metadata or ()).get("authorization", "")
        if isinstance(presented, str) and hmac.compare_digest(presented.encode(), self._expected):
            return handler
        return _deny(handler)


def _deny(handler: grpc.RpcMethodHandler[Request, Response] | None) -> grpc.RpcMethodHandler[Request, Response]:
    # ``request`` is the raw request bytes, or an iterator of them for a client stream: never parsed.
    async def abort(request: object, context: grpc.aio.ServicerContext[Request, Response]) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

    async def abort_stream(
        request: object, context: grpc.aio.ServicerContext[Request, Response]
    ) -> AsyncIterator[Response]:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        yield  # pragma: no cover - makes this an async generator, as streaming handlers are

    if handler is None:
        # No such method, which the caller learns only with a valid token. Its kind is unknown:
        # a bidi handler fits any call, and it answers without waiting for a request.
        return grpc.stream_stream_rpc_method_handler(abort_stream)
    serializer = handler.response_serializer
    if handler.response_streaming:
        if handler.request_streaming:
            return grpc.stream_stream_rpc_method_handler(abort_stream, None, serializer)
        return grpc.unary_stream_rpc_method_handler(abort_stream, None, serializer)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(abort, None, serializer)
    return grpc.unary_unary_rpc_method_handler(abort, None, serializer)
