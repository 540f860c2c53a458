"""Rewrapping grpc method handlers, shared by the interceptors (request parsing, metrics, tracing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import grpc

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Serializer: TypeAlias = Callable[[Any], bytes]

_MAKERS = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def behavior_of(handler: Handler) -> Callable[..., Any]:
    """The function grpc runs for ``handler``'s kind of call."""
    behavior = {
        (False, False): handler.unary_unary,
        (False, True): handler.unary_stream,
        (True, False): handler.stream_unary,
        (True, True): handler.stream_stream,
    }[(handler.request_streaming, handler.response_streaming)]
    assert behavior is not None, "grpc sets the behavior of the handler's kind"
    return behavior


def handler_like(
    handler: Handler,
    behavior: Callable[..., Any],
    *,
    request_deserializer: Callable[[bytes], Any] | None,
    response_serializer: Serializer | None,
) -> Handler:
    """A handler of ``handler``'s kind running ``behavior``."""
    make = _MAKERS[(handler.request_streaming, handler.response_streaming)]
    return make(behavior, request_deserializer=request_deserializer, response_serializer=response_serializer)


class WrappedHandlers:
    """Each method's wrapped handler, made once: grpc hands out the same handler object on every call."""

    def __init__(self, wrap: Callable[[Handler, str], Handler]) -> None:
        self._wrap = wrap
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}

    def of(self, method: str, handler: Handler) -> Handler:
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(handler, method)
        self._wrapped[method] = (handler, wrapped)
        return wrapped
