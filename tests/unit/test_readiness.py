"""Readiness's one rule, and the health services that report it: whatever the dependencies do, and
however their changes interleave with the updates of health services that are slow to take them,
every health service ends with each service's status as the rule says; after the drain, every status
is NOT_SERVING for good."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from grpc_health.v1 import health, health_pb2
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.grpc.readiness import WHOLE_SERVER, Dependency, Readiness

SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
SERVICES = {"conversion": (), "chat": (Dependency.BROKER,), "a2a": (Dependency.TASK_STORE,)}
#: Loop turns a settled update may take (each status set yields once); far more than it needs.
SETTLING_TURNS = 200

#: A change of a dependency, and how many times the loop turns before the next one.
changes = st.lists(st.tuples(st.sampled_from(Dependency), st.booleans(), st.integers(0, 3)), max_size=12)


class SlowHealth(health.aio.HealthServicer):
    """A health service that takes a loop turn to set each status, as one with watchers does."""

    async def set(self, service: str, status: int) -> None:
        await asyncio.sleep(0)
        await super().set(service, status)

    async def status(self, service: str) -> int:
        # Check uses its context only to refuse a service it does not know: every one asked is known.
        reply = await self.Check(health_pb2.HealthCheckRequest(service=service), cast(Any, None))
        status: int = reply.status
        return status


def readiness_with(servicers: list[SlowHealth]) -> Readiness:
    readiness = Readiness()
    for name, requires in SERVICES.items():
        readiness.add_service(name, requires)
    for servicer in servicers:
        readiness.add_health(servicer)
    return readiness


async def statuses(servicer: SlowHealth) -> dict[str, int]:
    return {name: await servicer.status(name) for name in (WHOLE_SERVER, *SERVICES)}


async def settled(readiness: Readiness, servicers: list[SlowHealth]) -> bool:
    """Whether every health service reports what ``readiness`` says, within a bounded number of loop
    turns, and still does after as many more (no update left to undo it)."""
    expected = {name: SERVING if readiness.ready(name) else NOT_SERVING for name in (WHOLE_SERVER, *SERVICES)}
    for _ in range(SETTLING_TURNS):
        if all([await statuses(servicer) == expected for servicer in servicers]):
            break
        await asyncio.sleep(0)
    for _ in range(SETTLING_TURNS):
        await asyncio.sleep(0)
    return all([await statuses(servicer) == expected for servicer in servicers])


def test_a_service_is_ready_while_what_it_requires_is_and_the_server_while_everything_is() -> None:
    async def run() -> None:
        readiness = readiness_with([])
        assert readiness.services == (WHOLE_SERVER, *SERVICES)
        assert readiness.dependencies == (Dependency.TASK_STORE, Dependency.BROKER)
        ready = {name: readiness.ready(name) for name in readiness.services}
        assert ready == {WHOLE_SERVER: True, "conversion": True, "chat": True, "a2a": True}
        readiness.set_dependency_ready(Dependency.TASK_STORE, False)
        ready = {name: readiness.ready(name) for name in readiness.services}
        assert ready == {WHOLE_SERVER: False, "conversion": True, "chat": True, "a2a": False}
        readiness.set_dependency_ready(Dependency.BROKER, False)
        readiness.set_dependency_ready(Dependency.TASK_STORE, True)
        ready = {name: readiness.ready(name) for name in readiness.services}
        assert ready == {WHOLE_SERVER: False, "conversion": True, "chat": False, "a2a": True}
        await readiness.drain()
        readiness.set_dependency_ready(Dependency.BROKER, True)
        assert readiness.draining and not any(readiness.ready(name) for name in readiness.services)

    asyncio.run(run())


@given(changes)
def test_health_ends_as_the_rule_says_however_changes_interleave(
    steps: list[tuple[Dependency, bool, int]],
) -> None:
    async def run() -> None:
        servicers = [SlowHealth(), SlowHealth()]
        readiness = readiness_with(servicers)
        await readiness.update_health()
        for dependency, ready, turns in steps:
            readiness.set_dependency_ready(dependency, ready)
            for _ in range(turns):
                await asyncio.sleep(0)
        assert await settled(readiness, servicers)
        for name, requires in SERVICES.items():
            assert readiness.ready(name) == all(readiness.dependency_ready(dependency) for dependency in requires)
        assert readiness.ready() == all(readiness.dependency_ready(dependency) for dependency in Dependency)

    asyncio.run(run())


@given(changes, changes)
def test_after_the_drain_nothing_is_ready_whatever_the_dependencies_do(
    before: list[tuple[Dependency, bool, int]], after: list[tuple[Dependency, bool, int]]
) -> None:
    async def run() -> None:
        servicers = [SlowHealth()]
        readiness = readiness_with(servicers)
        await readiness.update_health()
        for dependency, ready, _ in before:
            readiness.set_dependency_ready(dependency, ready)
        await readiness.drain()
        for dependency, ready, turns in after:
            readiness.set_dependency_ready(dependency, ready)
            for _ in range(turns):
                await asyncio.sleep(0)
        assert not any(readiness.ready(name) for name in readiness.services)
        assert await settled(readiness, servicers)
        assert set((await statuses(servicers[0])).values()) == {NOT_SERVING}

    asyncio.run(run())
