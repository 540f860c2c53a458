"""What the readiness tests share: the E2A and A2A servers in process as ``serve --a2a-port`` wires them,
health statuses as gRPC health's Watch streams them, and the A2A port's probe endpoints."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from e2a_grpc.a2a_server.server import A2AServer
from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.grpc.server import E2AServer
from e2a_grpc.settings import LIVENESS_PATH, READINESS_PATH
from tests.conftest import server_config

SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


@dataclass
class Servers:
    """The E2A server and the A2A server over its backend, started; their addresses."""

    e2a: E2AServer
    a2a: A2AServer

    @property
    def e2a_address(self) -> str:
        return f"127.0.0.1:{self.e2a.port}"

    @property
    def a2a_grpc_address(self) -> str:
        return f"127.0.0.1:{self.a2a.grpc_port}"

    @property
    def a2a_url(self) -> str:
        return f"http://127.0.0.1:{self.a2a.port}"


@contextlib.asynccontextmanager
async def serving_with_a2a(backend: AgentBackend | None = None, **overrides: Any) -> AsyncIterator[Servers]:
    """``serve --a2a-port 0 --a2a-grpc-port 0`` in this event loop (``serve_with_a2a``'s wiring, without
    waiting for a signal), ``backend`` replacing the configured one; always stopped, the A2A server first."""
    settings = server_config(a2a_port=0, a2a_grpc_port=0, **overrides)
    e2a = E2AServer(settings)
    if backend is not None:
        e2a.chat.backend = backend
    a2a = A2AServer(settings, e2a.chat.backend, e2a.readiness)
    await a2a.start()
    try:
        await e2a.start()
    except BaseException:
        await a2a.stop()
        raise
    try:
        yield Servers(e2a, a2a)
    finally:
        await a2a.stop()
        await e2a.stop()


async def health_statuses(channel: grpc.aio.Channel, service: str) -> AsyncGenerator[int, None]:
    """The health statuses of ``service`` as gRPC health's Watch reports them (the current one first)."""
    watch = health_pb2_grpc.HealthStub(channel).Watch  # type: ignore[attr-defined]  # the stubs list no methods
    async for response in watch(health_pb2.HealthCheckRequest(service=service)):
        yield response.status


async def until_status(statuses: AsyncIterator[int], wanted: int) -> None:
    """Return once ``statuses`` reports ``wanted``."""
    async for status in statuses:
        if status == wanted:
            return


async def health_check(channel: grpc.aio.Channel, service: str) -> int:
    """The health status of ``service`` now (gRPC health's Check)."""
    check = health_pb2_grpc.HealthStub(channel).Check  # type: ignore[attr-defined]  # the stubs list no methods
    response = await check(health_pb2.HealthCheckRequest(service=service))
    status: int = response.status
    return status


async def readyz(http: httpx.AsyncClient, base_url: str, service: str | None = None) -> httpx.Response:
    params = {} if service is None else {"service": service}
    return await http.get(base_url + READINESS_PATH, params=params)


async def livez(http: httpx.AsyncClient, base_url: str) -> httpx.Response:
    return await http.get(base_url + LIVENESS_PATH)


async def readiness_metrics(http: httpx.AsyncClient, metrics_port: int | None) -> dict[str, float]:
    """The ``e2a_ready`` and ``e2a_dependency_ready`` samples /metrics serves (``name`` or ``name{dependency}``)."""
    text = (await http.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
    return {
        sample.name + (f"{{{sample.labels['dependency']}}}" if "dependency" in sample.labels else ""): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name in ("e2a_ready", "e2a_dependency_ready")
    }
