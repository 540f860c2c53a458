"""The Go agent worker (gen/go/cmd/e2a-echo-worker) against a real nats-server: built and started
with its README's commands, it registers in the registry, answers requests published per the bus
contract with frames that keep the section 12 invariants (StreamChecker), sends its notices, honours
Start-By, deadline and cancel, runs a redelivered request at most once (one agent_unavailable frame,
none when a final frame is stored already), refuses a bad prompt with a frame, and drains on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import grpc
import nats
import nats.js.errors
import pytest
from a2a.utils.constants import TransportProtocol
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from e2a_grpc.a2a_server.server import A2AServer
from e2a_grpc.backends.bus import make_bus_backends
from e2a_grpc.backends.echo import EchoBackend
from e2a_grpc.broker import stream_reader
from e2a_grpc.broker.agent_records import AgentRecord, entry_key, key_token
from e2a_grpc.broker.agent_requests import Notice, shared_consumer
from e2a_grpc.broker.agent_worker import AgentWorker
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, frame_message
from e2a_grpc.chat.events import BackendInfo, Complete, Delta
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.client import achat
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse, ErrorCode, ResponseKind, SourceProtocol
from e2a_grpc.protocols.cloudevent_formats import to_http_binary
from e2a_grpc.protocols.cloudevents import record_to_event
from e2a_grpc.settings import AgentWorkerSettings, ServerSettings
from tests.a2a_server.conftest import a2a_client, send_request, states, streamed_text, user_message
from tests.conftest import in_process_server, server_config
from tests.support.bus_requests import (
    FRAME_PREFIX,
    FRAME_STREAM,
    REQUESTS_STREAM,
    TYPE_PREFIX,
    Exchange,
    frames_filter,
    open_exchange,
    publish_request,
    request_cancel_subject,
    request_subject,
)
from tests.support.nats_server import NatsServer, stored_messages
from tests.support.processes import REPO_ROOT, process_output
from tests.support.waiting import within

pytestmark = [pytest.mark.timeout(240), pytest.mark.asyncio, pytest.mark.subprocess]

GO = shutil.which("go")
GO_MODULE = REPO_ROOT / "gen" / "go"
README = GO_MODULE / "cmd" / "e2a-echo-worker" / "README.md"
REGISTRY_BUCKET: str = ServerSettings.model_fields["registry_bucket"].default
#: How long a poll of the broker's state (what another process did) may take.
BROKER_STATE_SECONDS = 15.0
#: A build on a cold cache compiles nats.go and sdk-go.
BUILD_TIMEOUT_SECONDS = 600


def readme_commands() -> tuple[list[str], list[str]]:
    """The build and the run command of the README's "Try it" block (run in gen/go)."""
    _, section = README.read_text().split("\n## Try it\n", 1)
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the README's Try it section has no sh block"
    lines = [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 3 and lines[0] == ["cd", "gen/go"], lines
    build, run = lines[1], lines[2]
    assert build[:2] == ["go", "build"] and run[0] == build[build.index("-o") + 1], (build, run)
    return build, run


@pytest.fixture(scope="module")
def worker_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if GO is None:
        pytest.skip("go is not installed (CI installs it)")
    build, _ = readme_commands()
    binary = tmp_path_factory.mktemp("go-worker") / "e2a-echo-worker"
    build[build.index("-o") + 1] = str(binary)
    subprocess.run(build, cwd=GO_MODULE, check=True, timeout=BUILD_TIMEOUT_SECONDS)
    return binary


def worker_arguments(url: str, agent_id: str, *extra: str) -> list[str]:
    """The README's run command's arguments, with the test's server and agent id."""
    _, run = readme_commands()
    arguments = run[1:]
    arguments[arguments.index("--nats") + 1] = url
    arguments[arguments.index("--agent-id") + 1] = agent_id
    return [*arguments, *extra]


@dataclass
class GoWorker:
    process: asyncio.subprocess.Process
    instance_id: str
    log: IO[bytes]

    def output(self) -> str:
        return process_output(self.log)


@contextlib.asynccontextmanager
async def go_worker(binary: Path, url: str, agent_id: str, *extra: str) -> AsyncIterator[GoWorker]:
    """The worker, once it printed ``ready <instance id>``; SIGTERM (then SIGKILL) at the end."""
    with tempfile.TemporaryFile("w+b") as log:
        process = await asyncio.create_subprocess_exec(
            binary, *worker_arguments(url, agent_id, *extra), stdout=asyncio.subprocess.PIPE, stderr=log
        )
        try:
            assert process.stdout is not None
            line = await within(process.stdout.readline(), 30)
            if not line.startswith(b"ready "):
                await within(process.wait(), 30)
                pytest.fail(f"the Go worker did not start ({process.returncode}):\n{process_output(log)}")
            yield GoWorker(process, line.split()[1].decode(), log)
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await within(process.wait(), 30)
                except TimeoutError:
                    process.kill()
                    await process.wait()


@contextlib.asynccontextmanager
async def connected(url: str) -> AsyncIterator[tuple[NatsClient, JetStreamContext]]:
    nc = await nats.connect(url)
    try:
        yield nc, nc.jetstream()
    finally:
        await nc.close()


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait (bounded) for broker state another process changes on its own time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BROKER_STATE_SECONDS
    while not await check():
        if loop.time() > deadline:
            pytest.fail(f"not within {BROKER_STATE_SECONDS} s: {what}")
        await asyncio.sleep(0.05)


async def requests_left(url: str, agent_id: str) -> int:
    return await stored_messages(url, REQUESTS_STREAM, request_subject(agent_id))


def new_agent_id() -> str:
    """An agent of the test's own: its shared consumer is created with the test's settings."""
    return f"go.echo-{uuid.uuid4().hex[:8]}"


def envelope(agent_id: str, params: dict[str, Any], **fields: Any) -> E2AEnvelope:
    return E2AEnvelope.from_dict(
        {
            "request_id": f"req-{uuid.uuid4()}",
            "session_id": "session 1",
            "method": "session/prompt",
            "channel": "web",
            "is_stream": True,
            "agent_id": agent_id,
            "params": params,
            **fields,
        }
    )


@contextlib.asynccontextmanager
async def exchange_of(nc: NatsClient, js: JetStreamContext, request: E2AEnvelope) -> AsyncIterator[Exchange]:
    exchange = await open_exchange(nc, js, request)
    try:
        yield exchange
    finally:
        await exchange.close()


def text_of(frames: list[Any]) -> str:
    return "".join(frame.body["delta"] for frame in frames if frame.response_kind == ResponseKind.E2A_CHUNK)


async def test_answers_a_request_and_registers(broker: NatsServer, worker_binary: Path) -> None:
    agent_id = new_agent_id()
    async with go_worker(worker_binary, broker.url, agent_id) as worker, connected(broker.url) as (nc, js):
        entry = await (await js.key_value(REGISTRY_BUCKET)).get(entry_key(agent_id, worker.instance_id))
        assert entry.value is not None
        record = AgentRecord.from_json(entry.value)
        assert (record.agent_id, record.instance_id, record.backend) == (agent_id, worker.instance_id, "go")
        assert entry.key.startswith(key_token(agent_id) + ".")

        request = envelope(agent_id, {"text": "hello from Go"}, jsonrpc_id=7, correlation_id="c-1", user_id="u")
        async with exchange_of(nc, js, request) as exchange:
            await publish_request(js, exchange, agent_id)
            assert await exchange.notice() == (Notice.TAKEN, worker.instance_id)
            frames = await exchange.final_frames()
            assert [frame.response_kind for frame in frames] == [ResponseKind.E2A_CHUNK] * 3 + [
                ResponseKind.E2A_COMPLETE
            ]
            assert text_of(frames) == "hello from Go"
            assert frames[-1].body == {"result": {"content": "hello from Go"}}
            assert frames[0].provenance.source_protocol == SourceProtocol.E2A
            assert all(
                msg.headers and msg.headers[MSG_ID_HEADER] == frame.response_id for frame, msg in exchange.frames
            )
        await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the request acked")


async def _is_zero(count: Awaitable[int]) -> bool:
    return await count == 0


@pytest.mark.parametrize(
    ("params", "method", "field"),
    [
        ({"text": 5}, "session/prompt", "params.text"),
        ({}, "chat.send", "params"),
        ({"text": "hi"}, "tasks/get", "method"),
    ],
    ids=["text-not-a-string", "no-prompt", "method"],
)
async def test_refuses_what_chat_refuses_with_a_frame(
    broker: NatsServer, worker_binary: Path, params: dict[str, Any], method: str, field: str
) -> None:
    agent_id = new_agent_id()
    request = envelope(agent_id, params, method=method)
    async with go_worker(worker_binary, broker.url, agent_id) as worker, connected(broker.url) as (nc, js):
        async with exchange_of(nc, js, request) as exchange:
            await publish_request(js, exchange, agent_id)
            assert await exchange.notice() == (Notice.TAKEN, worker.instance_id)
            (final,) = await exchange.final_frames()
            assert final.body["code"] == ErrorCode.INVALID_REQUEST
            assert final.body["details"] == {"field": field}
        await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the request acked")


async def test_terminates_a_message_that_is_no_bus_request(broker: NatsServer, worker_binary: Path) -> None:
    """No E2A-Reply-To: logged and terminated, unrun, no frame; the next request is answered."""
    agent_id = new_agent_id()
    async with go_worker(worker_binary, broker.url, agent_id) as worker, connected(broker.url) as (nc, js):
        stray = envelope(agent_id, {"text": "stray"})
        binary = to_http_binary(record_to_event(stray, type_prefix=TYPE_PREFIX))
        await js.publish(request_subject(agent_id), binary.body, headers=binary.headers)
        async with exchange_of(nc, js, envelope(agent_id, {"text": "next"})) as exchange:
            await publish_request(js, exchange, agent_id)
            assert text_of(await exchange.final_frames()) == "next"
        await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "both messages settled")
        assert await stored_messages(broker.url, FRAME_STREAM, frames_filter(stray)) == 0
        assert "no request of the bus" in worker.output()


