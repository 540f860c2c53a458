"""A gateway's live view of the agent registry (nats-py, the ``nats`` extra): kept by one KV watch,
so that routing a request asks no network question.

``LiveAgents`` opens its own connection, as it must re-watch when that connection comes back (a
broker restart may have lost the watch's consumer, and entries may have changed meanwhile): it says
so once in the log and replaces its entries with the bucket's current ones. Between a loss and the
re-watch the view keeps what it had, and entries expire by their heartbeats as always
(``agent_registry.RegistryEntries``), so a worker that died meanwhile does not stay routable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import nats.errors
from nats.aio.client import Client as NatsClient
from nats.js.kv import KeyValue

from e2a_grpc.broker.agent_records import AgentRecord
from e2a_grpc.broker.agent_registry import LiveAgent, RegistryEntries, read_current
from e2a_grpc.broker.connection import connect
from e2a_grpc.broker.kv_buckets import BROKER_ERRORS, REQUEST_TIMEOUT_SECONDS, open_bucket
from e2a_grpc.errors import error_text

log = logging.getLogger(__name__)

#: After a reconnection: the pause between attempts to watch again while the broker does not answer, and
#: the first attempt's wait for its answer (doubled on each attempt, up to REQUEST_TIMEOUT_SECONDS).
_REWATCH_PAUSE_SECONDS = 0.1
_FIRST_PROBE_TIMEOUT_SECONDS = 0.25


class LiveAgents:
    """The registry's live entries, kept current by a watch (``open``, then ``workers``, ``agents``,
    ``wait_for_workers``, ``changed``; ``close``)."""

    def __init__(self, url: str, *, bucket: str, ttl: float, replicas: int) -> None:
        self._url = url
        self._bucket = bucket
        self._ttl = ttl
        self._replicas = replicas
        self._nc: NatsClient | None = None
        self._kv: KeyValue | None = None
        self._watcher: KeyValue.KeyWatcher | None = None
        self._entries = RegistryEntries(ttl)
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        #: Watches started after a reconnection (0 until the first).
        self.rewatches = 0

    @classmethod
    async def open(cls, url: str, *, bucket: str, ttl: float, replicas: int) -> LiveAgents:
        """The view of the registry ``bucket`` at ``url`` (comma-separated: a cluster's nodes), created
        with ``ttl`` and ``replicas`` if missing; returns once it holds the current entries. Raises
        NoServersError (or OSError) when no broker can be reached, TimeoutError when JetStream does not
        answer."""
        view = cls(url, bucket=bucket, ttl=ttl, replicas=replicas)
        await view._start()
        return view

    def workers(self, agent_id: str) -> list[AgentRecord]:
        """The live worker entries of ``agent_id``, oldest start first; none: the agent is not available."""
        return self._entries.workers(agent_id)

    def agents(self) -> list[LiveAgent]:
        """Every agent with a live worker, by agent id."""
        return self._entries.agents()

    async def wait_for_workers(self, agent_id: str, timeout: float) -> list[AgentRecord]:
        """The live workers of ``agent_id``, waiting up to ``timeout`` seconds for one to register;
        none when none did."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not (workers := self.workers(agent_id)):
                    await self.changed()
                return workers
        return []

    async def changed(self) -> None:
        """Wait for the next change of the entries: a worker's entry written or removed, or a new watch."""
        await self._changed.wait()

    async def close(self) -> None:
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait((self._task,))
        if self._nc is not None:
            with contextlib.suppress(OSError, nats.errors.Error):  # closing a lost connection raises
                await self._nc.close()

    async def _start(self) -> None:
        self._nc = await connect(self._url, reconnected_cb=self._reconnected)
        try:
            self._kv, self._ttl = await open_bucket(
                self._nc,
                self._bucket,
                ttl=self._ttl,
                replicas=self._replicas,
                timeout=REQUEST_TIMEOUT_SECONDS,
                role="agent registry",
            )
            await self._watch()
        except BaseException:
            await self._nc.close()  # it would otherwise go on reconnecting for ever
            raise
        self._task = asyncio.create_task(self._follow(), name="e2a-live-agents")
        self._task.add_done_callback(self._on_task_done)

    async def _watch(self) -> None:
        """A new watch, and entries that are the bucket's current ones."""
        assert self._kv is not None
        entries = RegistryEntries(self._ttl)
        async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
            self._watcher = watcher = await self._kv.watch(">")
            try:
                await read_current(watcher, entries)
            except BaseException:
                with contextlib.suppress(*BROKER_ERRORS):
                    await watcher.stop()  # type: ignore[no-untyped-call]  # nats-py's KeyWatcher is untyped
                raise
        self._entries = entries
        self._notify()

    async def _follow(self) -> None:
        while True:
            assert self._watcher is not None
            async for entry in self._watcher:
                if entry is not None and self._entries.apply(entry):
                    self._notify()
            # The watch was stopped: the connection came back (``_reconnected``).
            await self._rewatch()

    async def _rewatch(self) -> None:
        assert self._kv is not None
        self.rewatches += 1
        log.info("agent registry view: watching bucket %s again after a reconnection to NATS", self._bucket)
        loop = asyncio.get_running_loop()
        started = loop.time()
        probe_timeout = _FIRST_PROBE_TIMEOUT_SECONDS
        warned = False
        while True:
            try:
                # A broker just back may leave JetStream requests unanswered until its streams are loaded.
                # Asking for the bucket's state (no side effect) with a short timeout finds when it answers;
                # a watch started before would wait its whole timeout and leave its consumer behind.
                async with asyncio.timeout(probe_timeout):
                    await self._kv.status()
                await self._watch()
            except (*BROKER_ERRORS, ConnectionError) as exc:
                if not warned and loop.time() - started >= REQUEST_TIMEOUT_SECONDS:
                    warned = True
                    log.warning(
                        "agent registry view: cannot watch bucket %s yet (%s); retrying, and entries expire by "
                        "their heartbeats meanwhile",
                        self._bucket,
                        error_text(exc),
                    )
                await asyncio.sleep(_REWATCH_PAUSE_SECONDS)  # a retry's pace, not a wait for an event
                probe_timeout = min(2 * probe_timeout, REQUEST_TIMEOUT_SECONDS)
                continue
            if warned:
                log.info("agent registry view: watching bucket %s again", self._bucket)
            return

    async def _reconnected(self) -> None:
        if self._watcher is not None and not self._closing:
            with contextlib.suppress(*BROKER_ERRORS):  # the watch ends all the same
                await self._watcher.stop()  # type: ignore[no-untyped-call]  # ends ``_follow``'s loop: it re-watches

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error(
                "the agent registry view stopped on a bug: entries expire and no new worker is seen", exc_info=exc
            )
