"""Whether this process can take the work of each service it serves: the one rule behind every gRPC
health service of the process (the E2A port's, and the A2A gRPC port's) and the A2A port's ``/readyz``.

A service is ready while every dependency it requires is ready and the process is not draining
(SIGTERM: from then on nothing is ready again). The dependencies:

- ``a2a_task_store``: the A2A task store's database (SQLite file or PostgreSQL), required by the A2A
  service; as ``a2a_server.store_outage.StoreHealth`` says (fed by ``a2a_server.store_probe``);
- ``nats_broker``: with ``--publish-nats``, the broker, required by Chat, which waits for it once the
  publisher's queue is full (``FramePublisher.backlogged``).

ConversionService and CodecService require nothing. The server as a whole (health's service ``""``)
requires every dependency: a load balancer that checks ``""`` takes out an instance that cannot do all
of its work, and one that routes a single service checks that service's name instead.

Each health service is told the statuses as they change, by one task at a time that sets them until
they are current, so that a quick flip and flop can never leave them in the wrong order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from enum import StrEnum

from grpc_health.v1 import health, health_pb2

#: gRPC health's name for the server as a whole.
WHOLE_SERVER = ""
_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Dependency(StrEnum):
    """What a service may need to reach to do its work (the names in ``/readyz`` and the metrics)."""

    TASK_STORE = "a2a_task_store"
    BROKER = "nats_broker"


class Readiness:
    """The readiness of the services of one process, and the health services that report it."""

    def __init__(self) -> None:
        self._requires: dict[str, frozenset[Dependency]] = {WHOLE_SERVER: frozenset()}
        self._not_ready: set[Dependency] = set()
        #: SIGTERM came: nothing is ready from now on.
        self.draining = False
        self._health: list[health.aio.HealthServicer] = []
        self._updating: asyncio.Task[None] | None = None
        self._changed_while_updating = False

    def add_service(self, name: str, requires: Iterable[Dependency] = ()) -> None:
        """Serve ``name``, ready while the ``requires`` are (the whole server requires them too)."""
        self._requires[name] = frozenset(requires)
        self._requires[WHOLE_SERVER] |= self._requires[name]

    def add_health(self, servicer: health.aio.HealthServicer) -> None:
        """Report to ``servicer`` (from ``update_health`` on, then at every change)."""
        self._health.append(servicer)

    @property
    def services(self) -> tuple[str, ...]:
        """The services served, the whole server (``""``) first."""
        return tuple(self._requires)

    @property
    def dependencies(self) -> tuple[Dependency, ...]:
        """The dependencies some service requires, in a fixed order."""
        return tuple(sorted(self._requires[WHOLE_SERVER]))

    def dependency_ready(self, dependency: Dependency) -> bool:
        return dependency not in self._not_ready

    def ready(self, service: str = WHOLE_SERVER) -> bool:
        """Whether ``service`` can take work now; KeyError for a service not served."""
        return not self.draining and not (self._requires[service] & self._not_ready)

    def set_dependency_ready(self, dependency: Dependency, ready: bool) -> None:
        """``dependency`` became ready (or not): the health services follow at once."""
        if self.dependency_ready(dependency) == ready:
            return
        if ready:
            self._not_ready.discard(dependency)
        else:
            self._not_ready.add(dependency)
        if self._updating is not None and not self._updating.done():
            self._changed_while_updating = True  # the running update sets the statuses again
            return
        self._updating = asyncio.create_task(self._update_until_current(), name="e2a-readiness-update")

    async def update_health(self) -> None:
        """Set every service's status in every health service to what it is now."""
        for servicer in self._health:
            for name in self._requires:
                await servicer.set(name, _SERVING if self.ready(name) else _NOT_SERVING)

    async def _update_until_current(self) -> None:
        self._changed_while_updating = True
        while self._changed_while_updating:
            self._changed_while_updating = False
            await self.update_health()

    async def drain(self) -> None:
        """Not ready any more, for good (SIGTERM): every health service says NOT_SERVING for every name."""
        self.draining = True
        for servicer in self._health:
            await servicer.enter_graceful_shutdown()  # also keeps an update still running from undoing it
