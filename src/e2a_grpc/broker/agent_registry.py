"""The agent registry on a JetStream key-value bucket (nats-py, the ``nats`` extra).

``Registration`` keeps one worker instance's entry alive: written at start, written again every
heartbeat, deleted on a clean stop; a process killed without a stop leaves it to expire with the
bucket's TTL (``kv_buckets``). ``AgentRegistry`` reads the live entries once: every agent with its
worker count (``e2a-grpc agents``), or the workers of one agent id; ``live_agents.LiveAgents`` keeps
them for a gateway. Both read entries through ``RegistryEntries``, one home for the rules of which
entry counts: values that are ``agent_records`` of their key, not older than the TTL.

A broker outage during the heartbeats is one WARNING at the first failed heartbeat and one INFO at
the first one that succeeds again; the server goes on serving meanwhile. A reconnection writes the
entry at once, as it may have expired during the outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass

import nats.errors
import nats.js.errors
import pydantic
from nats.aio.client import Client as NatsClient
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from e2a_grpc.broker.agent_records import AgentRecord, agent_keys, key_token, new_instance_id, now, route_records
from e2a_grpc.broker.connection import connect
from e2a_grpc.broker.kv_buckets import BROKER_ERRORS, REQUEST_TIMEOUT_SECONDS, expired, open_bucket
from e2a_grpc.errors import error_text
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)

#: What nats-py's watch calls the entries that end a key (a ``delete``, a ``purge``).
_REMOVALS = frozenset((KV_DEL, KV_PURGE))


#: How long the first write waits before it is tried again on a bucket not taking writes yet.
_BUCKET_NOT_READY_PAUSE_SECONDS = 0.05


class Registration:
    """One worker instance's entry in the registry, kept alive by a heartbeat until ``close``."""

    def __init__(
        self, url: str, record: AgentRecord, *, bucket: str, ttl: float, replicas: int, heartbeat: float
    ) -> None:
        self._url = url
        self.record = record
        self._bucket = bucket
        self._ttl = ttl
        self._replicas = replicas
        self._heartbeat = heartbeat
        self._nc: NatsClient | None = None
        self._kv: KeyValue | None = None
        self._task: asyncio.Task[None] | None = None
        self._beat_now = asyncio.Event()
        #: Why heartbeats are failing, from the first failure until one succeeds; None while they work.
        self.failing: str | None = None
        self._failing_since = 0.0
        #: Heartbeats written since the start (the first write included).
        self.beats = 0

    @classmethod
    def of_server(cls, config: ServerSettings) -> tuple[Registration, ...]:
        """The registrations of ``serve``'s agents (``config.registry_nats`` is the registry's URL): its one
        agent, or each agent of its routing table that runs in it (``route_records``), all as one instance.
        Each keeps its own connection and heartbeat, so an agent's entry lives and expires on its own."""
        if not config.registry_nats:
            raise ValueError("registry_nats: no NATS URL of an agent registry")
        started = now()
        records = route_records(config, instance_id=new_instance_id(), started_at=started, heartbeat_at=started)
        return tuple(cls.for_record(config.registry_nats, record, config) for record in records)

    @classmethod
    def for_record(cls, url: str, record: AgentRecord, config: ServerSettings) -> Registration:
        """``record``'s registration at the broker ``url``, in the bucket, with the TTL, replicas and
        heartbeat ``config`` gives."""
        return cls(
            url,
            record,
            bucket=config.registry_bucket,
            ttl=config.registry_ttl_seconds,
            replicas=config.nats_replicas,
            heartbeat=config.registry_heartbeat_seconds,
        )

    async def start(self) -> None:
        """Connect, write the entry and start the heartbeat; raises if the broker cannot be reached now."""
        self._nc = await connect(self._url, reconnected_cb=self._reconnected)
        try:
            timeout = min(REQUEST_TIMEOUT_SECONDS, self._heartbeat)
            self._kv, _ = await open_bucket(
                self._nc,
                self._bucket,
                ttl=self._ttl,
                replicas=self._replicas,
                timeout=timeout,
                role="agent registry",
            )
            await self._first_write(timeout)
        except BaseException:
            await self._nc.close()  # it would otherwise go on reconnecting for ever
            raise
        self._task = asyncio.create_task(self._beat(), name="e2a-registry-heartbeat")
        self._task.add_done_callback(self._on_task_done)
        log.info(
            "registered agent %r (instance %s) in the agent registry %s at %s",
            self.record.agent_id,
            self.record.instance_id,
            self._bucket,
            self._url,
        )

    async def close(self) -> None:
        """Stop the heartbeat and delete the entry (a clean stop); with the broker away, the entry is
        left to expire with the TTL. Closing again does nothing."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait((self._task,))
        if self._kv is not None and self._nc is not None:
            try:
                if self.failing is not None or not self._nc.is_connected:
                    # Not waiting on a broker that is away: the stop's grace is the drain's.
                    raise ConnectionError(self.failing or "disconnected from the broker")
                async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
                    await self._kv.delete(self.record.key)
            except BROKER_ERRORS as exc:
                log.warning(
                    "could not delete the registry entry of agent %r (%s): it expires within %g s",
                    self.record.agent_id,
                    str(exc) or error_text(exc),
                    self._ttl,
                )
            else:
                log.info(
                    "agent %r (instance %s) left the agent registry", self.record.agent_id, self.record.instance_id
                )
        if self._nc is not None:
            with contextlib.suppress(OSError, nats.errors.Error):  # closing a lost connection raises
                await self._nc.close()
        self._task = self._kv = self._nc = None  # closed: closing again does nothing

    async def _first_write(self, timeout: float) -> None:
        """The entry's first write. A bucket just created on a cluster may refuse writes for a moment
        (nats-py's NoStreamResponseError: its leader's interest has not reached the node this process is
        connected to yet), so that one is written again within ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                await self._write()
                return
            except nats.js.errors.NoStreamResponseError:
                if loop.time() >= deadline:
                    raise
            await asyncio.sleep(_BUCKET_NOT_READY_PAUSE_SECONDS)

    async def _write(self) -> None:
        assert self._kv is not None
        self.record = self.record.model_copy(update={"heartbeat_at": now()})
        await self._kv.put(self.record.key, self.record.to_json())
        self.beats += 1

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            with contextlib.suppress(TimeoutError):  # the heartbeat's time came, or a reconnection
                async with asyncio.timeout(self._heartbeat):
                    await self._beat_now.wait()
            self._beat_now.clear()
            try:
                await self._write()
            except BROKER_ERRORS as exc:
                if self.failing is None:
                    self.failing = error_text(exc)
                    self._failing_since = loop.time()
                    log.warning(
                        "agent registry heartbeat failing (%s): the entry of agent %r expires %g s after its last "
                        "heartbeat unless the broker answers again",
                        self.failing,
                        self.record.agent_id,
                        self._ttl,
                    )
                continue
            if self.failing is not None:
                log.info(
                    "agent registry heartbeat recovered after %.1f s: agent %r registered again",
                    loop.time() - self._failing_since,
                    self.record.agent_id,
                )
                self.failing = None

    async def _reconnected(self) -> None:
        self._beat_now.set()

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error(
                "the agent registry heartbeat stopped on a bug: the entry of agent %r expires within %g s",
                self.record.agent_id,
                self._ttl,
                exc_info=exc,
            )


