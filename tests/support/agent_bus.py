"""The agent bus's own parts in a test (nats-py, the ``nats`` extra): a worker for the span of an
``async with``, the wait for a worker process to register, the requests the broker still holds, and
a request's frames read back from the frame stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from e2a_grpc.broker import stream_reader
from e2a_grpc.broker.agent_worker import AgentWorker
from e2a_grpc.broker.live_agents import LiveAgents
from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.model import E2AResponse
from e2a_grpc.settings import AgentWorkerSettings
from tests.support.nats_server import stored_messages

#: How long a worker process may take to start and register.
WORKER_STARTUP_SECONDS = 30.0
#: Between two looks at the requests the broker holds (its redeliveries and drops are its own timers').
_REQUESTS_POLL_SECONDS = 0.05


@contextlib.asynccontextmanager
async def running_worker(config: AgentWorkerSettings, backend: AgentBackend) -> AsyncIterator[AgentWorker]:
    """An ``AgentWorker`` of ``config`` running ``backend``, stopped (drained) on leaving."""
    worker = AgentWorker(config, backend)
    await worker.start()
    try:
        yield worker
    finally:
        await worker.stop(config.grace_seconds)


async def live_worker(config: AgentWorkerSettings) -> None:
    """Return once a worker of ``config.agent_id`` is in the registry (its process has started)."""
    assert config.bus_nats is not None
    live = await LiveAgents.open(
        config.bus_nats,
        bucket=config.registry_bucket,
        ttl=config.registry_ttl_seconds,
        replicas=config.nats_replicas,
    )
    try:
        assert await live.wait_for_workers(config.agent_id, WORKER_STARTUP_SECONDS)
    finally:
        await live.close()


async def requests_left(url: str, config: AgentWorkerSettings) -> int:
    """How many requests of ``config``'s stream the broker at ``url`` still holds (taken ones included)."""
    return await stored_messages(url, config.bus_requests_stream, f"{config.bus_requests_subject_prefix}.>")


async def until_no_requests_left(url: str, config: AgentWorkerSettings) -> None:
    """Return once the broker holds no request (each acked, dropped or terminated by a worker). Polled:
    a redelivery or a drop has no event to await here; bound it with ``within``."""
    while await requests_left(url, config):
        await asyncio.sleep(_REQUESTS_POLL_SECONDS)


async def stored_frames(
    url: str, config: AgentWorkerSettings, request_id: str, *, idle_timeout: float
) -> list[E2AResponse]:
    """The frames of ``request_id`` the broker's frame stream holds, read to its final one."""
    frames = stream_reader.read_streams(
        url,
        stream=config.nats_stream,
        subject_prefix=config.nats_subject_prefix,
        request_id=request_id,
        idle_timeout=idle_timeout,
    )
    return [frame async for frame in frames]
