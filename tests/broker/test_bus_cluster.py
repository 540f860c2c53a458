"""The agent bus on a three-node JetStream cluster (``NatsCluster``), everything at ``--nats-replicas 3``:
gateways (in-process ``E2AServer`` with a ``BusBackend``) and workers (``AgentWorker``) in this process,
connected to the cluster through its three URLs. Two gateways and three workers share requests and keep
a session on the worker that holds it whichever gateway a turn comes through; a NATS node killed
mid-turn (the worker's, the gateway's) costs the client no frame and runs the request once. Through
routing-table gateways (``serve --agent X=nats``): an unknown agent is NOT_FOUND and an agent whose
workers all left is UNAVAILABLE. A busy worker takes only its turn slots; the rest wait in the R3
requests stream. A worker process SIGKILLed mid-turn: at most once, exactly (one agent_unavailable
final frame, the request delivered again and not run)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from e2a.v1.agent_service_pb2 import ChatRequest, ChatResponse
from e2a.v1.agent_service_pb2_grpc import AgentServiceStub
from e2a_grpc.backends import make_backend
from e2a_grpc.backends.bus import BusBackend
from e2a_grpc.backends.echo import EchoBackend
from e2a_grpc.chat.events import Event
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.client import achat
from e2a_grpc.model import E2AEnvelope, E2AResponse, ErrorCode
from e2a_grpc.settings import AgentWorkerSettings, ServerSettings
from tests.broker.test_agent_worker import (
    ConcurrencyEcho,
    CountingEcho,
    _content,
    _prompts,
    _read_all,
    _whoami,
    _worker_command,
)
from tests.broker.test_cluster import _connected_node
from tests.broker.test_jetstream import PhasedBackend
from tests.conftest import in_process_server
from tests.support.acp_servers import AGENT as ACP_AGENT
from tests.support.agent_bus import live_worker, running_worker, stored_frames, until_no_requests_left
from tests.support.nats_server import CLUSTER_SIZE, NatsCluster, stored_messages
from tests.support.processes import logged_process
from tests.support.waiting import within

pytestmark = [pytest.mark.timeout(240), pytest.mark.asyncio, pytest.mark.cluster]
WORDS_PER_PHASE = 40
#: Bounds a turn that spans a node's loss (a failover takes a few seconds).
FAILOVER_TIMEOUT_SECONDS = 60.0


def _settings(cluster: NatsCluster, **overrides: Any) -> AgentWorkerSettings:
    values: dict[str, Any] = {
        "bus_nats": cluster.url,
        "nats_replicas": CLUSTER_SIZE,
        "agent_id": f"agent-{uuid.uuid4().hex[:8]}",
        # Progress notices every 2 s: a worker is taken for lost after 6 s of silence, longer than a failover
        # of the cluster's leaders (about 4.5 s), which must not count as a lost worker.
        "bus_progress_seconds": 2.0,
        "bus_ack_wait_seconds": 6.0,
        "bus_start_by_seconds": 20.0,
        "registry_ttl_seconds": 30.0,
        "registry_heartbeat_seconds": 1.0,
        "grace_seconds": 10.0,
        **overrides,
    }
    return AgentWorkerSettings(**values)


class CountedPhases(PhasedBackend):
    """``PhasedBackend`` counting the turns it starts (a request must never run twice)."""

    def __init__(self, phases: int, words_per_phase: int) -> None:
        super().__init__(phases, words_per_phase)
        self.turns = 0

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        self.turns += 1
        async for event in super().stream(envelope, prompt, incremental=incremental):
            yield event


@contextlib.asynccontextmanager
async def _gateway(config: AgentWorkerSettings) -> AsyncIterator[tuple[BusBackend, grpc.aio.Channel]]:
    backend = BusBackend(config.agent_id, config)
    async with (
        in_process_server(backend=backend) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        yield backend, channel


@pytest.mark.parametrize("whose", ["worker", "gateway"])
async def test_a_node_killed_mid_turn_costs_no_frame_and_the_request_runs_once(
    cluster: NatsCluster, whose: str
) -> None:
    config = _settings(cluster)
    backend = CountedPhases(phases=3, words_per_phase=WORDS_PER_PHASE)
    envelope = E2AEnvelope(method="chat.send", request_id=str(uuid.uuid4()), is_stream=True, params={"text": "go"})
    async with running_worker(config, backend) as worker, _gateway(config) as (route, channel):

        async def chat() -> list[E2AResponse]:
            return [frame async for frame in achat(channel, envelope)]

        call = asyncio.create_task(chat())
        backend.go[0].set()
        await within(backend.phase_done[0].wait())
        connection = worker._nc if whose == "worker" else route.bus.nc
        await asyncio.to_thread(_connected_node(cluster, connection).kill)
        backend.go[1].set()
        await within(backend.phase_done[1].wait())
        backend.go[2].set()
        got = await within(call, FAILOVER_TIMEOUT_SECONDS)
        stored = await within(
            stored_frames(cluster.url, config, envelope.request_id or "", idle_timeout=FAILOVER_TIMEOUT_SECONDS),
            FAILOVER_TIMEOUT_SECONDS,
        )
    assert [frame.sequence for frame in got] == list(range(3 * WORDS_PER_PHASE + 1)), got[-1].to_json()
    assert got[-1].is_final and got[-1].response_kind == "e2a.complete"
    assert _content(stored) == _content(got)  # the worker's copy on the broker, each frame once
    assert backend.turns == 1


async def test_two_gateways_and_three_workers_keep_a_session_on_its_worker_and_share_the_rest(
    cluster: NatsCluster,
) -> None:
    # One turn at a time each, so that requests at once spread over the workers.
    config = _settings(cluster, backend="acp", acp_command=f"{sys.executable} {ACP_AGENT}", bus_max_turns=1)
    async with contextlib.AsyncExitStack() as stack:
        workers = [await stack.enter_async_context(running_worker(config, make_backend(config))) for _ in range(3)]
        gateways = [(await stack.enter_async_context(_gateway(config)))[1] for _ in range(2)]
        # A session's turns, alternating the gateways: one agent process, one ACP session, turns counted on.
        turns = [(await _whoami(gateways[turn % 2], "sticky"))[0] for turn in range(6)]
        holders = [worker for worker in workers if worker.sessions is not None and len(worker.sessions)]
        # Sessions of their own, many at once through both gateways: more than one worker runs them.
        others = await asyncio.gather(*(_whoami(gateways[n % 2], f"other-{n}") for n in range(9)))
    assert len({pid for pid, _, _ in turns}) == 1 and len({session for _, session, _ in turns}) == 1
    assert [turn for _, _, turn in turns] == [1, 2, 3, 4, 5, 6]
    assert len(holders) == 1
    assert all(turn == 1 for (_, _, turn), _ in others)
    assert len({pid for (pid, _, _), _ in others}) > 1


@contextlib.asynccontextmanager
async def _routing_gateway(config: AgentWorkerSettings) -> AsyncIterator[grpc.aio.Channel]:
    """``serve --agent <agent>=nats --bus-nats <the three URLs> --nats-replicas 3``, in process."""
    bus = {name: getattr(config, name) for name in ServerSettings.model_fields if name.startswith("bus_")}
    async with (
        in_process_server(
            agent=[f"{config.agent_id}=nats"],
            nats_replicas=config.nats_replicas,
            registry_ttl_seconds=config.registry_ttl_seconds,
            **bus,
        ) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        yield channel


async def _chat_status(channel: grpc.aio.Channel, envelope: E2AEnvelope) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await within(_frames(achat(channel, envelope)), FAILOVER_TIMEOUT_SECONDS)
    return raised.value


async def _frames(call: AsyncIterator[E2AResponse]) -> list[E2AResponse]:
    return [frame async for frame in call]


async def test_through_either_routing_gateway_an_unknown_agent_is_not_found_and_one_whose_workers_left_unavailable(
    cluster: NatsCluster,
) -> None:
    config = _settings(cluster)
    async with (
        _routing_gateway(config) as first,
        _routing_gateway(config) as second,
    ):
        unknown = await _chat_status(first, _request(3, agent_id="nobody"))
        async with running_worker(config, EchoBackend()):
            answers = [await _frames(achat(channel, _request(3))) for channel in (first, second)]
        gone = [await _chat_status(channel, _request(3)) for channel in (first, second)]
    assert unknown.code() is grpc.StatusCode.NOT_FOUND and config.agent_id in (unknown.details() or "")
    assert all(frames[-1].response_kind == "e2a.complete" for frames in answers)
    assert [status.code() for status in gone] == [grpc.StatusCode.UNAVAILABLE] * 2
    assert all(config.agent_id in (status.details() or "") for status in gone)


async def test_a_busy_worker_takes_only_its_turn_slots_and_the_rest_wait_in_the_replicated_stream(
    cluster: NatsCluster,
) -> None:
    config = _settings(cluster, bus_max_turns=2)
    backend = ConcurrencyEcho(delay_seconds=0.05)
    async with (
        running_worker(config, backend) as worker,
        _gateway(config) as (_, first),
        _gateway(config) as (_, second),
    ):
        calls = [asyncio.create_task(_frames(achat((first, second)[n % 2], _request(10)))) for n in range(6)]

        async def full() -> None:
            subjects = f"{config.bus_requests_subject_prefix}.>"
            # Polled: the broker's count has no event to await.
            while await stored_messages(cluster.url, config.bus_requests_stream, subjects) < 6 or backend.now < 2:
                await asyncio.sleep(0.02)

        await within(full(), FAILOVER_TIMEOUT_SECONDS)  # all six stored: two running, four waiting in the stream
        assert worker.running == 2 and backend.now == 2
        backend.release.set()
        streams = await within(asyncio.gather(*calls), FAILOVER_TIMEOUT_SECONDS)
    assert all(stream[-1].response_kind == "e2a.complete" for stream in streams)
    assert backend.most == 2 and backend.turns == 6


def _request(words: int, agent_id: str | None = None) -> E2AEnvelope:
    text = " ".join(f"w{n}" for n in range(words))
    return E2AEnvelope(
        method="chat.send", request_id=str(uuid.uuid4()), agent_id=agent_id, is_stream=True, params={"text": text}
    )


async def test_a_worker_sigkilled_mid_turn_gets_one_agent_unavailable_final_and_its_request_never_runs_twice(
    cluster: NatsCluster, tmp_path: Path
) -> None:
    config = _settings(cluster)
    events = tmp_path / "events.jsonl"
    acp = f"{sys.executable} {ACP_AGENT} --events {events}"
    command = [
        *_worker_command(config, "--backend", "acp", "--acp-command", acp),
        *("--nats-replicas", str(config.nats_replicas)),
    ]
    envelope = E2AEnvelope(method="chat.send", request_id=str(uuid.uuid4()), params={"text": "slow"})
    with logged_process(command) as (process, _):
        await live_worker(config)
        async with _routing_gateway(config) as channel:
            call = AgentServiceStub(channel).Chat(ChatRequest(envelope=envelope.to_proto()))
            first = await within(call.read(), FAILOVER_TIMEOUT_SECONDS)
            assert isinstance(first, ChatResponse)  # the turn runs
            process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(process.wait)
            rest = await within(_read_all(call), FAILOVER_TIMEOUT_SECONDS)  # the gateway notices the silence
    assert rest and rest[-1].response.is_final
    assert E2AResponse.from_proto(rest[-1].response).body["code"] == ErrorCode.AGENT_UNAVAILABLE
    # Another worker is delivered the request again (never acked): it runs nothing, and the broker keeps
    # the one final frame the gateway wrote.
    backend = CountingEcho()
    async with running_worker(config, backend) as worker:
        await within(until_no_requests_left(cluster.url, config), FAILOVER_TIMEOUT_SECONDS)
        assert worker.lost_answered == 1
        stored = await within(
            stored_frames(cluster.url, config, envelope.request_id or "", idle_timeout=FAILOVER_TIMEOUT_SECONDS),
            FAILOVER_TIMEOUT_SECONDS,
        )
    assert backend.turns == 0
    assert _prompts(events) == 1
    finals = [frame for frame in stored if frame.is_final]
    assert len(finals) == 1 and finals[0].body["code"] == ErrorCode.AGENT_UNAVAILABLE
    assert finals[0].response_id == f"{envelope.request_id}:lost"
