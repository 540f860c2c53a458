"""Agent workers on the bus against a real nats-server: a gateway (in-process ``E2AServer`` whose Chat
backend is a ``BusBackend``) and workers (``AgentWorker``) in this process; the frames a request
gets through the bus, load sharing, ack after the final frame, UNAVAILABLE without a worker, cancel,
Start-By, at most once for a request delivered again, the drain, and the cancel of a task that waits
in a worker (an ACP agent's question)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import re
import signal
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import nats
import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, TaskState
from a2a.utils.constants import TransportProtocol
from grpc_health.v1.health_pb2 import HealthCheckResponse
from nats.js.api import AckPolicy, ConsumerConfig, RawStreamMsg

from e2a.v1.agent_service_pb2 import ChatRequest, ChatResponse
from e2a.v1.agent_service_pb2_grpc import AgentServiceStub
from e2a_grpc.backends import make_backend
from e2a_grpc.backends.bus import BusBackend
from e2a_grpc.backends.echo import EchoBackend
from e2a_grpc.broker.agent_records import new_instance_id, now, server_record
from e2a_grpc.broker.agent_registry import Registration
from e2a_grpc.broker.agent_requests import (
    BusRequest,
    any_worker_subject,
    request_message,
    shared_consumer,
)
from e2a_grpc.broker.agent_worker import AgentWorker
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, frame_message, frame_subject
from e2a_grpc.broker.frame_publisher import ensure_stream
from e2a_grpc.broker.held_sessions import HeldSessions
from e2a_grpc.broker.lost_requests import end_lost_request
from e2a_grpc.broker.request_stream import ensure_requests_stream
from e2a_grpc.broker.session_owners import SessionOwners
from e2a_grpc.chat.events import BackendError, Delta, Event
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.cli import main
from e2a_grpc.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED
from e2a_grpc.client import achat
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse, ErrorCode
from e2a_grpc.settings import AgentWorkerSettings
from tests.a2a_server.conftest import a2a_client, a2a_server, send_request, stream_events, task_of, user_message
from tests.conftest import in_process_server
from tests.support.acp_servers import AGENT as ACP_AGENT
from tests.support.agent_bus import (
    WORKER_STARTUP_SECONDS,
    live_worker,
    requests_left,
    running_worker,
    stored_frames,
    until_no_requests_left,
)
from tests.support.log_records import log_records
from tests.support.nats_server import NatsServer, stored_messages
from tests.support.processes import free_port, logged_process
from tests.support.readiness import health_check, health_statuses, until_status
from tests.support.waiting import EVENT_TIMEOUT_SECONDS, within

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio]
PROGRESS = 0.3
#: Where a test's frames are read back from the broker: its whole stream, ended.
READ_TIMEOUT = 20.0


class CountingEcho(EchoBackend):
    """The echo backend, counting the turns it starts (a request must never run twice)."""

    def __init__(self, delay_seconds: float = 0.0) -> None:
        super().__init__(delay_seconds)
        self.turns = 0

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        self.turns += 1
        async for event in super().stream(envelope, prompt, incremental=incremental):
            yield event


def _settings(broker: NatsServer, agent_id: str, **overrides: Any) -> AgentWorkerSettings:
    values: dict[str, Any] = {
        "bus_nats": broker.url,
        "agent_id": agent_id,
        "bus_progress_seconds": PROGRESS,
        "bus_ack_wait_seconds": 1.0,
        "bus_start_by_seconds": 2.0,
        "registry_ttl_seconds": 2.0,
        "registry_heartbeat_seconds": 0.5,
        "grace_seconds": 10.0,
        **overrides,
    }
    return AgentWorkerSettings(**values)


def _agent() -> str:
    return f"agent-{uuid.uuid4().hex[:8]}"


def _request(words: int, request_id: str | None = None) -> E2AEnvelope:
    text = " ".join(f"w{n}" for n in range(words))
    return E2AEnvelope(
        method="chat.send", request_id=request_id or str(uuid.uuid4()), is_stream=True, params={"text": text}
    )


@contextlib.asynccontextmanager
async def _gateway(config: AgentWorkerSettings, *, publish: bool = True) -> AsyncIterator[grpc.aio.Channel]:
    """A gateway that also publishes its Chat frames (``--publish-nats``, unless not ``publish``): a bus
    turn's frames are the worker's on the broker, never published twice."""
    backend = BusBackend(config.agent_id, config)
    async with (
        in_process_server(backend=backend, publish_nats=config.bus_nats if publish else None) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        yield channel


async def _frames(call: AsyncIterator[E2AResponse]) -> list[E2AResponse]:
    return [frame async for frame in call]


def _content(frames: list[E2AResponse]) -> list[tuple[int, str, bool, str, Any]]:
    """What must be the same whichever way a turn ran: everything but ids, timestamps, provenance."""
    return [(frame.sequence, frame.response_kind, frame.is_final, frame.status, frame.body) for frame in frames]


async def test_a_request_through_the_bus_gets_the_frames_of_a_direct_chat_and_is_acked_after_its_final(
    broker: NatsServer,
) -> None:
    config = _settings(broker, _agent())
    backend = CountingEcho()
    envelope = _request(12)
    async with in_process_server() as direct, grpc.aio.insecure_channel(direct.address) as channel:
        expected = [frame async for frame in achat(channel, envelope)]
    async with running_worker(config, backend), _gateway(config) as channel:
        got = [frame async for frame in achat(channel, envelope)]
        stored = await stored_frames(broker.url, config, envelope.request_id or "", idle_timeout=READ_TIMEOUT)
        assert await requests_left(broker.url, config) == 0
    assert _content(got) == _content(expected)
    assert _content(stored) == _content(expected)  # the worker's copy, published once
    assert {frame.request_id for frame in got + stored} == {envelope.request_id}
    assert backend.turns == 1


async def test_a_request_without_id_names_the_same_request_to_its_client_and_on_the_broker(broker: NatsServer) -> None:
    config = _settings(broker, _agent())
    envelope = E2AEnvelope(method="chat.send", is_stream=True, params={"text": "no id here"})
    async with running_worker(config, CountingEcho()), _gateway(config) as channel:
        got = [frame async for frame in achat(channel, envelope)]
        request_id = got[0].request_id
        assert request_id
        stored = await stored_frames(broker.url, config, request_id, idle_timeout=READ_TIMEOUT)
    assert _content(stored) == _content(got)


async def test_workers_of_one_agent_share_its_requests(broker: NatsServer) -> None:
    config = _settings(broker, _agent(), bus_max_turns=1)
    first, second = CountingEcho(delay_seconds=0.05), CountingEcho(delay_seconds=0.05)
    async with running_worker(config, first), running_worker(config, second), _gateway(config) as channel:

        async def chat() -> list[E2AResponse]:
            return [frame async for frame in achat(channel, _request(6))]

        streams = await asyncio.gather(*(chat() for _ in range(4)))
    assert all(stream[-1].response_kind == "e2a.complete" for stream in streams)
    # One turn at a time each: four requests at once reach both workers.
    assert first.turns >= 1 and second.turns >= 1
    assert first.turns + second.turns == 4


async def test_an_agent_without_a_live_worker_gets_unavailable_at_once(broker: NatsServer) -> None:
    config = _settings(broker, _agent())
    async with _gateway(config) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            # The registry says so: no wait for Start-By (2 s here).
            await within(_frames(achat(channel, _request(3))), 1.5)
    assert raised.value.code() is grpc.StatusCode.UNAVAILABLE
    assert config.agent_id in (raised.value.details() or "")


async def test_a_cancelled_call_ends_the_workers_turn_with_client_cancelled_and_the_request_is_acked(
    broker: NatsServer,
) -> None:
    config = _settings(broker, _agent())
    backend = CountingEcho(delay_seconds=0.05)
    envelope = _request(400)
    async with running_worker(config, backend), _gateway(config) as channel:
        call = AgentServiceStub(channel).Chat(ChatRequest(envelope=envelope.to_proto()))
        first = await call.read()
        assert isinstance(first, ChatResponse) and first.response.sequence == 0
        call.cancel()  # the client goes away
        stored = await stored_frames(broker.url, config, envelope.request_id or "", idle_timeout=READ_TIMEOUT)
        assert await requests_left(broker.url, config) == 0
    assert stored[-1].is_final
    assert stored[-1].body["code"] == ErrorCode.CLIENT_CANCELLED
    assert len(stored) < 400


async def _publish(
    broker: NatsServer,
    config: AgentWorkerSettings,
    envelope: E2AEnvelope,
    start_by: float,
    deadline: float | None = None,
) -> None:
    """A request as a gateway publishes it (``start_by``, ``deadline``: seconds from now, negative: past)."""
    nc = await nats.connect(broker.url)
    try:
        js = nc.jetstream()
        await ensure_requests_stream(js, config)
        request = BusRequest(
            envelope=envelope,
            reply_to=nc.new_inbox(),
            start_by=datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=start_by),
            deadline=None
            if deadline is None
            else datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=deadline),
        )
        message = request_message(
            request,
            any_worker_subject(config.bus_requests_subject_prefix, config.agent_id),
            type_prefix=config.cloudevents_type_prefix,
            source=None,
        )
        await js.publish(message.subject, message.payload, headers=message.headers)
    finally:
        await nc.close()


async def test_a_request_taken_after_its_start_by_is_dropped_unrun(broker: NatsServer) -> None:
    config = _settings(broker, _agent())
    backend = CountingEcho()
    await _publish(broker, config, _request(3), start_by=-1.0)
    async with running_worker(config, backend):
        await within(until_no_requests_left(broker.url, config))
    assert backend.turns == 0


async def test_a_message_that_is_no_request_is_terminated_unrun_and_the_worker_goes_on(broker: NatsServer) -> None:
    """Foreign messages on the agent's subject (no CloudEvent; a header whose percent-encoding is not
    UTF-8) are terminated, not left to be delivered again for ever; the request after them runs."""
    config = _settings(broker, _agent())
    nc = await nats.connect(broker.url)
    try:
        js = nc.jetstream()
        await ensure_requests_stream(js, config)
        subject = any_worker_subject(config.bus_requests_subject_prefix, config.agent_id)
        await js.publish(subject, b"not an event")
        await js.publish(subject, b"{}", headers={"ce-specversion": "1.0", "ce-id": "%ff"})
    finally:
        await nc.close()
    await _publish(broker, config, _request(3), start_by=30.0)
    backend = CountingEcho()
    async with running_worker(config, backend) as worker:
        await within(until_no_requests_left(broker.url, config))
        assert worker.lost_answered == 0
    assert backend.turns == 1


async def test_a_request_whose_worker_was_lost_is_answered_agent_unavailable_and_never_run(broker: NatsServer) -> None:
    """A worker took the request and died (took it from the shared consumer, never acked): the next
    worker is delivered it again, does not run it, and writes its agent_unavailable final frame."""
    config = _settings(broker, _agent())
    envelope = _request(3)
    await _publish(broker, config, envelope, start_by=30.0)
    nc = await nats.connect(broker.url)
    try:
        lost = await nc.jetstream().pull_subscribe(
            any_worker_subject(config.bus_requests_subject_prefix, config.agent_id),
            durable=shared_consumer(config.agent_id),
            stream=config.bus_requests_stream,
            config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=config.bus_ack_wait_seconds, max_deliver=-1),
        )
        taken = await lost.fetch(1, timeout=5.0)
        assert len(taken) == 1  # and never acked: the worker that took it is gone
    finally:
        await nc.close()
    backend = CountingEcho()
    async with running_worker(config, backend) as worker:
        stored = await stored_frames(broker.url, config, envelope.request_id or "", idle_timeout=READ_TIMEOUT)
        assert await requests_left(broker.url, config) == 0
        assert worker.lost_answered == 1
    assert backend.turns == 0
    assert len(stored) == 1
    assert stored[0].is_final and stored[0].body["code"] == ErrorCode.AGENT_UNAVAILABLE


async def test_a_stopping_worker_finishes_its_turn_and_acks_it(broker: NatsServer) -> None:
    config = _settings(broker, _agent())
    backend = CountingEcho(delay_seconds=0.02)
    envelope = _request(40)
    worker = AgentWorker(config, backend)
    await worker.start()
    try:
        async with _gateway(config) as channel:
            call = achat(channel, envelope)
            frames = [await anext(aiter(call))]
            stopping = asyncio.create_task(worker.stop(config.grace_seconds))
            frames += [frame async for frame in call]
            await stopping
    finally:
        if not worker.publisher.closed:
            await worker.stop(0)
    assert frames[-1].response_kind == "e2a.complete"
    assert await requests_left(broker.url, config) == 0
    assert backend.turns == 1


_WHOAMI = re.compile(r"pid (\d+) session (\w+) turn (\d+)")


def _acp_settings(broker: NatsServer, agent_id: str) -> AgentWorkerSettings:
    return _settings(broker, agent_id, backend="acp", acp_command=f"{sys.executable} {ACP_AGENT}")


async def _whoami(channel: grpc.aio.Channel, session_id: str) -> tuple[tuple[str, str, int], list[E2AResponse]]:
    """The ACP agent's pid, its session and the turn number in it, and the frames that said so."""
    envelope = E2AEnvelope(
        method="chat.send", request_id=str(uuid.uuid4()), session_id=session_id, params={"text": "whoami"}
    )
    frames = [frame async for frame in achat(channel, envelope)]
    said = _WHOAMI.search(json.dumps(frames[-1].body))
    assert said is not None, frames[-1].body
    return (said[1], said[2], int(said[3])), frames


