"""The gRPC server: servicers plus health, reflection, auth, limits, TLS and graceful shutdown."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from e2a.v1 import (
    agent_service_pb2,
    agent_service_pb2_grpc,
    codec_service_pb2,
    codec_service_pb2_grpc,
    conversion_service_pb2,
    conversion_service_pb2_grpc,
)
from e2a_grpc.backends import make_backend
from e2a_grpc.grpc.auth import BearerTokenInterceptor
from e2a_grpc.grpc.calls import InFlightCalls, RequestParsingInterceptor
from e2a_grpc.grpc.chat_servicer import ChatServicer
from e2a_grpc.grpc.codec_servicer import CodecServicer
from e2a_grpc.grpc.conversion_servicer import ConversionServicer
from e2a_grpc.settings import ServerSettings

log = logging.getLogger("e2a_grpc.server")

SERVICE_NAMES = (
    conversion_service_pb2.DESCRIPTOR.services_by_name["ConversionService"].full_name,
    agent_service_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name,
    codec_service_pb2.DESCRIPTOR.services_by_name["CodecService"].full_name,
)


class E2AServer:
    """A started server and what is needed to stop it gracefully."""

    def __init__(self, config: ServerSettings) -> None:
        self.config = config
        options = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            ("grpc.max_send_message_length", config.max_message_bytes),
        ]
        self.calls = InFlightCalls()
        # Authentication first: a caller without a valid token never gets its request parsed.
        interceptors: list[grpc.aio.ServerInterceptor] = [RequestParsingInterceptor(SERVICE_NAMES, self.calls)]
        if config.token:
            interceptors.insert(0, BearerTokenInterceptor(config.token.get_secret_value()))
        self.server = grpc.aio.server(options=options, interceptors=interceptors)
        conversion_service_pb2_grpc.add_ConversionServiceServicer_to_server(ConversionServicer(), self.server)
        codec_service_pb2_grpc.add_CodecServiceServicer_to_server(CodecServicer(), self.server)
        self.chat = ChatServicer(make_backend(config), config)
        agent_service_pb2_grpc.add_AgentServiceServicer_to_server(self.chat, self.server)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self.server,
        )
        address = f"{config.host}:{config.port}"
        if config.tls_cert and config.tls_key:  # ServerSettings refuses one without the other
            credentials = grpc.ssl_server_credentials([(config.tls_key.read_bytes(), config.tls_cert.read_bytes())])
            self.port = self.server.add_secure_port(address, credentials)
        else:
            self.port = self.server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"cannot listen on {address}")

    async def start(self) -> None:
        await self.server.start()
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
        await self.stop_when_signalled()

    async def stop_when_signalled(self) -> None:
        """Serve until SIGTERM or SIGINT, then stop gracefully."""
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


async def serve(config: ServerSettings) -> None:
    """Serve as this process's one job until SIGTERM or SIGINT, then shut down gracefully."""
    server = E2AServer(config)
    await server.start()
    # Everything allocated so far lives as long as the process: keep the cyclic GC from re-scanning
    # it on every collection triggered by per-call garbage.
    gc.collect()
    gc.freeze()
    await server.stop_when_signalled()