async def test_cancel_ends_the_turn_and_working_notices_come(broker: NatsServer, worker_binary: Path) -> None:
    agent_id = new_agent_id()
    flags = ("--delay", "200ms", "--progress", "100ms", "--ack-wait", "2s")
    async with go_worker(worker_binary, broker.url, agent_id, *flags) as worker, connected(broker.url) as (nc, js):
        async with exchange_of(nc, js, envelope(agent_id, {"text": "word " * 50})) as exchange:
            await publish_request(js, exchange, agent_id)
            assert await exchange.notice() == (Notice.TAKEN, worker.instance_id)
            assert await exchange.notice() == (Notice.WORKING, worker.instance_id)
            await exchange.next_frame()
            await nc.publish(request_cancel_subject(exchange.request_id), b"")
            frames = await exchange.final_frames()
            assert frames[-1].body["code"] == ErrorCode.CLIENT_CANCELLED
            assert len(frames) < 50
        await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the request acked")


async def test_deadline_ends_the_turn(broker: NatsServer, worker_binary: Path) -> None:
    agent_id = new_agent_id()
    async with (
        go_worker(worker_binary, broker.url, agent_id, "--delay", "100ms"),
        connected(broker.url) as (nc, js),
        exchange_of(nc, js, envelope(agent_id, {"text": "word " * 100})) as exchange,
    ):
        deadline = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=0.5)
        await publish_request(js, exchange, agent_id, deadline=deadline)
        frames = await exchange.final_frames()
        assert frames[-1].body["code"] == ErrorCode.DEADLINE_EXCEEDED
        assert len(frames) < 100


