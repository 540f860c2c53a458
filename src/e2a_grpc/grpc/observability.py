"""Prometheus metrics of one server: the usual gRPC call metrics, plus the Chat stream's own.

The call metrics follow go-grpc-prometheus's names (``grpc_server_started_total``,
``grpc_server_handled_total``, ``grpc_server_handling_seconds``, ``grpc_server_msg_sent_total``), so
existing dashboards work. They are recorded by ``MetricsInterceptor``, which the server puts before
the auth interceptor: calls refused with UNAUTHENTICATED are counted too. Only the methods of the
services the server has get labels; calls of unknown methods are not counted, so a caller cannot
grow the label sets without bound.

With ``--publish-nats``, the frame publisher's counts are read when /metrics is scraped
(``watch_frame_publisher``): its path per frame does no metric work. So is the readiness of the
server and of each dependency (``watch_readiness``).

Every server has its own ``CollectorRegistry``: two servers in one process (the tests) never share
a counter.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from threading import Thread
from typing import Any, Protocol
from wsgiref.simple_server import WSGIServer

import grpc
from google.protobuf import descriptor_pool
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from e2a_grpc.address import unbracketed_host
from e2a_grpc.grpc.handlers import Context, Handler, WrappedHandlers, behavior_of, handler_like
from e2a_grpc.grpc.readiness import Readiness
from e2a_grpc.model import ErrorCode, ResponseKind

_CALL_LABELS = ("grpc_service", "grpc_method", "grpc_type")
_GRPC_TYPES = {
    (False, False): "unary",
    (False, True): "server_stream",
    (True, False): "client_stream",
    (True, True): "bidi_stream",
}


class FramePublisherCounts(Protocol):
    """What the metrics read of the NATS frame publisher (``broker.frame_publisher.FramePublisher``)."""

    @property
    def queued(self) -> int: ...

    published: int
    dropped: int


class _FramePublisherCollector(Collector):
    def __init__(self, publisher: FramePublisherCounts) -> None:
        self._publisher = publisher

    def collect(self) -> Iterator[Metric]:
        publisher = self._publisher
        yield GaugeMetricFamily(
            "e2a_nats_frames_queued",
            "Chat frames waiting for NATS JetStream (handed over, not yet acknowledged).",
            value=publisher.queued,
        )
        yield CounterMetricFamily(
            "e2a_nats_frames_published", "Chat frames NATS JetStream acknowledged.", value=publisher.published
        )
        yield CounterMetricFamily(
            "e2a_nats_frames_dropped",
            "Chat frames given up on, never stored by NATS JetStream.",
            value=publisher.dropped,
        )


class _ReadinessCollector(Collector):
    def __init__(self, readiness: Readiness) -> None:
        self._readiness = readiness

    def collect(self) -> Iterator[Metric]:
        readiness = self._readiness
        yield GaugeMetricFamily(
            "e2a_ready",
            "1 while the server as a whole is ready (gRPC health SERVING for the server, /readyz 200), else 0.",
            value=int(readiness.ready()),
        )
        dependencies = GaugeMetricFamily(
            "e2a_dependency_ready",
            "1 while a dependency is ready (reachable, its queue not full), else 0.",
            labels=("dependency",),
        )
        for dependency in readiness.dependencies:
            dependencies.add_metric((dependency.value,), int(readiness.dependency_ready(dependency)))
        yield dependencies


#: The label of a response kind or error code this version does not know. Both are open: frames relayed
#: from another E2A service (``chat.relay``) carry whatever that service wrote, and a label per value of
#: another service's text would add a series, kept for the process's life, per value.
OTHER_LABEL = "other"
_KNOWN_RESPONSE_KINDS = frozenset(ResponseKind)
_KNOWN_ERROR_CODES = frozenset(ErrorCode)


def response_kind_label(response_kind: str) -> str:
    return response_kind if response_kind in _KNOWN_RESPONSE_KINDS else OTHER_LABEL


def error_code_label(code: ErrorCode | str | int) -> str:
    """Our codes, and an A2A agent's integer JSON-RPC codes, as they are; any other string ``other``."""
    return str(code) if isinstance(code, int) or code in _KNOWN_ERROR_CODES else OTHER_LABEL