async def test_a_session_sticks_to_the_worker_that_holds_it(broker: NatsServer) -> None:
    config = _acp_settings(broker, _agent())
    first, second = make_backend(config), make_backend(config)
    async with (
        running_worker(config, first) as one,
        running_worker(config, second) as other,
        _gateway(config) as channel,
    ):
        turns = [(await _whoami(channel, "sticky"))[0] for _ in range(6)]
        holders = [worker for worker in (one, other) if worker.sessions is not None and len(worker.sessions)]
    pids = {pid for pid, _, _ in turns}
    sessions = {session for _, session, _ in turns}
    # One agent process, one ACP session (without stickiness: each turn on either worker).
    assert len(pids) == 1 and len(sessions) == 1
    assert [turn for _, _, turn in turns] == [1, 2, 3, 4, 5, 6]
    assert len(holders) == 1


async def test_a_session_whose_worker_is_gone_starts_anew_and_says_so(broker: NatsServer) -> None:
    config = _acp_settings(broker, _agent())
    gone = "f" * 32  # a worker instance that holds the session and is in no registry entry
    nc = await nats.connect(broker.url)
    try:
        owners = await SessionOwners.open(
            nc, bucket=config.sessions_bucket, ttl=config.registry_ttl_seconds, replicas=1
        )
        await owners.claim(config.agent_id, "orphan", gone)
    finally:
        await nc.close()
    worker = AgentWorker(config, make_backend(config))
    await worker.start()
    try:
        async with _gateway(config) as channel:
            (_, session, turn), frames = await _whoami(channel, "orphan")
            (_, session_again, turn_again), frames_again = await _whoami(channel, "orphan")
    finally:
        await worker.stop(config.grace_seconds)
    notices = [frame.body for frame in frames if frame.response_kind == "ext"]
    assert notices == [
        {
            "event": "session_restarted",
            "session_id": "orphan",
            "previous_instance": gone,
            "instance": worker.instance_id,
        }
    ]
    assert frames[0].response_kind == "ext"  # before the answer
    assert turn == 1 and (session_again, turn_again) == (session, 2)
    assert not [frame for frame in frames_again if frame.response_kind == "ext"]