async def test_a_request_taken_after_its_start_by_is_dropped(broker: NatsServer, worker_binary: Path) -> None:
    agent_id = new_agent_id()
    async with go_worker(worker_binary, broker.url, agent_id), connected(broker.url) as (nc, js):
        late = envelope(agent_id, {"text": "too late"})
        async with exchange_of(nc, js, late) as exchange:
            started = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
            await publish_request(js, exchange, agent_id, start_by=started)
            await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the late request acked")
            assert exchange.notices.empty()
        assert await stored_messages(broker.url, FRAME_STREAM, frames_filter(late)) == 0


@pytest.mark.parametrize(
    "written",
    [(), ("chunk",), ("chunk", "final")],
    ids=["lost-before-its-first-frame", "lost-mid-turn", "lost-before-its-ack"],
)
async def test_a_redelivered_request_is_not_run_again(
    broker: NatsServer, worker_binary: Path, written: tuple[str, ...]
) -> None:
    """At most once: the test plays the worker that took the request, wrote ``written`` frames and
    died before acking; the Go worker the request is redelivered to writes the one agent_unavailable
    frame after them (none when a final frame is stored) and terminates the request, running nothing."""
    agent_id = new_agent_id()
    flags = ("--ack-wait", "1s", "--progress", "200ms")
    async with go_worker(worker_binary, broker.url, agent_id, *flags):
        pass  # creates the streams and the agent's shared consumer (ack wait 1 s), then leaves
    async with connected(broker.url) as (nc, js):
        request = envelope(agent_id, {"text": "run me once"})
        async with exchange_of(nc, js, request) as exchange:
            await publish_request(js, exchange, agent_id)
            lost_worker = await js.pull_subscribe_bind(durable=shared_consumer(agent_id), stream=REQUESTS_STREAM)
            (taken,) = await lost_worker.fetch(1, timeout=10)
            assert taken.metadata.num_delivered == 1
            builder = FrameBuilder(request, BackendInfo(name="lost", source_protocol=SourceProtocol.E2A), UtcClock())
            events: dict[str, Delta | Complete] = {
                "chunk": Delta(DeltaKind.TEXT, "run "),
                "final": Complete({"content": "run "}),
            }
            for kind in written:
                frame = frame_record(builder.for_event(events[kind]))
                message = frame_message(frame, subject_prefix=FRAME_PREFIX, type_prefix=TYPE_PREFIX, source=None)
                await js.publish(message.subject, message.payload, headers=message.headers)

            async with go_worker(worker_binary, broker.url, agent_id, *flags):
                await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the request terminated")
            frames = await exchange.final_frames()
            assert exchange.notices.empty(), "the Go worker took the redelivered request"
            kinds = [frame.response_kind for frame in frames]
            if "final" in written:
                assert kinds == [ResponseKind.E2A_CHUNK, ResponseKind.E2A_COMPLETE]
                assert await stored_messages(broker.url, FRAME_STREAM, frames_filter(request)) == 2
            else:
                assert kinds == [ResponseKind.E2A_CHUNK] * len(written) + [ResponseKind.E2A_ERROR]
                assert frames[-1].body["code"] == ErrorCode.AGENT_UNAVAILABLE
                assert frames[-1].body["details"] == {"noticed_by": "worker"}
                headers = exchange.frames[-1][1].headers or {}
                assert headers[MSG_ID_HEADER] == frames[-1].response_id == f"{request.request_id}:lost"


