"""The gRPC server: servicers plus health, reflection, auth, limits, TLS and graceful shutdown."""

from __future__ import annotations

import asyncio
import gc
import hmac
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from e2a_grpc import _gen  # noqa: F401  (makes the generated ``e2a.v1`` modules importable)
from e2a_grpc.backends import AgentBackend
from e2a_grpc.backends.acp import AcpBackend
from e2a_grpc.backends.echo import EchoBackend
from e2a_grpc.chat import ChatServicer
from e2a_grpc.service import ConversionServicer

from e2a.v1 import agent_service_pb2, agent_service_pb2_grpc  # isort: skip
from e2a.v1 import conversion_service_pb2, conversion_service_pb2_grpc  # isort: skip

log = logging.getLogger("e2a_grpc.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 50051
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_A2A_TIMEOUT_SECONDS = 300.0
_HEALTH_PREFIX = "/grpc.health.v1.Health/"
SERVICE_NAMES = (
    conversion_service_pb2.DESCRIPTOR.services_by_name["ConversionService"].full_name,
    agent_service_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name,
)


@dataclass
class ServerConfig:
    """How to run the server. ``token`` is a secret: it is never logged (nor shown by ``repr``)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    tls_cert: Path | None = None
    tls_key: Path | None = None
    token: str | None = field(default=None, repr=False)
    backend: str = "echo"
    echo_delay_seconds: float = 0.0
    log_frames: bool = False
    #: acp backend: the agent command (argv), the default session cwd (else the server's cwd), the
    #: answer to the agent's permission requests, and how many session-bound agents stay alive.
    acp_command: tuple[str, ...] = ()
    acp_cwd: Path | None = None
    acp_permission_policy: str = "deny"
    acp_max_sessions: int = 16
    #: a2a backend: the remote agent's base URL (its agent card is served below it), and the longest
    #: silence on its stream (also the connect and plain-request timeout).
    a2a_url: str | None = None
    a2a_timeout_seconds: float = DEFAULT_A2A_TIMEOUT_SECONDS


def make_backend(config: ServerConfig) -> AgentBackend:
    """The Chat backend the configuration names."""
    if config.backend == "echo":
        return EchoBackend(delay_seconds=config.echo_delay_seconds)
    if config.backend == "acp":
        return AcpBackend(
            config.acp_command,
            default_cwd=config.acp_cwd,
            permission_policy=config.acp_permission_policy,
            max_sessions=config.acp_max_sessions,
        )
    if config.backend == "a2a":
        if not config.a2a_url:
            raise ValueError("the a2a backend needs the agent's URL (--a2a-url)")
        # Imported here: a2a-sdk is an optional dependency, needed only by this backend.
        from e2a_grpc.backends.a2a import A2ABackend

        return A2ABackend(config.a2a_url, timeout_seconds=config.a2a_timeout_seconds)
    raise ValueError(f"unknown backend {config.backend!r} (known: {', '.join(BACKENDS)})")


BACKENDS = ("echo", "acp", "a2a")


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


class E2AServer:
    """A started server and what is needed to stop it gracefully."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        options = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            ("grpc.max_send_message_length", config.max_message_bytes),
        ]
        interceptors = [BearerTokenInterceptor(config.token)] if config.token else []
        self.server = grpc.aio.server(options=options, interceptors=interceptors)
        conversion_service_pb2_grpc.add_ConversionServiceServicer_to_server(ConversionServicer(), self.server)  # type: ignore[no-untyped-call]
        self.chat = ChatServicer(make_backend(config), log_frames=config.log_frames)
        agent_service_pb2_grpc.add_AgentServiceServicer_to_server(self.chat, self.server)  # type: ignore[no-untyped-call]
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self.server,
        )
        address = f"{config.host}:{config.port}"
        if config.tls_cert or config.tls_key:
            if not (config.tls_cert and config.tls_key):
                raise ValueError("TLS needs both a certificate and a key file")
            credentials = grpc.ssl_server_credentials([(config.tls_key.read_bytes(), config.tls_cert.read_bytes())])
            self.port = self.server.add_secure_port(address, credentials)
        else:
            self.port = self.server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"cannot listen on {address}")

    async def start(self) -> None:
        await self.server.start()
        # Everything allocated so far lives as long as the server: keep the cyclic GC from
        # re-scanning it on every collection triggered by per-call garbage.
        gc.collect()
        gc.freeze()
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info(
            "e2a-grpc listening on %s:%d (tls=%s, auth=%s, max_message_bytes=%d, chat backend=%s)",
            self.config.host,
            self.port,
            "on" if self.config.tls_cert else "off",
            "bearer token" if self.config.token else "off",
            self.config.max_message_bytes,
            self.config.backend,
        )

    async def run_until_signalled(self) -> None:
        """Start, serve until SIGTERM or SIGINT, then stop gracefully."""
        await self.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        log.info("shutting down (grace %.1f s)", self.config.grace_seconds)
        await self.stop()

    async def stop(self) -> None:
        """Stop taking calls, let in-flight calls finish within the grace period, then cancel them."""
        await self.health.enter_graceful_shutdown()
        # Chat streams get their final "shutting down" frame first, then the grace period runs.
        await self.chat.shutdown()
        await self.server.stop(self.config.grace_seconds)
        log.info("e2a-grpc stopped")


async def serve(config: ServerConfig) -> None:
    """Run until SIGTERM or SIGINT, then shut down gracefully."""
    await E2AServer(config).run_until_signalled()