@dataclass(frozen=True)
class LiveAgent:
    """An agent of the registry: the entry of one of its workers (the most recently started), and
    how many workers it has."""

    record: AgentRecord
    workers: int


class RegistryEntries:
    """The live entries of the registry as a watch delivers them (``apply``), by agent: a value that is
    not a record of its key is skipped (logged), a delete or purge removes its key, and an entry whose
    heartbeat is older than the bucket's TTL is dropped when read (the broker's own expiry sends no
    delete marker on nats-server 2.9)."""

    def __init__(self, ttl: float) -> None:
        self._ttl = ttl
        #: agent token -> key -> record
        self._by_agent: dict[str, dict[str, AgentRecord]] = {}

    def apply(self, entry: KeyValue.Entry) -> bool:
        """Take one update of the watch; True when it added, replaced or removed a worker's entry. A value
        that is not a record ends the key's entry as a removal does. Entries of the agent that expired
        go too, so that a gateway keeps no entry of workers killed long ago."""
        token, _, _ = entry.key.partition(".")
        record = None if entry.operation in _REMOVALS else _record_of(entry.key, entry.value)
        if record is None:
            if (workers := self._by_agent.get(token)) is None or workers.pop(entry.key, None) is None:
                return False
            if not workers:
                del self._by_agent[token]
            return True
        workers = self._by_agent.setdefault(token, {})
        workers[entry.key] = record
        self._unexpired(token, workers, now())
        return True

    def workers(self, agent_id: str) -> list[AgentRecord]:
        """The live worker entries of ``agent_id``, oldest start first."""
        token = key_token(agent_id)
        if (workers := self._by_agent.get(token)) is None:
            return []
        live = self._unexpired(token, workers, now())
        return sorted(live, key=_started)

    def agents(self) -> list[LiveAgent]:
        """Every agent with a live worker, by agent id."""
        moment = now()
        return live_agents(
            record
            for token, workers in list(self._by_agent.items())
            for record in self._unexpired(token, workers, moment)
        )

    def _unexpired(self, token: str, workers: dict[str, AgentRecord], moment: datetime.datetime) -> list[AgentRecord]:
        for key in [key for key, record in workers.items() if expired(record.heartbeat_at, self._ttl, moment)]:
            del workers[key]
        if not workers:
            self._by_agent.pop(token, None)
        return list(workers.values())


