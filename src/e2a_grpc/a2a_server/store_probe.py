"""The probe of the A2A task store's database (SQLite file or PostgreSQL), which feeds ``StoreHealth``.

Every ``a2a_store_probe_interval_seconds``, and at once when a guarded call meets an outage while the
database counts as available (``StoreHealth.check_wanted``), the probe opens a new connection to the
store's database and runs ``SELECT 1`` within ``a2a_store_probe_timeout_seconds``, and tells
``StoreHealth.probed`` the result; ``StoreHealth`` decides what it means and logs it (``store_outage``).
It uses an engine of its own without a pool, from the store engine's URL: a pool exhausted by busy
calls, or holding connections a database restart has cut, is no outage, and the probe must not wait for
the calls' connections.
"""

from __future__ import annotations

import asyncio
import contextlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from e2a_grpc.a2a_server.store_outage import StoreHealth

_PROBE_QUERY = text("SELECT 1")


class TaskStoreProbe:
    """Checks the database of ``engine`` for ``health``, from ``start`` until ``stop``."""

    def __init__(self, engine: AsyncEngine, health: StoreHealth, *, interval: float, timeout: float) -> None:
        self._engine = create_async_engine(engine.url, poolclass=NullPool)
        self._health = health
        self._interval = interval
        self._timeout = timeout
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="e2a-task-store-probe")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._engine.dispose()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._health.check_wanted.wait()
            # Cleared before the check: a call that fails while it runs may have met an outage that began
            # after the check's connection was made, and has the database checked again.
            self._health.check_wanted.clear()
            self._health.probed(await self.check())

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
