"""gRPC health for ``e2a-grpc agent`` (``--health-port``): the readiness rule of ``serve``
(``readiness``): SERVING while the worker can do its work, which needs the broker (its frames'
publisher not backlogged), NOT_SERVING for good from SIGTERM on."""

from __future__ import annotations

import logging

import grpc
from grpc_health.v1 import health, health_pb2_grpc

from e2a_grpc.address import url_host
from e2a_grpc.broker.agent_worker import AgentWorker
from e2a_grpc.grpc.readiness import WHOLE_SERVER, Dependency, Readiness
from e2a_grpc.settings import AgentWorkerSettings

log = logging.getLogger(__name__)


class WorkerHealth:
    """The worker's health server (``listen``, ``follow`` once the worker has started, ``drain`` on
    SIGTERM, ``stop`` after the worker's)."""

    def __init__(self, server: grpc.aio.Server, readiness: Readiness, port: int) -> None:
        self._server = server
        self._readiness = readiness
        self.port = port

    @classmethod
    async def listen(cls, config: AgentWorkerSettings) -> WorkerHealth:
        """Serve health on ``config.health_port`` (nothing SERVING until ``follow``)."""
        assert config.health_port is not None
        server = grpc.aio.server()
        servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
        port = server.add_insecure_port(f"{url_host(config.host)}:{config.health_port}")
        readiness = Readiness()
        readiness.add_service(WHOLE_SERVER, requires=[Dependency.BROKER])
        readiness.add_health(servicer)
        await server.start()
        log.info("agent worker health on %s:%d", url_host(config.host), port)
        return cls(server, readiness, port)

    async def follow(self, worker: AgentWorker) -> None:
        """Report the started ``worker``'s readiness from now on."""
        readiness = self._readiness
        worker.publisher.backlog_listeners.append(
            lambda backlogged: readiness.set_dependency_ready(Dependency.BROKER, not backlogged)
        )
        await readiness.update_health()

    async def drain(self) -> None:
        await self._readiness.drain()

    async def stop(self) -> None:
        await self._server.stop(0)