def _worker_command(config: AgentWorkerSettings, *backend: str) -> list[str]:
    """``e2a-grpc agent`` with the test's bus settings."""
    return [
        sys.executable,
        "-m",
        "e2a_grpc",
        "agent",
        "--nats",
        config.bus_nats or "",
        "--agent-id",
        config.agent_id,
        "--bus-progress-seconds",
        str(config.bus_progress_seconds),
        "--bus-ack-wait-seconds",
        str(config.bus_ack_wait_seconds),
        "--registry-ttl-seconds",
        str(config.registry_ttl_seconds),
        "--registry-heartbeat-seconds",
        str(config.registry_heartbeat_seconds),
        *("--registry-bucket", config.registry_bucket, "--sessions-bucket", config.sessions_bucket),
        *backend,
    ]


async def _read_all(call: Any) -> list[ChatResponse]:
    frames = []
    while (reply := await call.read()) is not grpc.aio.EOF:
        frames.append(reply)
    return frames


def _prompts(events: Path) -> int:
    return sum(json.loads(line)["event"] == "prompt" for line in events.read_text().splitlines())


async def test_a_worker_killed_mid_turn_gets_one_agent_unavailable_final_and_its_request_never_runs_twice(
    broker: NatsServer, tmp_path: Path
) -> None:
    config = _settings(broker, _agent(), backend="acp", acp_command=f"{sys.executable} {ACP_AGENT}")
    events = tmp_path / "events.jsonl"
    acp = f"{sys.executable} {ACP_AGENT} --events {events}"
    envelope = E2AEnvelope(method="chat.send", request_id=str(uuid.uuid4()), params={"text": "slow"})
    with logged_process(_worker_command(config, "--backend", "acp", "--acp-command", acp)) as (process, _):
        await live_worker(config)
        async with _gateway(config) as channel:
            call = AgentServiceStub(channel).Chat(ChatRequest(envelope=envelope.to_proto()))
            first = await call.read()
            assert isinstance(first, ChatResponse)  # the turn runs
            process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(process.wait)
            rest = await _read_all(call)  # the gateway notices the silence
    assert rest and rest[-1].response.is_final
    final = E2AResponse.from_proto(rest[-1].response)
    assert final.body["code"] == ErrorCode.AGENT_UNAVAILABLE
    # The next worker is delivered the request again (never acked): it runs nothing, and the broker
    # keeps the one final frame the gateway wrote. Which of the worker's two guards stops it is a race:
    # the delivery count (answered as lost), or, when JetStream delivers it with a count of 1 (seen
    # under load after the SIGKILL), its Start-By, long past by then (dropped unrun).
    backend = CountingEcho()
    with log_records() as logs:
        async with running_worker(config, backend) as worker:
            await within(until_no_requests_left(broker.url, config))
            assert worker.lost_answered + len(logs.matching(logging.INFO, "taken after its Start-By")) == 1
            stored = await stored_frames(broker.url, config, envelope.request_id or "", idle_timeout=READ_TIMEOUT)
    assert backend.turns == 0
    assert _prompts(events) == 1
    finals = [frame for frame in stored if frame.is_final]
    assert len(finals) == 1 and finals[0].body["code"] == ErrorCode.AGENT_UNAVAILABLE
    assert finals[0].response_id == f"{envelope.request_id}:lost"