class ServerMetrics:
    """The metrics of one server, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.started = Counter(
            "grpc_server_started_total", "RPCs started on the server.", _CALL_LABELS, registry=registry
        )
        self.handled = Counter(
            "grpc_server_handled_total",
            "RPCs completed on the server, by status code.",
            (*_CALL_LABELS, "grpc_code"),
            registry=registry,
        )
        self.handling_seconds = Histogram(
            "grpc_server_handling_seconds",
            "Time from the start of an RPC's handler to its end, in seconds.",
            _CALL_LABELS,
            registry=registry,
        )
        self.msg_sent = Counter(
            "grpc_server_msg_sent_total", "Stream messages sent by the server.", _CALL_LABELS, registry=registry
        )
        self.chat_streams_in_flight = Gauge(
            "e2a_chat_streams_in_flight", "Chat streams being served right now.", registry=registry
        )
        self.chat_frames_sent = Counter(
            "e2a_chat_frames_sent_total",
            "Chat frames written, by response_kind.",
            ("response_kind",),
            registry=registry,
        )
        self.chat_backend_errors = Counter(
            "e2a_chat_backend_errors_total",
            "Chat streams a backend ended with an error, by E2A error code.",
            ("code",),
            registry=registry,
        )
        self.chat_limits_hit = Counter(
            "e2a_chat_limits_hit_total",
            "Chat streams ended by a limit of this server (chat_max_*), by limit.",
            ("limit",),
            registry=registry,
        )

        # Per frame: the counter of each response_kind is looked up once (``labels`` takes a lock and
        # builds a key: it costs several times what ``inc`` does).
        self._chat_frames_sent_by_kind: dict[str, Counter] = {}

    def watch_frame_publisher(self, publisher: FramePublisherCounts) -> None:
        """Serve the NATS frame publisher's counts too (``e2a_nats_frames_*``)."""
        self.registry.register(_FramePublisherCollector(publisher))

    def watch_readiness(self, readiness: Readiness) -> None:
        """Serve the readiness of the server and of each dependency (``e2a_ready``, ``e2a_dependency_ready``)."""
        self.registry.register(_ReadinessCollector(readiness))

    def chat_frame_sent(self, response_kind: str) -> None:
        label = response_kind_label(response_kind)
        counter = self._chat_frames_sent_by_kind.get(label)
        if counter is None:
            counter = self._chat_frames_sent_by_kind[label] = self.chat_frames_sent.labels(label)
        counter.inc()

    def chat_backend_error(self, code: ErrorCode | str | int) -> None:
        self.chat_backend_errors.labels(error_code_label(code)).inc()


class MetricsHttpServer:
    """``/metrics`` of a registry over HTTP, served from a thread (prometheus_client's own server)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        bind_host = unbracketed_host(host)
        self._server: WSGIServer
        self._thread: Thread
        self._server, self._thread = start_http_server(port, addr=bind_host, registry=registry)
        self.port: int = self._server.server_port

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def method_paths(services: tuple[str, ...]) -> frozenset[str]:
    """``/package.Service/Method`` of every method of ``services`` (whose descriptors are imported)."""
    pool = descriptor_pool.Default()
    return frozenset(
        f"/{service}/{method.name}" for service in services for method in pool.FindServiceByName(service).methods
    )


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Counts and times the calls of ``methods`` by their status code."""

    def __init__(self, metrics: ServerMetrics, methods: frozenset[str]) -> None:
        self._metrics = metrics
        self._methods = methods
        self._handlers = WrappedHandlers(self._measured)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method not in self._methods:
            return handler
        return self._handlers.of(method, handler)

    def _measured(self, handler: Handler, method: str) -> Handler:
        service, name = method[1:].split("/", 1)
        kind = (handler.request_streaming, handler.response_streaming)
        labels = (service, name, _GRPC_TYPES[kind])
        metrics = self._metrics
        # Bound once per method: the per-call path does no label lookups.
        started = metrics.started.labels(*labels)
        seconds = metrics.handling_seconds.labels(*labels)
        msg_sent = metrics.msg_sent.labels(*labels)

        def handled(code: grpc.StatusCode, began: float) -> None:
            seconds.observe(time.perf_counter() - began)
            metrics.handled.labels(*labels, code.name).inc()

        behavior = behavior_of(handler)
        if inspect.isasyncgenfunction(behavior):

            async def measured_stream(request: Any, context: Context) -> AsyncIterator[Any]:
                started.inc()
                began = time.perf_counter()
                try:
                    async for reply in behavior(request, context):
                        yield reply
                except BaseException as exc:
                    handled(_code_of_failure(exc, context), began)
                    raise
                handled(context.code() or grpc.StatusCode.OK, began)

            new_behavior: Callable[..., Any] = measured_stream
        else:

            async def measured(request: Any, context: Context) -> Any:
                started.inc()
                began = time.perf_counter()
                try:
                    reply = await behavior(request, context)
                except BaseException as exc:
                    handled(_code_of_failure(exc, context), began)
                    raise
                handled(context.code() or grpc.StatusCode.OK, began)
                return reply

            new_behavior = measured
        serialize = handler.response_serializer
        if handler.response_streaming:
            serialize = _counting(serialize, msg_sent)
        return handler_like(
            handler, new_behavior, request_deserializer=handler.request_deserializer, response_serializer=serialize
        )


def _counting(serialize: Callable[[Any], bytes] | None, messages: Counter) -> Callable[[Any], bytes]:
    """``serialize`` counting each message: every one passes it, yielded or written with context.write.
    ``None``: the messages are written already serialized (Chat's frames)."""

    def counted(message: Any) -> bytes:
        messages.inc()
        return message if serialize is None else serialize(message)

    return counted


def _code_of_failure(exc: BaseException, context: Context) -> grpc.StatusCode:
    if isinstance(exc, grpc.aio.AbortError):
        return context.code() or grpc.StatusCode.UNKNOWN
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN  # what grpc answers an exception of the handler with
