"""Which server instance runs which A2A task, and the sweeper that marks failed the tasks nobody will end.

A task whose turn ended without a terminal state stays SUBMITTED or WORKING for ever (the TTL sweeper
deletes only ended tasks): its process died, or the task store failed at the turn's end, so the SDK's
own FAILED write failed too. With tasks in a database (PostgreSQL shared by several instances, or a
SQLite file, which one process owns: the same rules hold), this module finds and fails them:

- Each server instance has an id (``InstanceLeases.instance_id``) and a lease row in
  ``e2a_a2a_instances`` that it renews every ``a2a_sweep_interval_seconds`` to expire
  ``a2a_lease_seconds`` later (clocks of instances sharing a database are assumed to agree to well
  within a lease, as NTP keeps them).
- A turn starts by recording its task's owner, this instance, in ``e2a_a2a_task_owners``
  (``BackendExecutor``'s ``record_owner``; a continuation on another instance moves it there).
- An instance is gone when its lease has expired: it was not renewed for a whole lease (the process
  was killed, hangs, or cannot reach the database). A live instance's tasks are never touched by another.
- Every sweep interval, ``OrphanedTaskSweeper`` renews the lease, then reads the owner rows of this
  instance's tasks that the SDK's registry no longer holds (their turn is over) and of the tasks of gone
  instances (not within a lease of the database coming back from an outage: every instance's lease
  may have expired in it, and the live ones need a lease's time to renew theirs). Each such task still
  SUBMITTED or WORKING is marked FAILED, its status message saying why and ``metadata.e2a_error.code``
  ``turn_lost`` or ``instance_gone``; the owner rows of tasks ended, waiting for input or deleted are
  dropped, and so are the leases of gone instances left with none.

A turn that fails while the database is down is thus marked at the first sweep once the database
answers again: the sweeper is woken when ``StoreHealth`` says it is available again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from a2a.server.cluster import TaskEventStream, VersionedTaskStore
from a2a.server.cluster.event_stream import VersionedEvent
from a2a.server.cluster.task_store import ConcurrentTaskModificationError, StoredTask
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Message, Part, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from google.protobuf.struct_pb2 import Struct
from sqlalchemy import Column, Float, MetaData, String, Table, and_, delete, or_, select, update
from sqlalchemy.sql.expression import Insert

from e2a_grpc.a2a_server.errors import FrontDoorError, TaskStoreUnavailableError
from e2a_grpc.a2a_server.store_outage import StoreHealth

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

_metadata = MetaData()
INSTANCES = Table(
    "e2a_a2a_instances",
    _metadata,
    Column("instance_id", String(64), primary_key=True),
    #: Seconds since the epoch, by the instance's clock.
    Column("lease_expires_at", Float, nullable=False),
)
TASK_OWNERS = Table(
    "e2a_a2a_task_owners",
    _metadata,
    Column("task_id", String(255), primary_key=True),
    Column("instance_id", String(64), nullable=False, index=True),
)

#: The states of a task whose turn runs (or is about to): failed when nobody runs it any more.
RUNNING_STATES = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})

#: Owner rows of gone instances read per sweep (the rest at the next one).
SWEEP_BATCH = 500

_WHY = {
    FrontDoorError.TURN_LOST: "the task's turn ended without a final state, as the task store failed during it; "
    "send the message again",
    FrontDoorError.INSTANCE_GONE: "the server instance running this task stopped (its lease expired); "
    "send the message again",
}


class InstanceLeases:
    """This instance's lease and the owners of tasks, in the task store's database."""

    def __init__(self, engine: AsyncEngine, health: StoreHealth, lease_seconds: float) -> None:
        self.instance_id = uuid.uuid4().hex
        self.lease_seconds = lease_seconds
        self._engine = engine
        self._health = health

    async def initialize(self) -> None:
        """Create the tables if missing, and take this instance's lease."""
        async with self._engine.begin() as connection:
            await connection.run_sync(_metadata.create_all)
        await self.renew(time.time())

    def _upsert(self, table: Table, key: str, **values: Any) -> Insert:
        """An insert that updates the row with the same ``key`` (PostgreSQL and SQLite say it alike)."""
        if self._engine.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as postgresql_insert

            statement = postgresql_insert(table).values(**values)
            return statement.on_conflict_do_update(
                index_elements=[key], set_={name: statement.excluded[name] for name in values if name != key}
            )
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        lite = sqlite_insert(table).values(**values)
        return lite.on_conflict_do_update(
            index_elements=[key], set_={name: lite.excluded[name] for name in values if name != key}
        )

    async def _execute(self, statement: Any) -> Any:
        async with self._engine.begin() as connection:
            return await connection.execute(statement)

    async def renew(self, now: float) -> None:
        """Extend this instance's lease to ``now + lease_seconds``."""
        statement = self._upsert(
            INSTANCES, "instance_id", instance_id=self.instance_id, lease_expires_at=now + self.lease_seconds
        )
        await self._health.guard(self._execute(statement))

    async def record_owner(self, task_id: str) -> None:
        """This instance runs the task's turn."""
        statement = self._upsert(TASK_OWNERS, "task_id", task_id=task_id, instance_id=self.instance_id)
        await self._health.guard(self._execute(statement))

    async def own(self) -> list[tuple[str, str]]:
        """(task id, owner) of every task this instance owns (the turns it runs, the tasks waiting here)."""
        statement = select(TASK_OWNERS.c.task_id, TASK_OWNERS.c.instance_id).where(
            TASK_OWNERS.c.instance_id == self.instance_id
        )
        result = await self._health.guard(self._execute(statement))
        return [(row.task_id, row.instance_id) for row in result]

    async def of_gone_instances(self, now: float) -> list[tuple[str, str]]:
        """(task id, owner) of tasks whose owner's lease expired or is missing, at most ``SWEEP_BATCH``."""
        statement = (
            select(TASK_OWNERS.c.task_id, TASK_OWNERS.c.instance_id)
            .select_from(TASK_OWNERS.outerjoin(INSTANCES, INSTANCES.c.instance_id == TASK_OWNERS.c.instance_id))
            .where(
                TASK_OWNERS.c.instance_id != self.instance_id,
                or_(INSTANCES.c.instance_id.is_(None), INSTANCES.c.lease_expires_at < now),
            )
            .limit(SWEEP_BATCH)
        )
        result = await self._health.guard(self._execute(statement))
        return [(row.task_id, row.instance_id) for row in result]

    async def release(self, owned: list[tuple[str, str]]) -> None:
        """Drop owner rows (each only if that owner still has it: a continuation may have moved it)."""
        if not owned:
            return
        statement = delete(TASK_OWNERS).where(
            or_(
                *(
                    and_(TASK_OWNERS.c.task_id == task_id, TASK_OWNERS.c.instance_id == owner)
                    for task_id, owner in owned
                )
            )
        )
        await self._health.guard(self._execute(statement))

    async def forget_gone_instances(self, now: float) -> None:
        """Drop the leases of gone instances that own no task any more."""
        owns = select(TASK_OWNERS.c.task_id).where(TASK_OWNERS.c.instance_id == INSTANCES.c.instance_id).exists()
        statement = delete(INSTANCES).where(INSTANCES.c.lease_expires_at < now, ~owns)
        await self._health.guard(self._execute(statement))

    async def retire(self) -> None:
        """End this instance's lease (a clean stop): its tasks left unfinished are swept at once."""
        statement = update(INSTANCES).where(INSTANCES.c.instance_id == self.instance_id).values(lease_expires_at=0.0)
        await self._health.guard(self._execute(statement))