async def _until_logged(log: Path, text: str) -> None:
    """Return once another process's log has ``text`` (nothing to await but the line itself): bound it
    with ``within``."""
    while text not in log.read_text(errors="replace"):
        await asyncio.sleep(0.05)


async def test_a_worker_stopped_long_enough_to_be_taken_for_lost_writes_nothing_after_the_lost_frame(
    broker: NatsServer, tmp_path: Path
) -> None:
    """SIGSTOP a worker mid-turn until its gateway has ended the request as lost, then SIGCONT it: the
    worker's turn stops at its next frame, unpublished, so the broker's copy of the request keeps
    section 12 (sequences from 0 without a gap or a repeat, one final frame, the last)."""
    config = _settings(broker, _agent(), bus_ack_wait_seconds=30.0)  # no redelivery while it is stopped
    words = 20
    envelope = _request(words)
    # A word every 0.5 s: stopped as soon as the gateway has a frame, the worker is between two frames,
    # not handing one to its NATS client (which would send it on resuming: docs/agent-bus.md, "Known edges").
    command = _worker_command(config, "--backend", "echo", "--echo-delay-seconds", "0.5")
    worker_log = tmp_path / "worker.log"
    with logged_process(command, log=worker_log) as (process, _):
        await live_worker(config)
        async with _gateway(config) as channel:
            call = AgentServiceStub(channel).Chat(ChatRequest(envelope=envelope.to_proto()))
            assert isinstance(await call.read(), ChatResponse)  # the turn runs
            process.send_signal(signal.SIGSTOP)
            try:
                rest = await within(_read_all(call))  # the gateway notices the silence
            finally:
                process.send_signal(signal.SIGCONT)
        await within(_until_logged(worker_log, f"request {envelope.request_id} ended while this worker was silent"))
        await within(until_no_requests_left(broker.url, config))  # the worker acked it, its turn over
        stored = await stored_frames(broker.url, config, envelope.request_id or "", idle_timeout=READ_TIMEOUT)
        subject = frame_subject(config.nats_subject_prefix, None, envelope.request_id or "")
        messages = await stored_messages(broker.url, config.nats_stream, subject)
    final = E2AResponse.from_proto(rest[-1].response)
    assert final.is_final and final.body["code"] == ErrorCode.AGENT_UNAVAILABLE
    assert len(stored) < words + 1  # the turn did not run to its end
    assert messages == len(stored)  # nothing after the final frame
    assert [frame.sequence for frame in stored] == list(range(len(stored)))
    assert [frame.is_final for frame in stored] == [False] * (len(stored) - 1) + [True]
    assert stored[-1].response_id == f"{envelope.request_id}:lost"


