"""A gateway's live view of the agent registry (``broker.live_agents``) against a real nats-server:
workers seen as they register, heartbeat and leave; an entry its process stopped writing expires
from the view by its heartbeat and the bucket's TTL (the broker's own expiry tells no watch); the
view watches again after a broker restart, and says so once."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import uuid
from pathlib import Path

import nats
import pytest

from e2a_grpc.broker.agent_records import AgentRecord, now
from e2a_grpc.broker.agent_registry import Registration
from e2a_grpc.broker.live_agents import LiveAgents
from tests.support.log_records import log_records
from tests.support.nats_server import NatsServer, running_nats_server
from tests.support.registry_entries import HEARTBEAT, TTL, short_lived_registration, worker_record
from tests.support.waiting import within

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio]


def _bucket() -> str:
    """A bucket of the test's own, so that its TTL and entries are its own."""
    return f"LIVE_{uuid.uuid4().hex[:12]}"


async def _until(live: LiveAgents, agent_id: str, count: int) -> list[AgentRecord]:
    """The workers of ``agent_id`` once the view has ``count`` of them (each change is an event)."""
    while len(workers := live.workers(agent_id)) != count:
        await within(live.changed())
    return workers


async def _put(url: str, bucket: str, record: AgentRecord) -> None:
    """Write an entry as a worker does, once: what a worker killed after its heartbeat leaves."""
    nc = await nats.connect(url)
    try:
        await (await nc.jetstream().key_value(bucket)).put(record.key, record.to_json())
    finally:
        await nc.close()


async def _registered(stack: contextlib.AsyncExitStack, registration: Registration) -> Registration:
    """``registration`` started, and closed when ``stack`` closes (if the test has not closed it)."""
    await registration.start()
    stack.push_async_callback(registration.close)
    return registration


async def _view(stack: contextlib.AsyncExitStack, url: str, bucket: str, ttl: float = TTL) -> LiveAgents:
    live = await LiveAgents.open(url, bucket=bucket, ttl=ttl, replicas=1)
    stack.push_async_callback(live.close)
    return live


async def test_the_view_sees_workers_register_heartbeat_and_leave(broker: NatsServer) -> None:
    bucket = _bucket()
    async with contextlib.AsyncExitStack() as stack:
        early = await _registered(stack, short_lived_registration(broker.url, bucket, "coder"))
        live = await _view(stack, broker.url, bucket)
        # Entries written before the view opened are in it from the start.
        assert [worker.instance_id for worker in live.workers("coder")] == [early.record.instance_id]
        late = await _registered(stack, short_lived_registration(broker.url, bucket, "coder"))
        other = await _registered(stack, short_lived_registration(broker.url, bucket, "echo"))
        workers = await _until(live, "coder", 2)
        await _until(live, "echo", 1)
        assert [worker.instance_id for worker in workers] == [early.record.instance_id, late.record.instance_id]
        assert [(agent.record.agent_id, agent.workers) for agent in live.agents()] == [("coder", 2), ("echo", 1)]
        # Heartbeats replace the entry: the view follows them past the TTL.
        first_seen = live.workers("echo")[0].heartbeat_at
        while (worker := live.workers("echo")[0]).heartbeat_at - first_seen < datetime.timedelta(seconds=2 * TTL):
            await within(live.changed())
        assert worker.instance_id == other.record.instance_id
        await early.close()
        assert [worker.instance_id for worker in await _until(live, "coder", 1)] == [late.record.instance_id]
        await late.close()
        await other.close()
        await _until(live, "coder", 0)
        await _until(live, "echo", 0)
        assert live.agents() == []


async def test_an_entry_no_longer_written_expires_from_the_view_by_itself(broker: NatsServer) -> None:
    bucket = _bucket()
    async with contextlib.AsyncExitStack() as stack:
        live = await _view(stack, broker.url, bucket)
        killed = worker_record("silent")
        await _put(broker.url, bucket, killed)
        (seen,) = await _until(live, "silent", 1)
        assert seen == killed
        # No event comes when the TTL passes (nats-server 2.9 removes the entry without a delete marker):
        # wait for the instant the entry's heartbeat expires, then ask.
        expiry = killed.heartbeat_at + datetime.timedelta(seconds=TTL)
        await asyncio.sleep((expiry - now()).total_seconds() + 0.05)
        assert live.workers("silent") == []
        assert live.agents() == []
        # An entry whose heartbeat is already older than the TTL is never live.
        await _put(broker.url, bucket, worker_record("stale", heartbeat_at=now() - datetime.timedelta(seconds=2 * TTL)))
        fresh = worker_record("stale")
        await _put(broker.url, bucket, fresh)
        (worker,) = await _until(live, "stale", 1)
        assert worker.instance_id == fresh.instance_id


async def test_waiting_for_workers_returns_the_first_to_register_or_none(broker: NatsServer) -> None:
    bucket = _bucket()
    async with contextlib.AsyncExitStack() as stack:
        live = await _view(stack, broker.url, bucket)
        assert await live.wait_for_workers("nobody", 0.05) == []
        waiting = asyncio.create_task(live.wait_for_workers("later", 10))
        registration = await _registered(stack, short_lived_registration(broker.url, bucket, "later"))
        (worker,) = await within(waiting)
        assert worker.instance_id == registration.record.instance_id


async def test_the_view_creates_a_missing_bucket_with_its_ttl(broker: NatsServer) -> None:
    bucket = _bucket()
    async with contextlib.AsyncExitStack() as stack:
        live = await _view(stack, broker.url, bucket, ttl=7.0)
        assert live.agents() == []
        nc = await nats.connect(broker.url)
        stack.push_async_callback(nc.close)
        assert (await (await nc.jetstream().key_value(bucket)).status()).ttl == 7.0


async def test_the_view_watches_again_after_a_broker_restart_and_says_so_once(tmp_path: Path) -> None:
    with running_nats_server(tmp_path / "jetstream") as broker:
        bucket = _bucket()
        async with contextlib.AsyncExitStack() as stack:
            # A TTL that outlives the restart, so that what the view holds is what the broker kept.
            kept = await _registered(
                stack,
                Registration(
                    broker.url, worker_record("kept"), bucket=bucket, ttl=60.0, replicas=1, heartbeat=HEARTBEAT
                ),
            )
            live = await _view(stack, broker.url, bucket, ttl=60.0)
            with log_records(lambda record: "watching bucket" in record.getMessage()) as logs:
                await asyncio.to_thread(broker.restart)  # (same port, same JetStream directory)
                await within(logs.seen.wait(), 30)
                # The new watch delivers the kept entry again, then the changes made after the restart.
                joined = await _registered(
                    stack,
                    Registration(
                        broker.url, worker_record("joined"), bucket=bucket, ttl=60.0, replicas=1, heartbeat=HEARTBEAT
                    ),
                )
                (worker,) = await within(live.wait_for_workers("joined", 30), 35)
                assert worker.instance_id == joined.record.instance_id
                await kept.close()
                await _until(live, "kept", 0)
                await joined.close()
                await _until(live, "joined", 0)
            (line,) = logs.matching(logging.INFO, "after a reconnection")
            assert bucket in line
            assert live.rewatches == 1
            assert not logs.at_least(logging.ERROR), logs.at_least(logging.ERROR)