def failed_task(task: Task, reason: FrontDoorError, owner: str) -> tuple[Task, TaskStatusUpdateEvent]:
    """The task marked FAILED by the sweeper, and the status update event that says so."""
    failed = Task()
    failed.CopyFrom(task)
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_AGENT,
        task_id=task.id,
        context_id=task.context_id,
        parts=[Part(text=_WHY[reason])],
    )
    failed.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_FAILED, message=message))
    failed.status.timestamp.GetCurrentTime()
    # As a failed turn's own status update says it (protocols.a2a): the E2A code in metadata.e2a_error.
    metadata = Struct()
    metadata.update({"e2a_error": {"code": str(reason), "details": {"instance_id": owner}}})
    failed.metadata.MergeFrom(metadata)
    event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=failed.status, metadata=metadata)
    return failed, event


class OrphanedTaskSweeper:
    """Renews the lease and fails orphaned tasks every ``interval`` seconds (see the module docstring)."""

    def __init__(
        self,
        leases: InstanceLeases,
        store: VersionedTaskStore,
        event_stream: TaskEventStream | None,
        holds: Callable[[str], Awaitable[bool]],
        health: StoreHealth,
        interval: float,
    ) -> None:
        self._leases = leases
        self._health = health
        self._store = store
        self._event_stream = event_stream
        self._holds = holds
        self._interval = interval
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def store_availability_changed(self, available: bool) -> None:
        """Sweep now if the database answers again: turns that failed in the outage can be marked."""
        if available:
            self._wake.set()

    async def _run(self) -> None:
        while True:  # the lease was taken at start: the first sweep is an interval later
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._interval)
            self._wake.clear()
            try:
                await self.sweep()
            except TaskStoreUnavailableError:
                pass  # logged once per outage (store_outage); the next sweep renews the lease
            except Exception:
                log.exception("sweeping orphaned A2A tasks failed; trying again in %g s", self._interval)

    async def sweep(self) -> int:
        """Renew the lease, then fail the orphaned tasks; how many were failed."""
        now = time.time()
        await self._leases.renew(now)
        released: list[tuple[str, str]] = []
        failed: Counter[FrontDoorError] = Counter()
        context = ServerCallContext()  # the A2A ports have no auth: every task has the owner an empty context names
        owned = await self._leases.own()
        # After an outage, the other instances get a whole lease of a working database to renew theirs.
        recovered_at = self._health.recovered_at
        if recovered_at is None or time.monotonic() - recovered_at >= self._leases.lease_seconds:
            owned += await self._leases.of_gone_instances(now)
        for task_id, owner in owned:
            mine = owner == self._leases.instance_id
            if mine and await self._holds(task_id):
                continue  # its turn runs here, or it waits for input here
            stored = await self._store.get(task_id, context)
            if stored is not None and stored.task.status.state in RUNNING_STATES:
                reason = FrontDoorError.TURN_LOST if mine else FrontDoorError.INSTANCE_GONE
                if not await self._fail(stored, reason, owner, context):
                    continue  # written meanwhile by another: read again at the next sweep
                failed[reason] += 1
            released.append((task_id, owner))
        await self._leases.release(released)
        await self._leases.forget_gone_instances(now)
        if failed:
            log.warning(
                "marked %d A2A tasks failed that nobody will end: %d whose turn ended without a final state "
                "(%s), %d of server instances gone (%s)",
                failed.total(),
                failed[FrontDoorError.TURN_LOST],
                FrontDoorError.TURN_LOST,
                failed[FrontDoorError.INSTANCE_GONE],
                FrontDoorError.INSTANCE_GONE,
            )
        return failed.total()

    async def _fail(self, stored: StoredTask, reason: FrontDoorError, owner: str, context: ServerCallContext) -> bool:
        task, event = failed_task(stored.task, reason, owner)
        try:
            version = await self._store.save(
                task, event=event, prev=stored.task, prev_version=stored.version, context=context
            )
        except ConcurrentTaskModificationError:
            return False
        if self._event_stream is not None:  # subscribers on other instances see the end
            await self._event_stream.publish(task.id, VersionedEvent(event=event, version=version))
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
