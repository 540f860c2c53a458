"""OpenTelemetry tracing (``--tracing``; the ``tracing`` extra): a span per RPC and one per Chat backend turn.

The RPC spans are opentelemetry-instrumentation-grpc's aio server interceptor: it continues the
caller's W3C trace context from the call's metadata (``traceparent``, ``tracestate``) and names the
span ``/package.Service/Method``. The Chat servicer adds a child span around the backend's stream
(``chat_servicer.BACKEND_TURN_SPAN``).

The instrumentation iterates the behavior of every response-streaming handler as an async
generator, while Chat writes its frames with ``context.write`` from a coroutine: ``TracingInterceptor``
hands it such handlers as generators that yield nothing, which grpc serves the same way.

Spans go to the exporters ``OTEL_TRACES_EXPORTER`` names (default ``otlp``, which needs
opentelemetry-exporter-otlp; ``console`` comes with the SDK), with the SDK's other ``OTEL_*``
variables (service name, resource, sampler, exporter endpoint) applied as the SDK reads them.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.metadata import entry_points
from typing import Any

import grpc
from opentelemetry.instrumentation.grpc import aio_server_interceptor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Tracer

from e2a_grpc.grpc.handlers import Context, Handler, WrappedHandlers, behavior_of, handler_like

_EXPORTERS_VARIABLE = "OTEL_TRACES_EXPORTER"


class TracingInterceptor(grpc.aio.ServerInterceptor):
    """A server span per call, in the caller's trace when its metadata carries one."""

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self._spans: grpc.aio.ServerInterceptor = aio_server_interceptor(  # type: ignore[no-untyped-call]
            tracer_provider=tracer_provider
        )
        self._adapted = WrappedHandlers(lambda handler, _method: _writing_as_generator(handler))

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        async def generator_continuation(details: grpc.HandlerCallDetails) -> Handler | None:
            handler = await continuation(details)
            if handler is None or not handler.response_streaming:
                return handler
            return self._adapted.of(details.method, handler)

        handler: Handler | None = await self._spans.intercept_service(generator_continuation, handler_call_details)
        return handler


def _writing_as_generator(handler: Handler) -> Handler:
    """``handler``, its behavior an async generator even when it writes its replies with ``context.write``."""
    behavior = behavior_of(handler)
    if inspect.isasyncgenfunction(behavior):
        return handler
    writer: Callable[[Any, Context], Awaitable[None]] = behavior  # an aio coroutine that writes its replies

    async def writes(request: Any, context: Context) -> AsyncIterator[Any]:
        await writer(request, context)
        return
        yield  # makes this an async generator; the replies went out through context.write

    return handler_like(
        handler,
        writes,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def tracer_of(tracer_provider: TracerProvider) -> Tracer:
    return tracer_provider.get_tracer("e2a_grpc")


def tracer_provider_from_environment() -> TracerProvider:
    """A provider as the ``OTEL_*`` environment variables describe it, exporting in batches."""
    provider = TracerProvider()  # reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER
    for exporter in _exporters_from_environment():
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def check_environment() -> None:
    """Raise a ValueError naming ``OTEL_TRACES_EXPORTER`` if an exporter it names is not installed."""
    _exporter_entry_points()


def _exporter_entry_points() -> list[Any]:
    names = [name.strip() for name in os.environ.get(_EXPORTERS_VARIABLE, "otlp").split(",") if name.strip()]
    available = {point.name: point for point in entry_points(group="opentelemetry_traces_exporter")}
    chosen = []
    for name in names:
        if name == "none":
            continue
        if name not in available:
            raise ValueError(
                f"{_EXPORTERS_VARIABLE}: no span exporter {name!r} is installed (have: "
                f"{', '.join(sorted(available)) or 'none'}); 'otlp' comes with opentelemetry-exporter-otlp"
            )
        chosen.append(available[name])
    return chosen


def _exporters_from_environment() -> list[SpanExporter]:
    exporters: list[SpanExporter] = [point.load()() for point in _exporter_entry_points()]
    return exporters
