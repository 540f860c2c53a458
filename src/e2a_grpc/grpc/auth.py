"""Bearer-token authentication for every call but health checks."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

_HEALTH_PREFIX = "/grpc.health.v1.Health/"


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc has no type stubs
    """Requires ``authorization: Bearer <token>`` on every call except health checks."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(_HEALTH_PREFIX):
            return handler
        presented = dict(handler_call_details.invocation_metadata or ()).get("authorization", "")
        if isinstance(presented, str) and hmac.compare_digest(presented.encode(), self._expected):
            return handler
        return _deny(handler)


def _deny(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    async def abort(request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

    async def abort_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        yield  # pragma: no cover - makes this an async generator, as streaming handlers are

    kwargs = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.response_streaming:
        if handler.request_streaming:
            return grpc.stream_stream_rpc_method_handler(abort_stream, **kwargs)
        return grpc.unary_stream_rpc_method_handler(abort_stream, **kwargs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(abort, **kwargs)
    return grpc.unary_unary_rpc_method_handler(abort, **kwargs)