async def test_sigterm_leaves_the_registry_and_finishes_the_turn(broker: NatsServer, worker_binary: Path) -> None:
    agent_id = new_agent_id()
    async with (
        go_worker(worker_binary, broker.url, agent_id, "--delay", "100ms") as worker,
        connected(broker.url) as (nc, js),
    ):
        registry = await js.key_value(REGISTRY_BUCKET)
        text = "one two three four five six"
        async with exchange_of(nc, js, envelope(agent_id, {"text": text})) as exchange:
            await publish_request(js, exchange, agent_id)
            await exchange.next_frame()
            worker.process.send_signal(signal.SIGTERM)
            frames = await exchange.final_frames()
            assert frames[-1].response_kind == ResponseKind.E2A_COMPLETE
            assert text_of(frames) == text
        assert await within(worker.process.wait(), 30) == 0, worker.output()
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await registry.get(entry_key(agent_id, worker.instance_id))
        await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the request acked")


def _content(frames: list[E2AResponse]) -> list[tuple[int, str, bool, str, Any]]:
    """What must be the same whichever agent answered: everything but ids, timestamps, provenance."""
    return [(frame.sequence, frame.response_kind, frame.is_final, frame.status, frame.body) for frame in frames]


async def test_chat_and_a2a_calls_through_the_python_gateway(broker: NatsServer, worker_binary: Path) -> None:
    """The gateway's bus route to the Go worker (the backend of a ``nats`` route): a Chat call gets the
    frames the Python echo backend gives (checked with StreamChecker), and an A2A call through the
    gateway's A2A front door gets the answer."""
    agent_id = new_agent_id()
    text = "hello from Go through the gateway"
    request = E2AEnvelope(method="chat.send", request_id=str(uuid.uuid4()), is_stream=True, params={"text": text})
    async with in_process_server() as direct, grpc.aio.insecure_channel(direct.address) as channel:
        expected = [frame async for frame in achat(channel, request)]

    settings = server_config(bus_nats=broker.url, a2a_port=0)
    backend = make_bus_backends([agent_id], settings)[agent_id]  # what the routing table's nats targets get
    async with go_worker(worker_binary, broker.url, agent_id):
        async with (
            in_process_server(backend=backend, bus_nats=broker.url) as gateway,
            grpc.aio.insecure_channel(gateway.address) as channel,
        ):
            frames = [frame async for frame in achat(channel, request)]
        checker = StreamChecker(request)
        for frame in frames:
            checker.check(frame)
        checker.finish()
        assert _content(frames) == _content(expected)

        a2a = A2AServer(settings, backend)
        await a2a.start()
        try:
            async with a2a_client(a2a, TransportProtocol.JSONRPC) as client:
                events = [event async for event in client.send_message(send_request(user_message(text)))]
        finally:
            await a2a.stop()
            await backend.aclose()
        assert streamed_text(events) == text
        assert states(events)[-1] == "TASK_STATE_COMPLETED"


