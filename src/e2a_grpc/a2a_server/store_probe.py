"""The readiness of the A2A task store's database (SQLite file or PostgreSQL).

Every ``a2a_store_probe_interval_seconds`` the probe opens a new connection to the store's database
and runs ``SELECT 1``, within ``a2a_store_probe_timeout_seconds``. It uses an engine of its own without
a pool, from the store engine's URL: a pool exhausted by busy calls, or holding connections a database
restart has cut, is no outage, and the probe must not wait for the calls' connections. A call that
loses its connection (SQLAlchemy's ``handle_error`` event on the store's engine with ``is_disconnect``:
the database stopped or restarted under it) has the probe run at once, so readiness flips with the
first failed call rather than up to an interval later; the probe alone decides, so the connections a
restart cut, which fail once each, never flip it.

The first failed probe is one WARNING with the reason, the first that succeeds after it one INFO with
how long the outage lasted; nothing is logged per probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy import event, text
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from e2a_grpc.grpc.readiness import Dependency, Readiness

log = logging.getLogger(__name__)

_PROBE_QUERY = text("SELECT 1")


class TaskStoreProbe:
    """Checks the database of ``engine`` for ``readiness`` (``Dependency.TASK_STORE``), from ``start``
    until ``stop``."""

    def __init__(self, engine: AsyncEngine, readiness: Readiness, *, interval: float, timeout: float) -> None:
        self._store_engine = engine
        self._engine = create_async_engine(engine.url, poolclass=NullPool)
        self._readiness = readiness
        self._interval = interval
        self._timeout = timeout
        self._due_now = asyncio.Event()
        self._unready_since = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        event.listen(self._store_engine.sync_engine, "handle_error", self._on_call_error)
        self._task = asyncio.create_task(self._run(), name="e2a-task-store-probe")

    async def stop(self) -> None:
        if self._task is not None:
            event.remove(self._store_engine.sync_engine, "handle_error", self._on_call_error)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._engine.dispose()

    def _on_call_error(self, context: ExceptionContext) -> None:
        # Run in the event loop's thread (SQLAlchemy's async engines run their sync code in a greenlet).
        if context.is_disconnect and self._readiness.dependency_ready(Dependency.TASK_STORE):
            self._due_now.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._due_now.wait()
            problem = await self.check()
            self._due_now.clear()  # calls that failed meanwhile are answered by this check
            ready = problem is None
            if ready == self._readiness.dependency_ready(Dependency.TASK_STORE):
                continue
            if ready:
                log.info(
                    "the A2A task store's database answers again after %.1f s: ready",
                    loop.time() - self._unready_since,
                )
            else:
                self._unready_since = loop.time()
                log.warning(
                    "the A2A task store's database is unreachable (%s): health is NOT_SERVING for the A2A "
                    "service and the server, and /readyz answers 503, until it answers again (checked every %g s)",
                    problem,
                    self._interval,
                )
            self._readiness.set_dependency_ready(Dependency.TASK_STORE, ready)

    async def check(self) -> str | None:
        """Why the database cannot be used now (one line), or None if it answers."""
        try:
            async with asyncio.timeout(self._timeout):
                async with self._engine.connect() as connection:
                    await connection.execute(_PROBE_QUERY)
        except TimeoutError:
            return f"no answer within {self._timeout:g} s"
        # Whatever the driver raises (OSError, its own errors, SQLAlchemy's wrapping of them) means the
        # database cannot be used: it is the reason given, not a failure of the probe.
        except Exception as exc:
            first_line = str(exc).strip().partition("\n")[0]
            return f"{type(exc).__name__}: {first_line}" if first_line else type(exc).__name__
        return None
