"""The task store's database going away and coming back, as the A2A server's clients and operators see it.

Every call of the A2A server on a database (the task store, the event stream instances share, the push
notification configs, the instance leases) goes through a guard here. A driver error that says the
database cannot be reached or dropped the connection (``is_outage``) becomes ``TaskStoreUnavailableError``
(``errors``: JSON-RPC -32000, HTTP 503, gRPC UNAVAILABLE, data ``{reason: task_store_unavailable,
retryable: true}``) on whichever path met it: a request handler, the SDK's task producer or consumer, a
sweeper. Other errors (a concurrent modification, a bug) pass through unchanged.

``StoreHealth`` is the one record of whether the database is available, fed by the probe's results
(``store_probe``: ``SELECT 1`` on a new connection) and by the guarded calls' outcomes. The rule:

- An outage begins when the probe finds the database unreachable. A call that meets an outage error
  while the database counts as available has the probe run at once, so the outage begins with the first
  failed call; but that call alone does not decide it. A restart cuts every pooled connection, and each
  may fail once after the database is back: the probe, on a new connection, then answers and nothing
  changes (no flap of readiness or of log lines).
- It ends when the probe's ``SELECT 1`` works, or when a call started after the outage began works,
  whichever comes first (a call under way on a connection the outage has not reached yet says nothing).

Its subscribers follow each change: readiness (``Dependency.TASK_STORE``: health and ``/readyz``) and
the orphaned-task sweeper, woken when the database answers again. The raw driver text goes to the log
once per outage: one WARNING when it begins, with the probe's reason; one INFO when it ends, with its
length and the number of calls that failed with an outage error since the database last answered.
The SDK's own lines about a ``TaskStoreUnavailableError`` are dropped by ``QuietStoreOutages``: they
would repeat, per task or per call, what the WARNING said (its task producer and consumer, and its
HTTP+JSON streams, log every failure with a traceback; its JSON-RPC and HTTP+JSON routes log every A2A
error they answer with).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

from a2a.server.cluster import TaskEventStream, VersionedTaskStore
from a2a.server.cluster.event_stream import VersionedEvent
from a2a.server.cluster.task_store import StoredTask
from a2a.server.cluster.version import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.tasks import PushNotificationConfigStore, TaskStore
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig

from e2a_grpc.a2a_server.errors import TaskStoreUnavailableError, task_store_unavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The a2a-sdk loggers that log a failed task's exception with its traceback (``active_task``: the
#: producer, the consumer, an agent's failed cancel; ``event_queue_v2``: a failed event dispatch;
#: ``rest_dispatcher``: any error ending an HTTP+JSON stream), and those that log each A2A error a
#: request is answered with (its message among the record's args).
SDK_OUTAGE_LOGGERS = (
    "a2a.server.agent_execution.active_task",
    "a2a.server.events.event_queue_v2",
    "a2a.server.routes.rest_dispatcher",
    "a2a.server.routes.jsonrpc_dispatcher",
    "a2a.utils.error_handlers",
)


@functools.cache
def _driver_outage_errors() -> tuple[type[BaseException], ...]:
    """The driver exception classes that mean the database is unreachable or went away (imported on
    first use: the drivers come with the A2A server's database stores)."""
    import asyncpg.exceptions
    from sqlalchemy import exc

    return (
        exc.OperationalError,  # SQLite: locked, unreadable file; PostgreSQL: what SQLAlchemy classes as such
        exc.InterfaceError,  # asyncpg: "cannot switch to state ...; another operation is in progress"
        exc.DisconnectionError,
        exc.TimeoutError,  # no pooled connection came free in time
        asyncpg.exceptions.PostgresConnectionError,  # "connection was closed in the middle of operation"
        asyncpg.exceptions.OperatorInterventionError,  # the server is starting up or shutting down
        asyncpg.exceptions.InterfaceError,
        asyncpg.exceptions.InternalClientError,
        OSError,  # connection refused or reset: asyncpg's connect raises these unwrapped
    )


#: SQLSTATE classes of an unavailable server: 08 connection exception, 53 insufficient resources (too
#: many connections), 57 operator intervention (shutting down, starting up, restarted).
_OUTAGE_SQLSTATE_CLASSES = ("08", "53", "57")


def is_outage(error: BaseException) -> bool:
    """Whether a driver error says the database is unavailable (not that a statement or the data is wrong).

    SQLAlchemy wraps asyncpg's errors in a ``DBAPIError`` whose ``orig`` is its adapter's error (with
    the ``sqlstate``), caused by asyncpg's own; a plain ``DBAPIError`` may be an outage or not (a
    constraint, a bad statement): its ``sqlstate`` or the asyncpg error says which.
    """
    from sqlalchemy import exc

    if not isinstance(error, exc.DBAPIError) or isinstance(error, exc.OperationalError | exc.InterfaceError):
        return isinstance(error, _driver_outage_errors())
    if error.connection_invalidated:
        return True
    cause: BaseException | None = error.orig
    while cause is not None:
        sqlstate = getattr(cause, "sqlstate", None)
        if (isinstance(sqlstate, str) and sqlstate.startswith(_OUTAGE_SQLSTATE_CLASSES)) or isinstance(
            cause, _driver_outage_errors()
        ):
            return True
        cause = cause.__cause__
    return False


def driver_text(error: BaseException) -> str:
    """The first line of a driver error's text (SQLAlchemy appends its background link on another)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


class StoreHealth:
    """Whether the task store's database is available (the rule in the module docstring), and its log lines."""

    def __init__(self) -> None:
        self.available = True
        #: ``time.monotonic()`` when the database last answered again after an outage (None: no outage seen).
        self.recovered_at: float | None = None
        #: Set by a call that meets an outage while the database counts as available: the probe checks at once.
        self.check_wanted = asyncio.Event()
        self._down_since = 0.0
        self._failed_calls = 0
        self._subscribers: list[Callable[[bool], None]] = []

    def on_change(self, callback: Callable[[bool], None]) -> None:
        """Call ``callback`` with the new availability each time it changes."""
        self._subscribers.append(callback)

    def outage(self, error: BaseException) -> bool:
        """Record a failed call; whether ``error`` is an outage (then the caller raises
        ``TaskStoreUnavailableError``)."""
        if not is_outage(error):
            return False
        self._failed_calls += 1
        if self.available:
            log.debug("an A2A task store call failed (%s): checking the database now", driver_text(error))
            self.check_wanted.set()
        return True

    def probed(self, problem: str | None) -> None:
        """Record the probe's result: None if the database answered, else why not (the driver's reason)."""
        if problem is not None:
            if self.available:
                self._begin_outage(problem)
        elif not self.available:
            self._end_outage()
        else:
            self._failed_calls = 0  # they lost connections the database had cut: no outage

    async def guard(self, call: Awaitable[T]) -> T:
        """The result of a call on the database; an outage is ``TaskStoreUnavailableError``."""
        started = time.monotonic()
        try:
            result = await call
        except Exception as error:
            if self.outage(error):
                raise task_store_unavailable() from None
            raise
        self.worked(started)
        return result

    def worked(self, started: float) -> None:
        """Record a call, started at ``started`` (``time.monotonic()``), that worked."""
        if not self.available and started >= self._down_since:
            self._end_outage()

    def _begin_outage(self, reason: str) -> None:
        self._down_since = time.monotonic()
        log.warning(
            "the A2A task store's database is unreachable (%s): calls that need it get the retryable "
            "'task store unavailable' error, and the A2A service and the server are not ready (gRPC health "
            "NOT_SERVING, /readyz 503), until it answers again",
            reason,
        )
        self._set_available(False)

    def _end_outage(self) -> None:
        self.recovered_at = time.monotonic()
        log.info(
            "the A2A task store's database answers again after %.1f s; %d calls failed meanwhile: ready",
            self.recovered_at - self._down_since,
            self._failed_calls,
        )
        self._failed_calls = 0
        self._set_available(True)

    def _set_available(self, available: bool) -> None:
        self.available = available
        for callback in self._subscribers:
            callback(available)


class QuietStoreOutages(logging.Filter):
    """Drops the SDK's log records of a ``TaskStoreUnavailableError`` (``StoreHealth`` logs the outage)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is not None and isinstance(record.exc_info[1], TaskStoreUnavailableError):
            return False
        args = record.args if isinstance(record.args, tuple) else ()
        return TaskStoreUnavailableError.message not in args


_QUIET = QuietStoreOutages()


def quiet_sdk_outage_lines() -> None:
    """Install ``QuietStoreOutages`` on the SDK loggers of ``SDK_OUTAGE_LOGGERS`` (once)."""
    for name in SDK_OUTAGE_LOGGERS:
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)


class GuardedVersionedTaskStore(VersionedTaskStore):
    """A versioned task store (PostgreSQL) whose outages are ``TaskStoreUnavailableError``."""

    def __init__(self, store: VersionedTaskStore, health: StoreHealth) -> None:
        self._store = store
        self._health = health

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        return await self._health.guard(
            self._store.save(task, event=event, prev=prev, prev_version=prev_version, context=context)
        )

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        return await self._health.guard(self._store.get(task_id, context))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await self._health.guard(self._store.list(params, context))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self._health.guard(self._store.delete(task_id, context))


class GuardedTaskStore(TaskStore):
    """An unversioned task store (SQLite) whose outages are ``TaskStoreUnavailableError``."""

    def __init__(self, store: TaskStore, health: StoreHealth) -> None:
        self._store = store
        self._health = health

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await self._health.guard(self._store.save(task, context))

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        return await self._health.guard(self._store.get(task_id, context))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await self._health.guard(self._store.list(params, context))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self._health.guard(self._store.delete(task_id, context))


class GuardedEventStream(TaskEventStream):
    """The event stream instances share (PostgreSQL), its outages ``TaskStoreUnavailableError``."""

    def __init__(self, stream: TaskEventStream, health: StoreHealth) -> None:
        self._stream = stream
        self._health = health

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        await self._health.guard(self._stream.publish(task_id, event))

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent, None]:
        events = self._stream.subscribe(task_id, after=after)
        try:
            while True:
                started = time.monotonic()
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    return
                except Exception as error:
                    if self._health.outage(error):
                        raise task_store_unavailable() from None
                    raise
                self._health.worked(started)
                yield event
        finally:
            await events.aclose()

    async def destroy(self, task_id: str) -> None:
        await self._health.guard(self._stream.destroy(task_id))


class GuardedPushConfigStore(PushNotificationConfigStore):
    """The push notification configs kept in the database, their outages ``TaskStoreUnavailableError``."""

    def __init__(self, configs: PushNotificationConfigStore, health: StoreHealth) -> None:
        self._configs = configs
        self._health = health

    async def set_info(
        self, task_id: str, notification_config: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig | None:
        return await self._health.guard(self._configs.set_info(task_id, notification_config, context))

    async def get_info(self, task_id: str, context: ServerCallContext) -> list[TaskPushNotificationConfig]:
        return await self._health.guard(self._configs.get_info(task_id, context))

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return await self._health.guard(self._configs.get_info_for_dispatch(task_id))

    async def delete_info(self, task_id: str, context: ServerCallContext, config_id: str | None = None) -> None:
        await self._health.guard(self._configs.delete_info(task_id, context, config_id))