async def test_a_worker_stopped_long_enough_to_be_taken_for_lost_stores_nothing_after_the_lost_frame(
    broker: NatsServer, worker_binary: Path
) -> None:
    """SIGSTOP the Go worker mid-turn until the Python gateway has ended the request as lost, then
    SIGCONT it: its next frame is refused (it expected its own last frame to be the subject's last),
    its turn stops, and the broker's copy of the request keeps section 12."""
    agent_id = new_agent_id()
    words = 20
    request = E2AEnvelope(
        method="chat.send",
        request_id=str(uuid.uuid4()),
        is_stream=True,
        params={"text": " ".join(f"w{n}" for n in range(words))},
    )
    settings = server_config(bus_nats=broker.url, bus_progress_seconds=0.3)
    backend = make_bus_backends([agent_id], settings)[agent_id]
    flags = ("--progress", "300ms", "--ack-wait", "30s", "--delay", "500ms")  # no redelivery while stopped
    async with go_worker(worker_binary, broker.url, agent_id, *flags) as worker:
        async with (
            in_process_server(backend=backend, bus_nats=broker.url, bus_progress_seconds=0.3) as gateway,
            grpc.aio.insecure_channel(gateway.address) as channel,
        ):
            call = achat(channel, request)
            first = await within(anext(call))  # the turn runs; stopped between two words
            worker.process.send_signal(signal.SIGSTOP)
            try:
                rest = await within(_frames_of(call))  # the gateway notices the silence
            finally:
                worker.process.send_signal(signal.SIGCONT)
        await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the request acked")
        assert "the request ended while this worker was silent" in worker.output()
        stored = [
            frame
            async for frame in stream_reader.read_streams(
                broker.url,
                stream=FRAME_STREAM,
                subject_prefix=FRAME_PREFIX,
                request_id=request.request_id,
                idle_timeout=BROKER_STATE_SECONDS,
            )
        ]
        messages = await stored_messages(broker.url, FRAME_STREAM, frames_filter(request))
    assert first.sequence == 0 and rest[-1].body["code"] == ErrorCode.AGENT_UNAVAILABLE
    assert len(stored) < words + 1  # the turn did not run to its end
    assert messages == len(stored)  # nothing after the final frame
    assert [frame.sequence for frame in stored] == list(range(len(stored)))
    assert [frame.is_final for frame in stored] == [False] * (len(stored) - 1) + [True]
    assert stored[-1].response_id == f"{request.request_id}:lost"


async def _frames_of(call: AsyncIterator[E2AResponse]) -> list[E2AResponse]:
    return [frame async for frame in call]


