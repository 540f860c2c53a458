"""The gRPC server: servicers plus health, reflection, auth, limits, TLS and graceful shutdown."""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from e2a.v1 import (
    agent_service_pb2,
    codec_service_pb2,
    codec_service_pb2_grpc,
    conversion_service_pb2,
    conversion_service_pb2_grpc,
)
from e2a_grpc.address import unbracketed_host
from e2a_grpc.backends import make_backend, make_routes
from e2a_grpc.errors import error_text
from e2a_grpc.grpc.auth import BearerTokenInterceptor
from e2a_grpc.grpc.calls import InFlightCalls, RequestParsingInterceptor
from e2a_grpc.grpc.chat_servicer import ChatServicer, add_chat_service
from e2a_grpc.grpc.codec_servicer import CodecServicer
from e2a_grpc.grpc.conversion_servicer import ConversionServicer
from e2a_grpc.grpc.observability import MetricsHttpServer, MetricsInterceptor, ServerMetrics, method_paths
from e2a_grpc.grpc.readiness import Dependency, Readiness
from e2a_grpc.settings import EventLoop, ServerSettings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

    from e2a_grpc.broker.agent_registry import Registration
    from e2a_grpc.broker.frame_publisher import FramePublisher

log = logging.getLogger("e2a_grpc.server")

#: Chat's service: the one that depends on the broker with --publish-nats.
CHAT_SERVICE_NAME = agent_service_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
SERVICE_NAMES = (
    conversion_service_pb2.DESCRIPTOR.services_by_name["ConversionService"].full_name,
    CHAT_SERVICE_NAME,
    codec_service_pb2.DESCRIPTOR.services_by_name["CodecService"].full_name,
)
#: On shutdown, how long no call may have started before the calls grpc had already received when
#: the lame-duck period ended count as handed over (see ``InFlightCalls.quiet``).
HAND_OVER_QUIET_SECONDS = 0.1
#: The longest that hand-over may take: an event loop busy with big calls hands them over one by one,
#: and under continuous load no quiet comes. New calls are refused from then on.
HAND_OVER_MAX_SECONDS = 1.0
#: How long past the grace period the cancelling of the calls left and the closing may take; then the
#: process exits at once, whatever is still running (``exit_when_overdue``).
STOP_OVERRUN_SECONDS = 0.8
#: The exit code of a process that did not stop within that time (the command line's "the server failed").
OVERDUE_EXIT_CODE = 1


class ListenError(OSError):
    """The server cannot listen on its address (one line, for the command line to print)."""


