"""Where the A2A server keeps its tasks, and the clean-up of ended ones.

In memory by default; in a SQLite file with the SDK's ``DatabaseTaskStore`` (``a2a_sqlite_path``:
tasks survive a restart); in PostgreSQL with the SDK's cluster stores (``a2a_postgres_url``): the
versioned task store, so instances sharing the database never overwrite each other's writes, and the
database event stream, so a task running on one instance can be followed (resubscribed) on another
and cancelled from it. With ``a2a_push_notifications``, the tasks' push notification configs are kept
beside them: the SDK's in-memory store, or its database store in the same database. Every database
store is guarded (``store_outage``): a database that does not answer is a retryable
``TaskStoreUnavailableError``, logged once per outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from a2a.server.cluster import TaskEventStream, VersionedTaskStore
from a2a.server.cluster.task_store import LegacyTaskStoreAdapter
from a2a.server.context import ServerCallContext
from a2a.server.tasks import (
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    PushNotificationConfigStore,
    TaskStore,
)
from a2a.types.a2a_pb2 import ListTasksRequest

from e2a_grpc.a2a_server.errors import TaskStoreUnavailableError
from e2a_grpc.a2a_server.executor import TERMINAL_STATES
from e2a_grpc.a2a_server.store_outage import (
    GuardedEventStream,
    GuardedPushConfigStore,
    GuardedTaskStore,
    GuardedVersionedTaskStore,
    StoreHealth,
)
from e2a_grpc.settings import ServerSettings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from e2a_grpc.a2a_server.leases import InstanceLeases

log = logging.getLogger(__name__)

_PAGE_SIZE = 100  # the largest page A2A's ListTasks allows


@dataclass
class TaskStorage:
    """The task store of a server, the event stream instances share (PostgreSQL only), the push
    notification configs (when offered), and, for a database, its engine (to dispose), its health and
    this instance's lease (``leases``)."""

    store: TaskStore | VersionedTaskStore
    event_stream: TaskEventStream | None = None
    engine: AsyncEngine | None = None
    push_configs: PushNotificationConfigStore | None = None
    health: StoreHealth | None = None
    leases: InstanceLeases | None = None

    def versioned_store(self) -> VersionedTaskStore:
        """The store as a ``VersionedTaskStore`` (an unversioned one through the SDK's adapter)."""
        return self.store if isinstance(self.store, VersionedTaskStore) else LegacyTaskStoreAdapter(self.store)

    async def aclose(self) -> None:
        if self.engine is not None:
            await self.engine.dispose()


async def open_storage(settings: ServerSettings) -> TaskStorage:
    """The task storage the settings name, its tables created if missing."""
    if settings.a2a_sqlite_path is not None:
        from a2a.server.tasks import DatabaseTaskStore
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(f"sqlite+aiosqlite:///{settings.a2a_sqlite_path}")
        store = DatabaseTaskStore(engine)
        await store.initialize()
        health = StoreHealth()
        return TaskStorage(
            GuardedTaskStore(store, health),
            engine=engine,
            push_configs=await _database_push_configs(settings, engine, health),
            health=health,
            leases=await _leases(settings, engine, health),
        )
    if settings.a2a_postgres_url:
        from a2a.server.cluster import DatabaseTaskEventStream, VersionedDatabaseTaskStore
        from sqlalchemy.ext.asyncio import create_async_engine

        # pool_pre_ping: a pooled connection a restart (or an idle timeout on the way) cut is replaced
        # before a call uses it, so the first calls after a restart work instead of failing once per
        # pooled connection; the price is a round trip per call (README, task store outages).
        engine = create_async_engine(settings.a2a_postgres_url, pool_pre_ping=True)
        versioned = VersionedDatabaseTaskStore(engine)
        events = DatabaseTaskEventStream(engine)
        await versioned.initialize()
        await events.initialize()
        health = StoreHealth()
        return TaskStorage(
            GuardedVersionedTaskStore(versioned, health),
            event_stream=GuardedEventStream(events, health),
            engine=engine,
            push_configs=await _database_push_configs(settings, engine, health),
            health=health,
            leases=await _leases(settings, engine, health),
        )
    push_configs = InMemoryPushNotificationConfigStore() if settings.a2a_push_notifications else None
    return TaskStorage(InMemoryTaskStore(), push_configs=push_configs)


async def _database_push_configs(
    settings: ServerSettings, engine: AsyncEngine, health: StoreHealth
) -> PushNotificationConfigStore | None:
    """The SDK's database store of push notification configs, its table created if missing (if offered)."""
    if not settings.a2a_push_notifications:
        return None
    from a2a.server.tasks import DatabasePushNotificationConfigStore

    configs = DatabasePushNotificationConfigStore(engine)
    await configs.initialize()
    return GuardedPushConfigStore(configs, health)


async def _leases(settings: ServerSettings, engine: AsyncEngine, health: StoreHealth) -> InstanceLeases:
    """This instance's lease in the database, its tables created if missing."""
    from e2a_grpc.a2a_server.leases import InstanceLeases

    leases = InstanceLeases(engine, health, settings.a2a_lease_seconds)
    await leases.initialize()
    return leases


async def delete_ended_tasks(
    store: TaskStore | VersionedTaskStore,
    older_than_seconds: float,
    push_configs: PushNotificationConfigStore | None = None,
) -> int:
    """Delete the tasks that ended more than ``older_than_seconds`` ago, and their push notification
    configs; how many tasks were deleted."""
    cutoff = time.time() - older_than_seconds
    context = ServerCallContext()
    deleted = 0
    for state in sorted(TERMINAL_STATES):  # the ended tasks
        expired: list[str] = []
        page_token = ""
        while True:
            page = await store.list(
                ListTasksRequest(status=state, page_size=_PAGE_SIZE, page_token=page_token, history_length=0),
                context,
            )
            for task in page.tasks:
                if task.status.HasField("timestamp") and task.status.timestamp.ToMicroseconds() / 1e6 < cutoff:
                    expired.append(task.id)
            page_token = page.next_page_token
            if not page_token:
                break
        for task_id in expired:  # after listing: deleting while paging would shift the pages
            await store.delete(task_id, context)
            if push_configs is not None:
                # The A2A ports have no auth: every config has the one owner an empty context names.
                await push_configs.delete_info(task_id, context)
        deleted += len(expired)
    return deleted


class EndedTaskSweeper:
    """Deletes ended tasks (and their push notification configs) ``ttl_seconds`` after they ended,
    checking every ``ttl_seconds / 4`` (at most a minute)."""

    def __init__(
        self,
        store: TaskStore | VersionedTaskStore,
        ttl_seconds: float,
        push_configs: PushNotificationConfigStore | None = None,
    ) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._push_configs = push_configs
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._ttl > 0:
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        interval = min(self._ttl / 4, 60.0)
        while True:
            await asyncio.sleep(interval)
            try:
                deleted = await delete_ended_tasks(self._store, self._ttl, self._push_configs)
            except TaskStoreUnavailableError:
                continue  # logged once per outage (store_outage)
            except Exception:
                log.exception("deleting ended A2A tasks failed; trying again in %g s", interval)
                continue
            if deleted:
                log.info("deleted %d A2A tasks that ended more than %g s ago", deleted, self._ttl)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
