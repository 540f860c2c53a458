"""The A2A server: the SDK's request handler over the Chat backend, on its three transports.

One HTTP port serves the agent card (``A2A_CARD_PATH``), JSON-RPC (at ``/``) and HTTP+JSON (under
``A2A_REST_PATH``) with the SDK's Starlette routes under uvicorn; ``a2a_grpc_port`` adds the SDK's
gRPC servicer on a port of its own. The card names every transport served, at the ports bound.
Every transport keeps to ``max_message_bytes`` (HTTP: ``body_limit``, which also bounds a body's read
time and JSON nesting); the HTTP port's connections have a header timeout and a cap
(``http_connections``). The HTTP port also answers ``/livez`` and ``/readyz`` (``probe_endpoints``), and
the gRPC port has gRPC health: both say what ``readiness`` says, the task store's database's
availability following ``StoreHealth`` (``store_outage``, fed by ``store_probe``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.metadata
import logging
import socket
from typing import TYPE_CHECKING

import grpc
import uvicorn
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.types import a2a_pb2, a2a_pb2_grpc
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from grpc_health.v1 import health, health_pb2_grpc
from starlette.applications import Starlette
from starlette.middleware import Middleware

from e2a_grpc.a2a_server.body_limit import RequestBodyLimit
from e2a_grpc.a2a_server.card_route import card_route
from e2a_grpc.a2a_server.errors import TaskStoreUnavailableError
from e2a_grpc.a2a_server.executor import BackendExecutor, TurnSlots
from e2a_grpc.a2a_server.grpc_handler import FrontDoorGrpcHandler
from e2a_grpc.a2a_server.handler import FrontDoorRequestHandler
from e2a_grpc.a2a_server.http_binding import HttpBinding
from e2a_grpc.a2a_server.http_connections import ConnectionLimits, guarded_protocol
from e2a_grpc.a2a_server.probe_endpoints import ProbeEndpoints
from e2a_grpc.a2a_server.push_delivery import push_notifications
from e2a_grpc.a2a_server.store_outage import quiet_sdk_outage_lines
from e2a_grpc.a2a_server.store_probe import TaskStoreProbe
from e2a_grpc.a2a_server.stores import EndedTaskSweeper, TaskStorage, open_storage
from e2a_grpc.address import unbracketed_host, url_host
from e2a_grpc.backends.routes import AgentRoutes
from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.grpc.readiness import Dependency, Readiness
from e2a_grpc.grpc.server import E2AServer, ListenError, freeze_startup_heap, server_options
from e2a_grpc.settings import A2A_CARD_PATH, A2A_REST_PATH, ServerSettings

if TYPE_CHECKING:
    from e2a_grpc.a2a_server.leases import OrphanedTaskSweeper

log = logging.getLogger("e2a_grpc.a2a_server")

#: The A2A service, by its gRPC health name (whichever transport serves it).
A2A_SERVICE_NAME = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"].full_name


def agent_card(
    settings: ServerSettings,
    backend: AgentBackend,
    http_port: int,
    grpc_port: int | None,
    routes: AgentRoutes | None = None,
) -> AgentCard:
    """The agent card: name, skills and modes from the settings, an interface per transport served.

    With a routing table, one card for all its agents, a skill per agent: its id the agent id (what a
    request's ``metadata.agent_id`` names), its name and description the agent's (``card_text``), its
    tags the agent's backend and its own skill ids. One card, not one per agent under a path of its own:
    the A2A gRPC transport serves one ``A2AService`` per port, so only a request field can choose the
    agent on every transport alike, and all agents' tasks stay in one task store under one set of limits.
    """
    host = url_host(settings.host)
    interfaces = [
        AgentInterface(
            url=f"http://{host}:{http_port}/",
            protocol_binding=TransportProtocol.JSONRPC,
            protocol_version=PROTOCOL_VERSION_CURRENT,
        ),
        AgentInterface(
            url=f"http://{host}:{http_port}{A2A_REST_PATH}",
            protocol_binding=TransportProtocol.HTTP_JSON,
            protocol_version=PROTOCOL_VERSION_CURRENT,
        ),
    ]
    if grpc_port is not None:
        interfaces.append(
            AgentInterface(
                url=f"{host}:{grpc_port}",
                protocol_binding=TransportProtocol.GRPC,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        )
    return AgentCard(
        name=settings.a2a_agent_name,
        description=settings.a2a_agent_description,
        version=importlib.metadata.version("e2a-grpc"),
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=settings.a2a_push_notifications),
        default_input_modes=list(settings.a2a_input_media_types),
        default_output_modes=list(settings.a2a_output_media_types),
        skills=_skills(settings, backend, routes),
    )


def _skills(settings: ServerSettings, backend: AgentBackend, routes: AgentRoutes | None) -> list[AgentSkill]:
    table = settings.routing
    if routes is None or table is None:
        return [
            AgentSkill(id=skill_id, name=skill_id, description=description, tags=[str(backend.info.name)])
            for skill_id, description in settings.a2a_skill_entries
        ]
    skills = []
    for route in table.routes:
        text = settings.card_text(route)
        tags = [str(routes.backends[route.agent_id].info.name), *(skill_id for skill_id, _ in text.skills)]
        skills.append(AgentSkill(id=route.agent_id, name=text.name, description=text.description, tags=tags))
    return skills


def _bound_socket(host: str, port: int) -> socket.socket:
    bind_host = unbracketed_host(host)
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on connections of a socket that says it is TCP,
    # and without it a response written in two parts waits for the client's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind_host, port))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot serve A2A on {host}:{port}: {exc.strerror}") from None
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class A2AServer:
    """The A2A transports over one backend (shared with the E2A server when both run, with its readiness;
    alone, the A2A server has its own)."""

    def __init__(
        self,
        settings: ServerSettings,
        backend: AgentBackend,
        readiness: Readiness | None = None,
        routes: AgentRoutes | None = None,
    ) -> None:
        """``backend``: every request's, or with ``routes`` (a routing table's backends) the default agent's."""
        assert settings.a2a_port is not None
        self.settings = settings
        self.backend = backend
        self.readiness = Readiness() if readiness is None else readiness
        self.executor = BackendExecutor(backend, settings, TurnSlots(settings.a2a_max_running_tasks), routes)
        self._socket = _bound_socket(settings.host, settings.a2a_port)
        #: The HTTP port (JSON-RPC, HTTP+JSON, agent card) and the gRPC port, once bound.
        self.port: int = self._socket.getsockname()[1]
        self.grpc_port: int | None = None
        self._grpc: grpc.aio.Server | None = None
        if settings.a2a_grpc_port is not None:
            self._grpc = grpc.aio.server(options=server_options(settings))
            address = f"{settings.host}:{settings.a2a_grpc_port}"
            try:
                self.grpc_port = self._grpc.add_insecure_port(address)
            except RuntimeError as exc:
                self._socket.close()
                raise ListenError(f"cannot serve A2A gRPC on {address}: {exc}") from None
            # gRPC health on this port too: a gRPC load balancer checks the port it sends calls to.
            grpc_health = health.aio.HealthServicer()
            health_pb2_grpc.add_HealthServicer_to_server(grpc_health, self._grpc)
            self.readiness.add_health(grpc_health)
        self.card = agent_card(settings, backend, self.port, self.grpc_port, routes)
        self.storage: TaskStorage | None = None
        self.handler: FrontDoorRequestHandler | None = None
        self._sweeper: EndedTaskSweeper | None = None
        self._store_probe: TaskStoreProbe | None = None
        #: Fails the tasks of lost turns and gone instances (with a database task store).
        self.orphan_sweeper: OrphanedTaskSweeper | None = None
        self._http: uvicorn.Server | None = None
        self._http_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        quiet_sdk_outage_lines()
        self.storage = await open_storage(self.settings)
        # The memory store has no database to lose.
        self.readiness.add_service(A2A_SERVICE_NAME, () if self.storage.engine is None else (Dependency.TASK_STORE,))
        self.handler = FrontDoorRequestHandler(
            self.executor,
            self.card,
            task_store=self.storage.store,
            event_stream=self.storage.event_stream,
            push=push_notifications(self.settings, self.storage.push_configs),
        )
        app = Starlette(
            routes=[
                card_route(self.card, A2A_CARD_PATH, self.settings.a2a_card_max_age_seconds),
                # A2A 0.3 clients too (message/send, tasks/get, ...: the SDK's compatibility layer).
                *create_jsonrpc_routes(self.handler, "/", enable_v0_3_compat=True),
                *create_rest_routes(self.handler, path_prefix=A2A_REST_PATH, enable_v0_3_compat=True),
            ],
            middleware=[
                Middleware(ProbeEndpoints, readiness=self.readiness),  # first: before any A2A check
                Middleware(
                    RequestBodyLimit,
                    max_bytes=self.settings.max_message_bytes,
                    read_timeout=self.settings.a2a_body_timeout_seconds,
                    rest_path=A2A_REST_PATH,
                ),
                Middleware(HttpBinding, rest_path=A2A_REST_PATH),
            ],
        )
        limits = ConnectionLimits(self.settings.a2a_header_timeout_seconds, self.settings.a2a_max_connections)
        config = uvicorn.Config(
            app,
            http=guarded_protocol(limits),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=max(1, round(self.settings.grace_seconds)),
        )
        self._http = uvicorn.Server(config)
        self._http_task = asyncio.create_task(self._http.serve(sockets=[self._socket]))
        while not self._http.started:
            if self._http_task.done():  # serve() failed: its exception says why
                await self._http_task
            await asyncio.sleep(0.01)
        if self._grpc is not None:
            # The SDK's generated gRPC module has no type hints.
            a2a_pb2_grpc.add_A2AServiceServicer_to_server(  # type: ignore[no-untyped-call]
                FrontDoorGrpcHandler(self.handler), self._grpc
            )
            await self.readiness.update_health()  # before the port answers health checks
            await self._grpc.start()
        if self.storage.engine is not None and self.storage.health is not None:
            self.storage.health.on_change(functools.partial(self.readiness.set_dependency_ready, Dependency.TASK_STORE))
            self._store_probe = TaskStoreProbe(
                self.storage.engine,
                self.storage.health,
                interval=self.settings.a2a_store_probe_interval_seconds,
                timeout=self.settings.a2a_store_probe_timeout_seconds,
            )
            self._store_probe.start()
        self._sweeper = EndedTaskSweeper(
            self.storage.store, self.settings.a2a_task_ttl_seconds, self.storage.push_configs
        )
        self._sweeper.start()
        self._start_orphan_sweeper(self.storage, self.handler)
        log.info(
            "A2A agent %r on http://%s:%d (card %s, JSON-RPC /, HTTP+JSON %s)%s, task store %s",
            self.card.name,
            url_host(self.settings.host),
            self.port,
            A2A_CARD_PATH,
            A2A_REST_PATH,
            f", gRPC on port {self.grpc_port}" if self.grpc_port is not None else "",
            "postgresql" if self.settings.a2a_postgres_url else self.settings.a2a_sqlite_path or "memory",
        )

    def _start_orphan_sweeper(self, storage: TaskStorage, handler: FrontDoorRequestHandler) -> None:
        if storage.leases is None or storage.health is None:
            return  # in memory: the tasks end with the process
        from e2a_grpc.a2a_server.leases import OrphanedTaskSweeper

        self.executor.record_owner = storage.leases.record_owner
        self.orphan_sweeper = OrphanedTaskSweeper(
            storage.leases,
            storage.versioned_store(),
            storage.event_stream,
            handler.active_tasks.holds,
            storage.health,
            self.settings.a2a_sweep_interval_seconds,
        )
        storage.health.on_change(self.orphan_sweeper.store_availability_changed)
        self.orphan_sweeper.start()

    async def stop(self) -> None:
        """Not ready any more; stop the running turns (their tasks end canceled), then the transports."""
        await self.readiness.drain()
        if self._sweeper is not None:
            await self._sweeper.stop()
        if self.orphan_sweeper is not None:
            await self.orphan_sweeper.stop()
        if self.handler is not None:
            await self.handler.aclose()
        if self._grpc is not None:
            await self._grpc.stop(self.settings.grace_seconds)
        if self._http is not None and self._http_task is not None:
            self._http.should_exit = True
            await self._http_task
        if self._store_probe is not None:
            await self._store_probe.stop()
        if self.storage is not None:
            if self.storage.leases is not None:
                # Its tasks left unfinished are another instance's to fail now, not after the lease.
                with contextlib.suppress(TaskStoreUnavailableError):
                    await self.storage.leases.retire()
            await self.storage.aclose()


async def serve_with_a2a(settings: ServerSettings) -> None:
    """The E2A gRPC server and the A2A server over the same backend, until SIGTERM or SIGINT."""
    e2a = E2AServer(settings)
    front = A2AServer(settings, e2a.chat.backend, e2a.readiness, e2a.chat.routes)
    await front.start()
    await e2a.start()
    freeze_startup_heap()
    # The A2A server first: its turns use the backend the E2A server closes.
    await e2a.stop_when_signalled(first=front.stop)