def check_can_listen(host: str, port: int) -> None:
    """Raise ``ListenError`` if ``host:port`` is taken, or none of its addresses can be bound.

    grpc only says "Failed to bind" (and logs a line of its own); binding probe sockets first gives
    the reason. They set SO_REUSEADDR as grpc does, so connections in TIME_WAIT do not count.
    """
    bind_host = unbracketed_host(host)
    try:
        addresses = socket.getaddrinfo(bind_host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    failures: list[int] = []
    for family, kind, protocol, _, address in addresses:
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                failures.append(exc.errno or errno.EADDRNOTAVAIL)
    # grpc listens on the addresses it can bind (a name may resolve to an IPv6 address this host
    # lacks), but one taken by another program would split the clients.
    taken = [code for code in failures if code in (errno.EADDRINUSE, errno.EACCES)]
    if taken or len(failures) == len(addresses):
        reason = os.strerror((taken or failures)[0]).lower()
        raise ListenError(f"cannot listen on {host}:{port}: {reason}")


async def start_publisher(publisher: FramePublisher, config: ServerSettings) -> None:
    """Start the frame publisher of ``--publish-nats``; ``ListenError`` (one line) when the broker
    cannot be reached or refuses the frames' stream."""
    try:
        await publisher.start()
    except Exception as exc:
        raise ListenError(f"cannot publish to NATS at {config.publish_nats}: {error_text(exc)}") from None


async def check_publishing(config: ServerSettings) -> None:
    """What each worker of ``serve --workers N`` does first with ``--publish-nats`` (``start_publisher``),
    done once before they start: a broker that refuses is one error line, not one per worker."""
    from e2a_grpc.broker.frame_publisher import FramePublisher

    publisher = FramePublisher.from_settings(config)
    await start_publisher(publisher, config)
    await publisher.close(0)


def server_options(config: ServerSettings, *, reuse_port: bool = False) -> list[tuple[str, int]]:
    """The options of a grpc server of this process: message size limits, port sharing."""
    return [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # grpc's default lets a second server bind the same port and take half the connections:
        # only the workers of one `serve --workers N` share it.
        ("grpc.so_reuseport", 1 if reuse_port else 0),
    ]


class E2AServer:
    """A started server and what is needed to stop it gracefully."""

    def __init__(
        self, config: ServerSettings, *, tracer_provider: TracerProvider | None = None, reuse_port: bool = False
    ) -> None:
        """``tracer_provider``: where the spans go when ``config.tracing`` is on; default: as the ``OTEL_*``
        environment variables say (that provider is shut down, flushing its spans, by ``stop``).
        ``reuse_port``: share the port with the other worker processes (grpc/workers.py), whose parent
        has checked it; otherwise a port in use is refused."""
        self.config = config
        if config.port and not reuse_port:  # port 0 is never taken
            check_can_listen(config.host, config.port)
        options = server_options(config, reuse_port=reuse_port)
        self.calls = InFlightCalls()
        # Authentication first: a caller without a valid token never gets its request parsed.
        interceptors: list[grpc.aio.ServerInterceptor] = [RequestParsingInterceptor(SERVICE_NAMES, self.calls)]
        if config.token:
            interceptors.insert(0, BearerTokenInterceptor(config.token.get_secret_value()))
        self._own_tracer_provider: TracerProvider | None = None
        tracer: Tracer | None = None
        if config.tracing:
            from e2a_grpc.grpc import tracing  # the optional 'tracing' extra: imported only when it is on

            if tracer_provider is None:
                tracer_provider = self._own_tracer_provider = tracing.tracer_provider_from_environment()
            interceptors.insert(0, tracing.TracingInterceptor(tracer_provider))
            tracer = tracing.tracer_of(tracer_provider)
        #: What health (and the A2A server's /readyz) says; the A2A server adds its own service to it.
        self.readiness = Readiness()
        self.metrics = ServerMetrics() if config.metrics_port is not None else None
        #: The port of /metrics once started, when metrics are on.
        self.metrics_port: int | None = None
        self._metrics_http: MetricsHttpServer | None = None
        if self.metrics is not None:
            # First: calls refused by the auth interceptor are counted too.
            health_service = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
            measured = method_paths((*SERVICE_NAMES, health_service))
            interceptors.insert(0, MetricsInterceptor(self.metrics, measured))
        self.server = grpc.aio.server(options=options, interceptors=interceptors)
        conversion_service_pb2_grpc.add_ConversionServiceServicer_to_server(ConversionServicer(config), self.server)
        codec_service_pb2_grpc.add_CodecServiceServicer_to_server(CodecServicer(), self.server)
        #: Every Chat frame also goes to NATS JetStream with --publish-nats (the ``nats`` extra).
        self.publisher: FramePublisher | None = None
        if config.publish_nats:
            from e2a_grpc.broker.frame_publisher import FramePublisher

            self.publisher = FramePublisher.from_settings(config)
            # Chat streams wait for the broker while the queue is full.
            self.publisher.backlog_listeners.append(
                lambda backlogged: self.readiness.set_dependency_ready(Dependency.BROKER, not backlogged)
            )
            if self.metrics is not None:
                self.metrics.watch_frame_publisher(self.publisher)
        for name in SERVICE_NAMES:
            # ConversionService and CodecService never publish: they need nothing.
            self.readiness.add_service(
                name, (Dependency.BROKER,) if name == CHAT_SERVICE_NAME and self.publisher is not None else ()
            )
        if self.metrics is not None:
            self.metrics.watch_readiness(self.readiness)
        #: The agents' entries in the agent registry with --registry-nats (the ``nats`` extra).
        self.registrations: tuple[Registration, ...] = ()
        if config.registry_nats:
            from e2a_grpc.broker.agent_registry import Registration

            self.registrations = Registration.of_server(config)
        routes = make_routes(config)
        self.chat = ChatServicer(
            make_backend(config) if routes is None else routes.default_backend,
            config,
            metrics=self.metrics,
            tracer=tracer,
            frame_sink=self.publisher,
            routes=routes,
        )
        add_chat_service(self.chat, self.server)
        self.health = health.aio.HealthServicer()
        self.readiness.add_health(self.health)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self.server,
        )
        address = f"{config.host}:{config.port}"
        try:
            if config.tls_cert and config.tls_key:  # ServerSettings refuses one without the other
                key_pair = (config.tls_key.read_bytes(), config.tls_cert.read_bytes())
                self.port = self.server.add_secure_port(address, grpc.ssl_server_credentials([key_pair]))
            else:
                self.port = self.server.add_insecure_port(address)
        except RuntimeError as exc:  # what the probe cannot see, or another program was quicker
            raise ListenError(f"cannot listen on {address}: {exc}") from None

    async def start(self) -> None:
        if self.metrics is not None and self.config.metrics_port is not None:
            # Before the gRPC port opens: a taken metrics port stops the server before any call.
            try:
                self._metrics_http = MetricsHttpServer(
                    self.metrics.registry, self.config.host, self.config.metrics_port
                )
            except OSError as exc:
                raise ListenError(
                    f"cannot serve metrics on {self.config.host}:{self.config.metrics_port}: {exc}"
                ) from None
            self.metrics_port = self._metrics_http.port
            log.info("metrics on http://%s:%d/metrics", self.config.host, self.metrics_port)
        if self.publisher is not None:  # before the port opens: no Chat frame is served that could not be published
            await start_publisher(self.publisher, self.config)
        await self.readiness.update_health()  # before the port answers health checks
        await self.server.start()
        for started, registration in enumerate(self.registrations):
            try:  # once the port is open, so that a gateway that finds the entry finds a server taking calls
                await registration.start()
            except Exception as exc:
                for registered in self.registrations[:started]:
                    await registered.close()
                await self.server.stop(None)
                raise ListenError(
                    f"cannot register in the agent registry at {self.config.registry_nats}: {error_text(exc)}"
                ) from None
        log.info(
            "e2a-grpc listening on %s:%d (tls=%s, auth=%s, max_message_bytes=%d, chat backend=%s, event loop=%s)",
            self.config.host,
            self.port,
            "on" if self.config.tls_cert else "off",
            "bearer token" if self.config.token else "off",
            self.config.max_message_bytes,
            self._chat_agents(),
            running_event_loop(),
        )

    def _chat_agents(self) -> str:
        """What the start's log line says Chat serves: the backend, or each agent of the routing table."""
        table = self.config.routing
        if table is None:
            return str(self.config.backend)
        return "routing table " + ", ".join(f"{route.agent_id}={route.target}" for route in table.routes)

    async def stop_when_signalled(self, *, first: Callable[[], Awaitable[None]] | None = None) -> None:
        """Serve until SIGTERM or SIGINT, then stop gracefully, exiting the process if that overruns the
        grace period (``exit_when_overdue``). ``first``: a stop to run first (the A2A server's, whose
        turns use the backend this stop closes), after the lame-duck period; it is cancelled if it
        is still running when the grace period is over."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        deadline = loop.time() + self.config.grace_seconds
        exit_when_overdue(self.config.grace_seconds + STOP_OVERRUN_SECONDS)
        log.info(
            "shutting down (grace %.1f s, lame duck %.1f s)", self.config.grace_seconds, self.config.lame_duck_seconds
        )
        await self._leave_registry()
        if first is not None:
            await self._lame_duck(deadline)
            if not await finished_by(first(), deadline):
                log.warning("grace period over before the A2A server had stopped: cancelled its stop")
        await self.stop(deadline)

    async def _leave_registry(self) -> None:
        """First thing on a stop: the agents leave the registry, so gateways stop routing to them while
        their calls drain."""
        registrations, self.registrations = self.registrations, ()
        for registration in registrations:
            await registration.close()

    async def _lame_duck(self, deadline: float) -> None:
        """Health (and /readyz) says NOT_SERVING at once; calls are still taken until the lame-duck period
        is over."""
        await self.readiness.drain()
        loop = asyncio.get_running_loop()
        lame_duck_over = deadline - self.config.grace_seconds + self.config.lame_duck_seconds
        if loop.time() < lame_duck_over:
            await asyncio.sleep(lame_duck_over - loop.time())

    async def stop(self, deadline: float | None = None) -> None:
        """Stop taking calls, let in-flight calls finish by ``deadline`` (``loop.time()``; default: the
        grace period from now), then cancel them.

        After the lame-duck period, the calls grpc has already received are still handed over and run
        (for up to ``HAND_OVER_MAX_SECONDS``): grpc's stop would cancel them. From then on a new call is
        refused with UNAVAILABLE, so that its client retries elsewhere; at ``deadline`` the calls still
        running are cancelled, with one WARNING saying how many.
        """
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = loop.time() + self.config.grace_seconds
        await self._leave_registry()
        await self._lame_duck(deadline)
        await self.calls.quiet(HAND_OVER_QUIET_SECONDS, min(deadline, loop.time() + HAND_OVER_MAX_SECONDS))
        self.calls.refuse_new()
        # Chat streams get their final "shutting down" frame.
        await self.chat.shutdown()
        if not await self.calls.idle(deadline):
            log.warning("grace period over with %d calls in flight: cancelling them", self.calls.count)
        # From here a cancelled Chat call is the server's doing, not its client's.
        self.chat.end_grace()
        await self.server.stop(max(0.0, deadline - loop.time()))
        if self.publisher is not None:  # the frames of the last streams, within what is left of the grace
            # The Chat calls grpc's stop cancelled hand their streams' last frames to the publisher as
            # they unwind, after the stop returned (ChatServicer): close it once they have.
            closing_deadline = max(deadline, loop.time() + 0.1)
            if not (
                await self.calls.idle(closing_deadline)
                and await finished_by(self.chat.closing_frames_handed_over(), closing_deadline)
            ):
                log.warning(
                    "%d calls still running (or handing their last frames to the publisher) after the shutdown: "
                    "not waiting for them",
                    self.calls.count,
                )
            await self.publisher.close(max(0.1, deadline - loop.time()))
        if self._metrics_http is not None:
            self._metrics_http.close()
        if self._own_tracer_provider is not None:
            self._own_tracer_provider.shutdown()
        log.info("e2a-grpc stopped")


async def finished_by(work: Awaitable[None], deadline: float) -> bool:
    """Run ``work`` until ``deadline`` (``loop.time()``); whether it finished, else it is cancelled.

    ``asyncio.wait`` with its own timeout: the deadline cannot be lost (see ``InFlightCalls``)."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait((task,), timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    if not done:
        task.cancel()
        # The error it may end with while it unwinds is of no more use (and is not to be logged as lost).
        task.add_done_callback(lambda ended: ended.cancelled() or ended.exception())
        await asyncio.wait((task,), timeout=STOP_OVERRUN_SECONDS / 2)
        return False
    task.result()  # its exception, if it failed
    return True


