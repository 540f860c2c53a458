"""The broker path on a three-node JetStream cluster (tests/support/nats_server.py ``NatsCluster``):
``serve --publish-nats <the three URLs>`` with ``--nats-replicas 3`` (E2AServer in process) publishes
to an R3 stream, and a node killed mid-stream (the one the publisher is connected to, the stream's
leader, a follower) costs no frame: the stream read back has every frame once, in order, ending with
its final frame. The agent registry on an R3 bucket keeps its entries and heartbeats through a node
kill. A stream or bucket that exists with other replicas is kept, with one WARNING; replicas the
broker cannot have are one clear error."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import sys
import time
import uuid

import grpc
import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.js.api import ClusterInfo

from e2a_grpc.broker import stream_reader
from e2a_grpc.broker.agent_records import AgentRecord
from e2a_grpc.broker.agent_registry import AgentRegistry, Registration
from e2a_grpc.broker.frame_publisher import FramePublisher
from e2a_grpc.broker.jetstream_setup import JetStreamSetupError
from e2a_grpc.cli.exits import EXIT_FAILED
from e2a_grpc.settings import ServerSettings
from tests.broker.test_jetstream import PhasedBackend, _chat, _request
from tests.conftest import in_process_server
from tests.support.log_records import log_records
from tests.support.nats_server import (
    CLUSTER_SIZE,
    NatsCluster,
    NatsServer,
    stored_messages,
    wait_stream_current,
)
from tests.support.processes import REPO_ROOT, running_server
from tests.support.registry_entries import worker_record
from tests.support.waiting import within

pytestmark = [pytest.mark.timeout(180), pytest.mark.asyncio, pytest.mark.cluster]
DEFAULTS = ServerSettings()
STREAM, PREFIX = DEFAULTS.nats_stream, DEFAULTS.nats_subject_prefix
WORDS_PER_PHASE = 60
#: Bounds the wait for a node's replicas to catch up, or for a new leader after a node kill.
FAILOVER_TIMEOUT_SECONDS = 30.0
#: A TTL long enough that no entry expires while a node is down (the heartbeat must keep it, not the TTL).
REGISTRY_TTL = 30.0
#: Long enough for an R3 bucket to be created within it (the registration's JetStream timeout at start).
REGISTRY_HEARTBEAT = 2.0


def _node_named(cluster: NatsCluster, info: ClusterInfo | None) -> NatsServer:
    """The node that leads a stream or consumer (the nodes are named n0, n1, n2 in order)."""
    assert info is not None and info.leader is not None
    return cluster.nodes[int(info.leader.removeprefix("n"))]


async def _stream_leader(cluster: NatsCluster, stream: str) -> NatsServer:
    nc = await nats.connect(cluster.urls)
    try:
        return _node_named(cluster, (await nc.jetstream(timeout=5).stream_info(stream)).cluster)
    finally:
        await nc.close()


async def _consumer_leader(cluster: NatsCluster, stream: str) -> NatsServer:
    """The node of the one consumer of ``stream`` (a reader's ephemeral consumer, on one node)."""
    nc = await nats.connect(cluster.urls)
    try:
        (consumer,) = await nc.jetstream(timeout=5).consumers_info(stream)
        return _node_named(cluster, consumer.cluster)
    finally:
        await nc.close()


async def _replicas(cluster: NatsCluster, stream: str) -> int:
    nc = await nats.connect(cluster.urls)
    try:
        return (await nc.jetstream(timeout=5).stream_info(stream)).config.num_replicas or 1
    finally:
        await nc.close()


async def _victim(cluster: NatsCluster, which: str, connected: NatsServer, stream: str) -> NatsServer:
    """The node a test kills: the one the client is ``connected`` to, the stream's ``leader``, or a
    ``follower`` (a replica that is neither)."""
    leader = await _stream_leader(cluster, stream)
    if which == "connected":
        return connected
    if which == "leader":
        return leader
    return next(node for node in cluster.nodes if node not in (leader, connected))


def _connected_node(cluster: NatsCluster, nc: NatsClient | None) -> NatsServer:
    assert nc is not None and nc.connected_url is not None
    return cluster.node_of(f"nats://{nc.connected_url.netloc}")


@pytest.mark.parametrize("which", ["connected", "leader", "follower"])
async def test_a_node_killed_mid_stream_costs_no_frame(cluster: NatsCluster, which: str) -> None:
    backend = PhasedBackend(phases=3, words_per_phase=WORDS_PER_PHASE)
    request_id = f"killed-{which}"
    async with (
        in_process_server(backend, publish_nats=cluster.url, nats_replicas=CLUSTER_SIZE) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        publisher = running.server.publisher
        assert publisher is not None
        assert await _replicas(cluster, STREAM) == CLUSTER_SIZE
        # A reader live through the kill, besides the one that reads the stored stream afterwards.
        live = asyncio.create_task(_read(cluster, request_id))
        chat = asyncio.create_task(_chat(channel, _request(request_id, 1)))
        backend.go[0].set()
        await within(backend.phase_done[0].wait())
        victim = await _victim(cluster, which, _connected_node(cluster, publisher._nc), STREAM)
        await asyncio.to_thread(victim.kill)  # frames of phase 0 may still wait for their acks ...
        backend.go[1].set()
        await within(backend.phase_done[1].wait())  # ... and phase 1's are written with the node gone
        backend.go[2].set()
        sent = await within(chat)
        await within(publisher.flush(), FAILOVER_TIMEOUT_SECONDS)  # every frame acknowledged by the cluster
        assert publisher.dropped == publisher.stood_in == 0
    assert len(sent) == 3 * WORDS_PER_PHASE + 1
    assert await within(live, FAILOVER_TIMEOUT_SECONDS) == sent
    assert await _read(cluster, request_id) == sent  # each frame once, in order, ending with the final one
    assert await stored_messages(cluster.url, STREAM, _subjects(request_id)) == len(sent)
    # The node comes back, catches up, and the stream is whole on every replica again.
    await asyncio.to_thread(victim.start)
    await wait_stream_current(cluster.urls, STREAM, CLUSTER_SIZE - 1, FAILOVER_TIMEOUT_SECONDS)


async def test_a_reader_whose_consumer_node_is_killed_resumes_on_a_new_consumer(cluster: NatsCluster) -> None:
    backend = PhasedBackend(phases=2, words_per_phase=WORDS_PER_PHASE)
    request_id = "reader-node-killed"
    async with (
        in_process_server(backend, publish_nats=cluster.url, nats_replicas=CLUSTER_SIZE) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        frames = stream_reader.read_streams(
            cluster.url, stream=STREAM, subject_prefix=PREFIX, request_id=request_id, idle_timeout=60.0
        )
        chat = asyncio.create_task(_chat(channel, _request(request_id, 1)))
        backend.go[0].set()
        first = await within(anext(frames))  # the reader's consumer exists now ...
        await asyncio.to_thread((await _consumer_leader(cluster, STREAM)).kill)  # ... and its node is gone
        backend.go[1].set()
        sent = await within(chat)

        async def rest() -> list[str]:
            return [frame.to_json() async for frame in frames]

        # Within the reader's check of its consumer, a failover and the fetches that follow.
        read = [first.to_json(), *await within(rest(), 2 * FAILOVER_TIMEOUT_SECONDS)]
    assert read == sent


def _subjects(request_id: str) -> str:
    return stream_reader.streams_filter(PREFIX, request_id=request_id)


async def _read(cluster: NatsCluster, request_id: str) -> list[str]:
    frames = stream_reader.read_streams(
        cluster.url, stream=STREAM, subject_prefix=PREFIX, request_id=request_id, idle_timeout=60.0
    )
    return [frame.to_json() async for frame in frames]


async def _stored_after(urls: list[str], bucket: str, agent_id: str, after: AgentRecord) -> AgentRecord:
    """The worker entry of ``agent_id`` once the registry (read through ``urls``) holds a heartbeat written
    after ``after``'s. Polled: what the cluster has stored after a failover is its own doing, and until it
    has elected the bucket's new leader a read may time out (asked again)."""
    deadline = time.monotonic() + 2 * FAILOVER_TIMEOUT_SECONDS
    while True:
        with contextlib.suppress(nats.errors.Error, TimeoutError):
            registry = await AgentRegistry.open(",".join(urls), bucket=bucket)
            try:
                workers = await registry.workers(agent_id)
            finally:
                await registry.close()
            if workers and workers[0].heartbeat_at > after.heartbeat_at:
                (worker,) = workers
                return worker
        assert time.monotonic() < deadline, f"no heartbeat of {agent_id} stored after the node kill"
        await asyncio.sleep(REGISTRY_HEARTBEAT / 4)


@pytest.mark.parametrize("which", ["connected", "leader"])
async def test_the_registry_on_r3_keeps_its_entries_and_heartbeats_through_a_node_kill(
    cluster: NatsCluster, which: str
) -> None:
    bucket = f"AGENTS_{uuid.uuid4().hex[:12]}"
    registration = Registration(
        cluster.url,
        worker_record("clustered"),
        bucket=bucket,
        ttl=REGISTRY_TTL,
        replicas=CLUSTER_SIZE,
        heartbeat=REGISTRY_HEARTBEAT,
    )
    await registration.start()
    try:
        assert await _replicas(cluster, f"KV_{bucket}") == CLUSTER_SIZE
        kv_stream = f"KV_{bucket}"
        victim = await _victim(cluster, which, _connected_node(cluster, registration._nc), kv_stream)
        killed_at = registration.record
        await asyncio.to_thread(victim.kill)
        survivors = [node.url for node in cluster.nodes if node is not victim]
        # The heartbeat goes on through the failover: the entry is there, written after the kill.
        worker = await _stored_after(survivors, bucket, "clustered", killed_at)
        assert worker.instance_id == registration.record.instance_id
    finally:
        await registration.close()


async def test_a_stream_and_bucket_with_other_replicas_are_kept_with_one_warning(cluster: NatsCluster) -> None:
    stream = f"FRAMES_{uuid.uuid4().hex[:12]}"
    bucket = f"AGENTS_{uuid.uuid4().hex[:12]}"
    settings = ServerSettings(
        publish_nats=cluster.url, nats_stream=stream, nats_subject_prefix=f"frames.{stream}", nats_replicas=1
    )
    created = FramePublisher.from_settings(settings)
    await created.start()  # creates the stream with one replica
    await created.close(timeout=5)
    registration = Registration(
        cluster.url, worker_record("kept"), bucket=bucket, ttl=REGISTRY_TTL, replicas=1, heartbeat=REGISTRY_HEARTBEAT
    )
    await registration.start()
    await registration.close()
    with log_records() as logs:
        reopened = FramePublisher.from_settings(settings.model_copy(update={"nats_replicas": CLUSTER_SIZE}))
        await reopened.start()
        await reopened.close(timeout=5)
        registration = Registration(
            cluster.url,
            worker_record("kept"),
            bucket=bucket,
            ttl=REGISTRY_TTL,
            replicas=CLUSTER_SIZE,
            heartbeat=REGISTRY_HEARTBEAT,
        )
        await registration.start()
        await registration.close()
    assert [message.split(" has ")[0] for message in logs.matching(logging.WARNING, "replicas, not the 3")] == [
        f"the frames' stream {stream}",
        f"the agent registry's bucket {bucket}",
    ]
    assert await _replicas(cluster, stream) == await _replicas(cluster, f"KV_{bucket}") == 1


async def test_replicas_a_single_server_cannot_have_are_a_clear_error_naming_the_option(broker: NatsServer) -> None:
    settings = ServerSettings(
        publish_nats=broker.url, nats_stream="FRAMES_R3", nats_subject_prefix="frames.r3", nats_replicas=3
    )
    publisher = FramePublisher.from_settings(settings)
    with pytest.raises(JetStreamSetupError) as refused_stream:
        await publisher.start()
    registration = Registration(
        broker.url, worker_record("r3"), bucket="AGENTS_R3", ttl=REGISTRY_TTL, replicas=3, heartbeat=REGISTRY_HEARTBEAT
    )
    with pytest.raises(JetStreamSetupError) as refused_bucket:
        await registration.start()
    assert str(refused_stream.value) == (
        "the NATS server refused to create the frames' stream FRAMES_R3 with 3 replicas (--nats-replicas): "
        "replicas > 1 not supported in non-clustered mode"
    )
    assert str(refused_bucket.value) == (
        "the NATS server refused to create the agent registry's bucket AGENTS_R3 with 3 replicas (--nats-replicas): "
        "replicas > 1 not supported in non-clustered mode"
    )


@pytest.mark.parametrize("workers", [1, 2])
async def test_serve_asking_a_single_server_for_replicas_says_only_the_clear_error(
    broker: NatsServer, workers: int
) -> None:
    """``serve --publish-nats`` refused its stream: the refusal is all it says (its connection, closed
    on the way out, is no outage to warn of), once however many workers it would start."""
    command = [sys.executable, "-m", "e2a_grpc", "serve", "--host", "127.0.0.1", "--port", "0"]
    command += ["--workers", str(workers)]
    command += ["--publish-nats", broker.url, "--nats-replicas", "3", "--nats-stream", "FRAMES_SERVE_R3"]
    command += ["--nats-subject-prefix", "frames.serve-r3"]
    result = await asyncio.to_thread(
        subprocess.run, command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == EXIT_FAILED
    assert result.stderr.splitlines() == [
        f"error: cannot publish to NATS at {broker.url}: JetStreamSetupError: the NATS server refused to create "
        "the frames' stream FRAMES_SERVE_R3 with 3 replicas (--nats-replicas): "
        "replicas > 1 not supported in non-clustered mode"
    ]


async def test_serve_with_workers_publishes_once_its_broker_takes_the_frames(broker: NatsServer) -> None:
    """The check made before the workers start leaves them to publish as ever."""
    stream, prefix = "FRAMES_SERVE_WORKERS", "frames.serve-workers"
    request = _request(str(uuid.uuid4()), 3)
    args = ("--workers", "2", "--publish-nats", broker.url, "--nats-stream", stream, "--nats-subject-prefix", prefix)
    with running_server(*args) as address:
        async with grpc.aio.insecure_channel(address) as channel:
            answered = await within(_chat(channel, request))
    frames = stream_reader.read_streams(
        broker.url, stream=stream, subject_prefix=prefix, request_id=request.request_id or "", idle_timeout=20.0
    )
    assert [frame.to_json() async for frame in frames] == answered