async def test_pulls_only_with_a_free_turn_slot(broker: NatsServer, worker_binary: Path) -> None:
    """Backpressure: with one turn slot the worker holds one request at a time; the rest wait in the
    stream (for other workers), and each is taken once the one before it is acked."""
    agent_id = new_agent_id()
    flags = ("--max-turns", "1", "--delay", "50ms")
    async with (
        go_worker(worker_binary, broker.url, agent_id, *flags) as worker,
        connected(broker.url) as (nc, js),
        contextlib.AsyncExitStack() as stack,
    ):
        requests = [envelope(agent_id, {"text": f"request {n} of three"}) for n in range(3)]
        exchanges = [await stack.enter_async_context(exchange_of(nc, js, request)) for request in requests]
        for exchange in exchanges:
            await publish_request(js, exchange, agent_id)
        for exchange in exchanges:
            assert await exchange.notice() == (Notice.TAKEN, worker.instance_id)
            consumer = await js.consumer_info(REQUESTS_STREAM, shared_consumer(agent_id))
            assert consumer.num_ack_pending == 1
            assert text_of(await exchange.final_frames()) == exchange.envelope.params["text"]


async def test_heartbeats_rewrite_the_registry_entry(broker: NatsServer, worker_binary: Path) -> None:
    agent_id = new_agent_id()
    async with (
        go_worker(worker_binary, broker.url, agent_id, "--registry-heartbeat", "100ms") as worker,
        connected(broker.url) as (_, js),
    ):
        registry = await js.key_value(REGISTRY_BUCKET)
        watcher = await registry.watch(entry_key(agent_id, worker.instance_id))
        try:
            beats: list[AgentRecord] = []
            while len(beats) < 3:
                entry = await watcher.updates(timeout=10)  # type: ignore[no-untyped-call]  # nats-py's KeyWatcher is untyped
                if entry is not None and entry.value:  # None: the watch caught up with the history
                    beats.append(AgentRecord.from_json(entry.value))
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]
        assert len({record.started_at for record in beats}) == 1
        assert [record.heartbeat_at for record in beats] == sorted({record.heartbeat_at for record in beats})


async def test_a_turn_still_running_when_the_drain_grace_ends_gets_a_final_frame(
    broker: NatsServer, worker_binary: Path
) -> None:
    agent_id = new_agent_id()
    flags = ("--delay", "100ms", "--grace", "300ms")
    async with go_worker(worker_binary, broker.url, agent_id, *flags) as worker, connected(broker.url) as (nc, js):
        async with exchange_of(nc, js, envelope(agent_id, {"text": "word " * 100})) as exchange:
            await publish_request(js, exchange, agent_id)
            await exchange.next_frame()
            worker.process.send_signal(signal.SIGTERM)
            frames = await exchange.final_frames()
            assert frames[-1].body["code"] == ErrorCode.SERVER_SHUTTING_DOWN
            assert len(frames) < 100
        assert await within(worker.process.wait(), 30) == 0, worker.output()
        await eventually(lambda: _is_zero(requests_left(broker.url, agent_id)), "the request acked")


async def test_go_and_python_workers_share_an_agents_requests(broker: NatsServer, worker_binary: Path) -> None:
    """A mixed fleet: the Go worker makes the shared consumer, a Python ``AgentWorker`` of the same
    agent takes from it too. One turn slot each and slow turns: while one worker runs the first
    request, the second goes to the other, and both answer with frames that keep the invariants."""
    agent_id = new_agent_id()
    python_config = AgentWorkerSettings(bus_nats=broker.url, agent_id=agent_id, bus_max_turns=1, grace_seconds=10.0)
    python_worker = AgentWorker(python_config, EchoBackend(delay_seconds=0.2))
    async with go_worker(worker_binary, broker.url, agent_id, "--max-turns", "1", "--delay", "200ms") as go:
        await python_worker.start()
        try:
            async with connected(broker.url) as (nc, js), contextlib.AsyncExitStack() as stack:
                takers = []
                exchanges = []
                for n in range(2):
                    request = envelope(agent_id, {"text": f"request {n} for either worker"})
                    exchange = await stack.enter_async_context(exchange_of(nc, js, request))
                    await publish_request(js, exchange, agent_id)
                    notice, taker = await exchange.notice()
                    assert notice == Notice.TAKEN
                    takers.append(taker)
                    exchanges.append(exchange)
                assert sorted(takers) == sorted([go.instance_id, python_worker.instance_id])
                for exchange in exchanges:
                    assert text_of(await exchange.final_frames()) == exchange.envelope.params["text"]
        finally:
            await python_worker.stop(python_config.grace_seconds)