def exit_when_overdue(seconds: float) -> None:
    """End this process ``seconds`` from now if it is still running: the last resort that makes the
    grace period an upper bound, also when the event loop is stuck (a thread of its own)."""

    def exit_now() -> None:
        log.error("the shutdown overran the grace period by %.1f s: exiting now", STOP_OVERRUN_SECONDS)
        logging.shutdown()
        os._exit(OVERDUE_EXIT_CODE)

    watchdog = threading.Timer(seconds, exit_now)
    watchdog.daemon = True  # the normal exit does not wait for it
    watchdog.start()


def running_event_loop() -> EventLoop:
    """The event loop this code runs on (``--event-loop`` resolved), for the startup log line."""
    module = type(asyncio.get_running_loop()).__module__
    return EventLoop.UVLOOP if module.partition(".")[0] == "uvloop" else EventLoop.ASYNCIO


def freeze_startup_heap() -> None:
    """Once a process whose one job is serving serves: everything allocated so far lives as long as
    the process, so keep the cyclic GC from re-scanning it on every collection that per-call garbage
    triggers (Chat's per-frame objects trigger them often)."""
    gc.collect()
    gc.freeze()


async def serve(
    config: ServerSettings, *, reuse_port: bool = False, on_started: Callable[[], None] | None = None
) -> None:
    """Serve as this process's one job until SIGTERM or SIGINT, then shut down gracefully.

    ``on_started`` runs once the server listens (a worker tells its parent so).
    """
    server = E2AServer(config, reuse_port=reuse_port)
    await server.start()
    freeze_startup_heap()
    # Then at once the SIGTERM handler: a parent that restarted this worker may stop it right away.
    if on_started is not None:
        on_started()
    await server.stop_when_signalled()
