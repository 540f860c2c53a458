"""The agent bus's requests stream (nats-py, the ``nats`` extra; docs/agent-bus.md)."""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig

from e2a_grpc.broker import jetstream_setup
from e2a_grpc.settings import NATS_DUPLICATE_WINDOW_SECONDS, ServerSettings


async def ensure_requests_stream(js: JetStreamContext, config: ServerSettings) -> None:
    """The requests' work-queue stream (file storage, request-id de-duplication, bounded age, ``nats_replicas``
    copies), created unless it exists; gateways and workers may race to (``jetstream_setup``)."""
    stream = StreamConfig(
        name=config.bus_requests_stream,
        subjects=[f"{config.bus_requests_subject_prefix}.>"],
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        duplicate_window=NATS_DUPLICATE_WINDOW_SECONDS,
        max_age=config.bus_requests_max_age_seconds,
        num_replicas=config.nats_replicas,
    )
    await jetstream_setup.ensure_stream(js, stream, kind="requests' stream")