async def test_a_lost_request_frame_is_not_stored_over_a_frame_its_worker_stored_meanwhile(
    broker: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway looks at the request's last frame, then its silent worker stores the next one, then
    the gateway writes the lost-request frame: JetStream refuses it (it expected another last frame),
    so the request keeps one frame per sequence number, and the gateway waits on."""
    config = _settings(broker, _agent())
    envelope = _request(3)
    builder = FrameBuilder(envelope, EchoBackend().info, UtcClock())
    first, meanwhile = (frame_record(builder.delta(Delta(DeltaKind.TEXT, word))) for word in ("one ", "two "))
    nc = await nats.connect(broker.url)
    try:
        js = nc.jetstream()

        async def publish(frame: E2AResponse) -> None:
            message = frame_message(
                frame,
                subject_prefix=config.nats_subject_prefix,
                type_prefix=config.cloudevents_type_prefix,
                source=None,
            )
            await js.publish(message.subject, message.payload, stream=config.nats_stream, headers=message.headers)

        await ensure_stream(js, config.nats_stream, config.nats_subject_prefix, replicas=1)
        await publish(first)
        look = js.get_last_msg

        async def look_then_the_worker_writes(stream: str, subject: str) -> RawStreamMsg:
            last = await look(stream, subject)
            await publish(meanwhile)
            return last

        monkeypatch.setattr(js, "get_last_msg", look_then_the_worker_writes)
        assert await end_lost_request(js, envelope, config, noticed_by="gateway") is None
        # Read as they are stored: the request has no final frame that a reader would stop at.
        subject = frame_subject(config.nats_subject_prefix, None, envelope.request_id or "")
        reader = await js.subscribe(subject, stream=config.nats_stream, ordered_consumer=True)
        stored = [await reader.next_msg(EVENT_TIMEOUT_SECONDS) for _ in range(2)]
        assert await stored_messages(broker.url, config.nats_stream, subject) == 2
    finally:
        await nc.close()
    assert [(message.headers or {}).get(MSG_ID_HEADER) for message in stored] == [
        first.response_id,
        meanwhile.response_id,
    ]


async def _serving(port: int) -> None:
    """Return once the worker process's health says SERVING (its port may not listen yet)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        await within(channel.channel_ready(), WORKER_STARTUP_SECONDS)
        await within(until_status(health_statuses(channel, ""), HealthCheckResponse.SERVING))


async def _health(port: int) -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        return await health_check(channel, "")


async def test_sigterm_drains_a_worker_process_its_turn_finishes_and_is_acked(broker: NatsServer) -> None:
    config = _settings(broker, _agent())
    envelope = _request(30)
    health_port = free_port()
    command = _worker_command(
        config, "--backend", "echo", "--echo-delay-seconds", "0.05", "--health-port", str(health_port)
    )
    with logged_process(command) as (process, _):
        await _serving(health_port)
        await live_worker(config)
        async with _gateway(config) as channel:
            call = AgentServiceStub(channel).Chat(ChatRequest(envelope=envelope.to_proto()))
            first = await call.read()
            assert isinstance(first, ChatResponse)
            process.send_signal(signal.SIGTERM)
            second = await call.read()  # the turn goes on
            assert isinstance(second, ChatResponse)
            assert await _health(health_port) == HealthCheckResponse.NOT_SERVING
            rest = [second, *await _read_all(call)]
        exit_code = await asyncio.to_thread(process.wait)
    assert exit_code == 0
    assert rest[-1].response.response_kind == "e2a.complete"
    assert len(rest) + 1 == 31
    assert await requests_left(broker.url, config) == 0


class ConcurrencyEcho(CountingEcho):
    """The echo backend, recording the most turns it ran at once; its turns answer only once
    ``release`` is set, so that a test sees the worker full however slowly requests are published."""

    def __init__(self, delay_seconds: float) -> None:
        super().__init__(delay_seconds)
        self.now = 0
        self.most = 0
        self.release = asyncio.Event()

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await self.release.wait()
            async for event in super().stream(envelope, prompt, incremental=incremental):
                yield event
        finally:
            self.now -= 1


async def test_a_busy_worker_takes_no_more_than_its_turn_slots_and_the_rest_wait_in_the_stream(
    broker: NatsServer,
) -> None:
    config = _settings(broker, _agent(), bus_max_turns=2, bus_start_by_seconds=30.0)
    backend = ConcurrencyEcho(delay_seconds=0.05)
    async with running_worker(config, backend) as worker, _gateway(config) as channel:
        calls = [asyncio.create_task(_frames(achat(channel, _request(10)))) for _ in range(6)]

        async def full() -> None:
            # Polled: the broker's count has no event to await.
            while await requests_left(broker.url, config) < 6 or backend.now < 2:
                await asyncio.sleep(0.02)

        await within(full())  # all six stored: two running, four waiting in the stream, not in the worker
        assert worker.running == 2 and backend.now == 2
        backend.release.set()
        streams = await within(asyncio.gather(*calls), 60.0)
    assert all(stream[-1].response_kind == "e2a.complete" for stream in streams)
    assert backend.most == 2
    assert backend.turns == 6


async def test_a_request_whose_deadline_passes_ends_with_deadline_exceeded_on_the_broker(broker: NatsServer) -> None:
    config = _settings(broker, _agent())
    envelope = _request(400)
    await _publish(broker, config, envelope, start_by=30.0, deadline=0.5)
    async with running_worker(config, CountingEcho(delay_seconds=0.05)):
        stored = await stored_frames(broker.url, config, envelope.request_id or "", idle_timeout=READ_TIMEOUT)
        assert await requests_left(broker.url, config) == 0
    assert stored[-1].is_final and stored[-1].body["code"] == ErrorCode.DEADLINE_EXCEEDED
    assert len(stored) < 400


async def test_a_worker_asking_for_more_replicas_than_the_broker_has_servers_is_one_error_line(
    broker: NatsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``e2a-grpc agent --nats-replicas 3`` on a single server: exit 2 and the broker's refusal, no traceback."""
    argv = ["agent", "--nats", broker.url, "--agent-id", _agent(), "--nats-replicas", "3"]
    argv += ["--bus-requests-stream", f"REQUESTS_{uuid.uuid4().hex[:8]}"]  # a stream no other test made
    assert await asyncio.to_thread(main, argv) == EXIT_BAD_INPUT  # main runs its own event loop
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1, errors
    assert "refused to create the requests' stream" in errors[0] and "with 3 replicas (--nats-replicas)" in errors[0]


async def test_a_worker_on_a_server_without_jetstream_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NatsServer passes extra options last: "-js=false" turns off the JetStream its command enables.
    server = NatsServer(tmp_path, cluster_options=["-js=false"])
    server.start()
    try:
        assert await asyncio.to_thread(main, ["agent", "--nats", server.url, "--agent-id", _agent()]) == EXIT_FAILED
    finally:
        server.stop()
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1, errors
    assert f"cannot start on NATS at {server.url}" in errors[0]


async def test_a_gateway_that_cannot_reach_the_bus_answers_unavailable(broker: NatsServer) -> None:
    config = _settings(broker, _agent(), bus_nats=f"nats://127.0.0.1:{free_port()}")  # nothing listens
    async with _gateway(config, publish=False) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await within(_frames(achat(channel, _request(3))))
    assert raised.value.code() is grpc.StatusCode.UNAVAILABLE
    assert "cannot be reached" in (raised.value.details() or "")


async def test_a_worker_holds_no_more_sessions_than_its_backend_keeps(broker: NatsServer) -> None:
    config = _settings(broker, _agent())
    nc = await nats.connect(broker.url)
    try:
        owners = await SessionOwners.open(
            nc, bucket=config.sessions_bucket, ttl=config.registry_ttl_seconds, replicas=1
        )
        held = HeldSessions(owners, agent_id=config.agent_id, instance_id="a" * 32, max_sessions=2)
        assert await held.take("one") is None and await held.take("two") is None
        assert await held.take("one") is None  # held already: used most recently now
        assert await held.take("three") is None  # "two" is released to make room
        assert len(held) == 2
        assert await owners.owner(config.agent_id, "two") is None
        for session in ("one", "three"):
            owner = await owners.owner(config.agent_id, session)
            assert owner is not None and owner.instance_id == "a" * 32
        await held.release_all()
        assert await owners.owner(config.agent_id, "one") is None and len(held) == 0
    finally:
        await nc.close()


@contextlib.asynccontextmanager
async def _silent_worker(broker: NatsServer, config: AgentWorkerSettings) -> AsyncIterator[None]:
    """A worker in the registry that takes nothing (hung, or its consumer gone)."""
    started = now()
    record = server_record(config, instance_id=new_instance_id(), started_at=started, heartbeat_at=started)
    silent = Registration.for_record(broker.url, record, config)
    await silent.start()
    try:
        yield
    finally:
        await silent.close()


async def test_a_request_no_worker_takes_by_its_start_by_gets_unavailable_and_is_deleted(broker: NatsServer) -> None:
    """UNAVAILABLE once Start-By has passed, and the request is gone from the stream at once (not left
    there until its max age)."""
    config = _settings(broker, _agent(), bus_start_by_seconds=0.5)
    async with _silent_worker(broker, config), _gateway(config) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await within(_frames(achat(channel, _request(3))))
        assert await requests_left(broker.url, config) == 0
    assert raised.value.code() is grpc.StatusCode.UNAVAILABLE
    assert "no live worker took the request within 0.5 s" in (raised.value.details() or "")


async def test_a_request_taken_by_its_start_by_without_a_notice_is_gone_and_the_gateway_says_nothing_more(
    broker: NatsServer,
) -> None:
    """A worker took the request and acked it (dropped it: its notice never came, or it came after the
    gateway gave up): the gateway's delete finds it gone, which is no trouble to log."""
    config = _settings(broker, _agent(), bus_start_by_seconds=0.5)
    nc = await nats.connect(broker.url)
    try:
        await ensure_requests_stream(nc.jetstream(), config)
        taker = await nc.jetstream().pull_subscribe(
            any_worker_subject(config.bus_requests_subject_prefix, config.agent_id),
            durable=shared_consumer(config.agent_id),
            stream=config.bus_requests_stream,
            config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=config.bus_ack_wait_seconds, max_deliver=-1),
        )
        with log_records() as logs:
            async with _silent_worker(broker, config), _gateway(config) as channel:
                calling = asyncio.create_task(_frames(achat(channel, _request(3))))
                (taken,) = await taker.fetch(1, timeout=EVENT_TIMEOUT_SECONDS)
                await taken.ack_sync()
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await within(calling)
    finally:
        await nc.close()
    assert raised.value.code() is grpc.StatusCode.UNAVAILABLE
    assert logs.at_least(logging.WARNING) == []


async def test_a_request_to_a_killed_workers_own_subject_goes_to_another_worker_which_restarts_the_session(
    broker: NatsServer, tmp_path: Path
) -> None:
    """The worker that holds a session is SIGKILLed: its registry entry and its claim of the session
    live on until the registry's TTL, so the gateway sends the session's next request to the worker's
    own subject, which nobody pulls any more (its durable consumer goes once inactive for that TTL).
    At Start-By the request is deleted there and sent again to any worker: the live one takes it and
    starts the session anew, saying so first; no request is left in the stream."""
    # Buckets of its own: a bucket's TTL is the one it was made with (the other tests' is 2 s).
    buckets = f"{uuid.uuid4().hex[:8].upper()}"
    config = _acp_settings(broker, _agent()).model_copy(
        update={
            "registry_ttl_seconds": 60.0,
            "registry_bucket": f"E2A_AGENTS_{buckets}",
            "sessions_bucket": f"E2A_SESSIONS_{buckets}",
        }
    )
    acp = f"{sys.executable} {ACP_AGENT} --events {tmp_path / 'events.jsonl'}"
    first, second = (
        E2AEnvelope(method="chat.send", request_id=str(uuid.uuid4()), session_id="kept", params={"text": "hi"})
        for _ in range(2)
    )
    with logged_process(_worker_command(config, "--backend", "acp", "--acp-command", acp)) as (process, _):
        await live_worker(config)
        async with _gateway(config) as channel:
            answered = await _frames(achat(channel, first))
            process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(process.wait)
            nc = await nats.connect(broker.url)
            try:
                owners = await SessionOwners.open(
                    nc, bucket=config.sessions_bucket, ttl=config.registry_ttl_seconds, replicas=1
                )
                killed = await owners.owner(config.agent_id, "kept")
            finally:
                await nc.close()
            assert killed is not None  # the gateway sends the session's requests to the dead worker's subject
            async with running_worker(config, make_backend(config)) as survivor:
                started = time.monotonic()
                again = await within(_frames(achat(channel, second)))
                took = time.monotonic() - started
                assert await requests_left(broker.url, config) == 0
    assert answered[-1].response_kind == "e2a.complete"
    assert again[0].response_kind == "ext"
    assert again[0].body == {
        "event": "session_restarted",
        "session_id": "kept",
        "previous_instance": killed.instance_id,
        "instance": survivor.instance_id,
    }
    assert again[-1].response_kind == "e2a.complete"
    assert took >= config.bus_start_by_seconds  # it waited for the dead worker first
    assert survivor.turns_run == 1


# --- cancelling a task that waits in a worker ----------------------------------------------------------


async def test_a_waiting_tasks_cancel_reaches_the_acp_agent_of_the_worker_that_holds_it(
    broker: NatsServer, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    acp = f"{sys.executable} {ACP_AGENT} --events {events}"
    config = _settings(
        broker, _agent(), backend="acp", acp_command=acp, acp_cwd=str(tmp_path), bus_task_cancel_seconds=1.0
    )
    bus = BusBackend(config.agent_id, config)
    asking = E2AEnvelope(method="chat.send", request_id=str(uuid.uuid4()), session_id="s-ask", params={"text": "write"})
    async with (
        # Two workers: the one that does not hold the task stays silent.
        running_worker(config, make_backend(config)),
        running_worker(config, make_backend(config)),
        in_process_server(backend=bus) as gateway,
        grpc.aio.insecure_channel(gateway.address) as channel,
    ):
        frames = [frame async for frame in achat(channel, asking, timeout=READ_TIMEOUT)]
        final = frames[-1]
        assert final.response_kind == "e2a.input_required" and final.task_id, final.body
        assert await within(bus.cancel_task(final.task_id)) is True
        # Nothing waits there any more: no worker replies, and the gateway says so after its timeout.
        assert await within(bus.cancel_task(final.task_id)) is False
    records = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    # The agent's question was answered "cancelled", it got session/cancel, and its turn ended.
    assert [record["outcome"] for record in records if record["event"] == "permission"] == [{"outcome": "cancelled"}]
    assert {"cancel", "turn_end"} <= {record["event"] for record in records}
    assert not (tmp_path / "notes.txt").exists()


async def test_the_a2a_front_doors_cancel_of_a_task_waiting_in_a_worker_reaches_its_acp_agent(
    broker: NatsServer, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    acp = f"{sys.executable} {ACP_AGENT} --events {events}"
    config = _settings(broker, _agent(), backend="acp", acp_command=acp, acp_cwd=str(tmp_path))
    async with (
        running_worker(config, make_backend(config)),
        a2a_server(BusBackend(config.agent_id, config)) as front_door,
        a2a_client(front_door, TransportProtocol.JSONRPC, streaming=False) as client,
    ):
        waiting = task_of(await stream_events(client, send_request(user_message("write"))))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        cancelled = await within(client.cancel_task(CancelTaskRequest(id=waiting.id)))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    records = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    assert [record["outcome"] for record in records if record["event"] == "permission"] == [{"outcome": "cancelled"}]
    assert {"cancel", "turn_end"} <= {record["event"] for record in records}


async def test_a_task_cancel_with_no_worker_listening_is_answered_at_once(broker: NatsServer) -> None:
    # A timeout far beyond the test's wait: only the server's "no responders" can answer in time.
    config = _settings(broker, _agent(), bus_task_cancel_seconds=600.0)
    bus = BusBackend(config.agent_id, config)
    try:
        assert await within(bus.cancel_task("task-1")) is False
    finally:
        await bus.aclose()


class _CancellingEcho(EchoBackend):
    """The echo backend, as if a task waited in it: its cancel succeeds, or fails with ``failure``."""

    def __init__(self, failure: ErrorCode | None = None) -> None:
        super().__init__()
        self.failure = failure
        self.cancelled: list[str] = []

    async def cancel_task(self, task_id: str) -> bool:
        if self.failure is not None:
            raise BackendError(self.failure, "the agent refused")
        self.cancelled.append(task_id)
        return True


async def test_a_workers_failure_to_cancel_is_the_gateways_error_unless_another_worker_cancelled(
    broker: NatsServer,
) -> None:
    config = _settings(broker, _agent(), bus_task_cancel_seconds=1.0)
    bus = BusBackend(config.agent_id, config)
    try:
        async with running_worker(config, _CancellingEcho(ErrorCode.A2A_AGENT_ERROR)) as failing:
            with pytest.raises(BackendError) as raised:
                await within(bus.cancel_task("task-1"))
            assert raised.value.code == ErrorCode.A2A_AGENT_ERROR
            assert failing.instance_id in raised.value.message and "the agent refused" in raised.value.message
            cancelling = _CancellingEcho()
            async with running_worker(config, cancelling):
                assert await within(bus.cancel_task("task-2")) is True
            assert cancelling.cancelled == ["task-2"]
    finally:
        await bus.aclose()
