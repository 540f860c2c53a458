"""Agent registry entries for the registry's tests (nats-py, the ``nats`` extra): a worker's record
and its registration with a short TTL and heartbeat, in a bucket the test names (its own, so that
its TTL and entries are its own)."""

from __future__ import annotations

import datetime

from e2a_grpc.broker.agent_records import SCHEMA_VERSION, AgentRecord, new_instance_id, now
from e2a_grpc.broker.agent_registry import Registration

#: The shortest TTL the settings allow, and a heartbeat well within it.
TTL = 1.0
HEARTBEAT = 0.2


def worker_record(agent_id: str, *, heartbeat_at: datetime.datetime | None = None) -> AgentRecord:
    """An echo worker's entry of ``agent_id``, a new instance started now."""
    started = now()
    return AgentRecord(
        schema_version=SCHEMA_VERSION,
        agent_id=agent_id,
        name=f"{agent_id} agent",
        description="answers in tests",
        skills=(),
        input_modes=("text/plain",),
        output_modes=("text/plain",),
        backend="echo",
        version="0.0.0",
        instance_id=new_instance_id(),
        started_at=started,
        heartbeat_at=heartbeat_at or started,
    )


def short_lived_registration(url: str, bucket: str, agent_id: str) -> Registration:
    """A new worker of ``agent_id`` registering in ``bucket`` with ``TTL`` and ``HEARTBEAT``."""
    return Registration(url, worker_record(agent_id), bucket=bucket, ttl=TTL, replicas=1, heartbeat=HEARTBEAT)


#: A TTL no test outlives, for tests of what the registry holds: a heartbeat late on a loaded machine
#: then expires nothing (with ``TTL``, one late by a second would, on the broker and in every reader).
LASTING_TTL = 60.0


def lasting_registration(url: str, bucket: str, agent_id: str) -> Registration:
    """A new worker of ``agent_id`` registering in ``bucket`` with ``LASTING_TTL``."""
    return Registration(url, worker_record(agent_id), bucket=bucket, ttl=LASTING_TTL, replicas=1, heartbeat=HEARTBEAT)