async def read_current(watcher: KeyValue.KeyWatcher, entries: RegistryEntries) -> None:
    """Apply a new watch's first updates, the last value of every key, up to its marker (None) that
    they are all in; raises ConnectionError when the watch is stopped before."""
    async for entry in watcher:
        if entry is None:
            return
        entries.apply(entry)
    raise ConnectionError("the watch of the agent registry stopped before it delivered the current entries")


class AgentRegistry:
    """The live entries of the registry, read on demand (``open``, then ``agents`` or ``workers``)."""

    def __init__(self, nc: NatsClient, kv: KeyValue | None, *, ttl: float) -> None:
        self._nc = nc
        self._kv = kv
        self._ttl = ttl

    @classmethod
    async def open(cls, url: str, *, bucket: str) -> AgentRegistry:
        """The registry at ``url``; raises NoServersError (or OSError) when no broker can be reached.
        A bucket that does not exist yet is an empty registry."""
        nc = await connect(url)
        try:
            kv = await nc.jetstream(timeout=REQUEST_TIMEOUT_SECONDS).key_value(bucket)
            ttl = (await kv.status()).ttl
        except nats.js.errors.BucketNotFoundError:
            kv, ttl = None, None
        except BaseException:
            await nc.close()
            raise
        return cls(nc, kv, ttl=ttl or math.inf)  # a bucket without a TTL keeps its entries

    async def close(self) -> None:
        with contextlib.suppress(OSError, nats.errors.Error):
            await self._nc.close()

    async def workers(self, agent_id: str) -> list[AgentRecord]:
        """The live worker entries of ``agent_id``, oldest start first (none: the agent has no live
        worker, for a gateway UNAVAILABLE)."""
        return (await self._entries(agent_keys(agent_id))).workers(agent_id)

    async def agents(self) -> list[LiveAgent]:
        """Every agent with a live worker, by agent id."""
        return (await self._entries(">")).agents()

    async def _entries(self, keys: str) -> RegistryEntries:
        entries = RegistryEntries(self._ttl)
        if self._kv is None:
            return entries
        async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
            watcher = await self._kv.watch(keys)
            try:
                await read_current(watcher, entries)
            finally:
                await watcher.stop()  # type: ignore[no-untyped-call]  # nats-py's KeyWatcher is untyped
        return entries


def _record_of(key: str, value: bytes | None) -> AgentRecord | None:
    """An entry's record, or None (logged) when its value is not one or does not match its key."""
    try:
        record = AgentRecord.from_json(value or b"")
    except pydantic.ValidationError as exc:
        log.warning(
            "agent registry entry %s skipped: not an agent record of schema 1 (%d errors)", key, exc.error_count()
        )
        return None
    if record.key != key:
        log.warning(
            "agent registry entry %s skipped: its value is instance %s of agent %r",
            key,
            record.instance_id,
            record.agent_id,
        )
        return None
    return record


def live_agents(records: Iterable[AgentRecord]) -> list[LiveAgent]:
    """Worker entries grouped by agent id, each agent shown by its most recently started worker."""
    by_agent: dict[str, list[AgentRecord]] = {}
    for record in records:
        by_agent.setdefault(record.agent_id, []).append(record)
    return [
        LiveAgent(record=max(workers, key=_started), workers=len(workers)) for _, workers in sorted(by_agent.items())
    ]


def _started(record: AgentRecord) -> datetime.datetime:
    return record.started_at
