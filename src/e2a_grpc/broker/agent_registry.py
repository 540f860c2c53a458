"""The agent registry on a JetStream key-value bucket (nats-py, the ``nats`` extra).

``Registration`` keeps one worker instance's entry alive: written at start, written again every
heartbeat, deleted on a clean stop; a process killed without a stop leaves it to expire with the
bucket's TTL. ``AgentRegistry`` reads the live entries: every agent with its worker count (``e2a-grpc
agents``), or the workers of one agent id (what a gateway routes by). Entries are ``agent_records``.

The TTL is the bucket's ``max_age`` (every entry expires that long after it was last written), not
a per-key TTL: those need nats-server 2.11 and a stream with ``allow_msg_ttl``, while Debian's
package is 2.9 and a bucket-wide TTL is what the registry needs (every entry lives by the same
heartbeat). The bucket is created with the TTL of the server that creates it first; a server whose
TTL differs says so once and keeps the bucket's (docs/agent-registry.md).

A broker outage during the heartbeats is one WARNING at the first failed heartbeat and one INFO at
the first one that succeeds again; the server goes on serving meanwhile. A reconnection writes the
entry at once, as it may have expired during the outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Iterable
from dataclasses import dataclass

import nats.errors
import nats.js.errors
import pydantic
from nats.aio.client import Client as NatsClient
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from e2a_grpc.broker.agent_records import AgentRecord, agent_keys, new_instance_id, now, server_record
from e2a_grpc.broker.connection import JetStreamSetupError, connect
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)

#: The longest a registry request (a write, a delete, reading the entries) waits for JetStream.
REQUEST_TIMEOUT_SECONDS = 5.0
#: What a registry request raises when the broker is away or does not answer in time.
_BROKER_ERRORS = (nats.errors.Error, OSError, TimeoutError)


async def open_bucket(nc: NatsClient, bucket: str, *, ttl: float, replicas: int, timeout: float) -> KeyValue:
    """The registry's bucket, created with ``ttl`` and ``replicas`` (file storage, one value per key) if
    missing; several servers may race to create it. An existing bucket keeps its own TTL and replicas, with
    a WARNING for each that differs from the configured one."""
    js = nc.jetstream(timeout=timeout)
    try:
        kv = await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        config = KeyValueConfig(bucket=bucket, history=1, ttl=ttl, storage=StorageType.FILE, replicas=replicas)
        try:
            return await js.create_key_value(config)
        except nats.js.errors.BadRequestError:
            return await js.key_value(bucket)  # another server created it first; anything else fails here
        except nats.js.errors.APIError as exc:
            raise JetStreamSetupError.refused("key-value bucket", bucket, replicas, exc) from exc
    status = await kv.status()
    bucket_ttl = status.ttl
    if bucket_ttl != ttl:
        log.warning(
            "the agent registry's bucket %s has a TTL of %s, not the %g s configured: entries expire with the "
            "bucket's (it is set by whoever creates the bucket)",
            bucket,
            f"{bucket_ttl:g} s" if bucket_ttl else "none",
            ttl,
        )
    if (bucket_replicas := status.stream_info.config.num_replicas or 1) != replicas:
        log.warning(
            "the agent registry's bucket %s has %d replicas, not the %d configured: it is kept as it is (replicas "
            "are set by whoever creates the bucket)",
            bucket,
            bucket_replicas,
            replicas,
        )
    return kv


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
    def from_settings(cls, config: ServerSettings) -> Registration:
        """The registration of ``serve``'s agent (``config.registry_nats`` is the registry's URL)."""
        if not config.registry_nats:
            raise ValueError("registry_nats: no NATS URL of an agent registry")
        started = now()
        record = server_record(config, instance_id=new_instance_id(), started_at=started, heartbeat_at=started)
        return cls(
            config.registry_nats,
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
            self._kv = await open_bucket(
                self._nc, self._bucket, ttl=self._ttl, replicas=self._replicas, timeout=timeout
            )
            await self._write()
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
        left to expire with the TTL."""
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
            except _BROKER_ERRORS as exc:
                log.warning(
                    "could not delete the registry entry of agent %r (%s): it expires within %g s",
                    self.record.agent_id,
                    exc or repr(exc),
                    self._ttl,
                )
            else:
                log.info(
                    "agent %r (instance %s) left the agent registry", self.record.agent_id, self.record.instance_id
                )
        if self._nc is not None:
            with contextlib.suppress(OSError, nats.errors.Error):  # closing a lost connection raises
                await self._nc.close()

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
            except _BROKER_ERRORS as exc:
                if self.failing is None:
                    self.failing = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
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


class AgentRegistry:
    """The live entries of the registry, read on demand (``open``, then ``agents`` or ``workers``)."""

    def __init__(self, nc: NatsClient, kv: KeyValue | None) -> None:
        self._nc = nc
        self._kv = kv

    @classmethod
    async def open(cls, url: str, *, bucket: str) -> AgentRegistry:
        """The registry at ``url``; raises NoServersError (or OSError) when no broker can be reached.
        A bucket that does not exist yet is an empty registry."""
        nc = await connect(url)
        try:
            kv = await nc.jetstream(timeout=REQUEST_TIMEOUT_SECONDS).key_value(bucket)
        except nats.js.errors.BucketNotFoundError:
            kv = None
        except BaseException:
            await nc.close()
            raise
        return cls(nc, kv)

    async def close(self) -> None:
        with contextlib.suppress(OSError, nats.errors.Error):
            await self._nc.close()

    async def workers(self, agent_id: str) -> list[AgentRecord]:
        """The live worker entries of ``agent_id``, oldest start first (none: the agent has no live
        worker, for a gateway UNAVAILABLE)."""
        return sorted(await self._entries(agent_keys(agent_id)), key=_started)

    async def agents(self) -> list[LiveAgent]:
        """Every agent with a live worker, by agent id."""
        return live_agents(await self._entries(">"))

    async def _entries(self, keys: str) -> list[AgentRecord]:
        if self._kv is None:
            return []
        records = []
        async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
            watcher = await self._kv.watch(keys, ignore_deletes=True)
            try:
                # The watch delivers the last value of every key, then None: the entries as of now.
                while (entry := await watcher.updates(timeout=REQUEST_TIMEOUT_SECONDS)) is not None:  # type: ignore[no-untyped-call]
                    if (record := _record_of(entry.key, entry.value)) is not None:
                        records.append(record)
            finally:
                await watcher.stop()  # type: ignore[no-untyped-call]  # nats-py's KeyWatcher is untyped
        return records


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
