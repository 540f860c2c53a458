"""The Chat RPC on the a2a backend, end to end: a real ``e2a-grpc serve --backend a2a`` forwarding to a
real a2a-sdk agent (tests/support/agents/a2a_agent.py), both subprocesses on free loopback ports.

What the agent sent is read from its log and compared with what reached the E2A client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.backends.a2a import A2ABackend
from e2a_grpc.chat.events import AgentIds, BackendError, BackendInfo, Complete, Delta, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.invariants import StreamChecker, StreamInvariantError
from e2a_grpc.chat.prompt import read_prompt
from e2a_grpc.client.chat import chat
from e2a_grpc.client.conversion import ConversionClient
from e2a_grpc.conversion import to_a2a_stream
from e2a_grpc.model import DeltaKind, ErrorCode
from e2a_grpc.model.constants import E2A_A2A_STREAM_BRANCHES
from e2a_grpc.settings import A2A_DEFAULT_TRANSPORTS, A2A_GRPC_BINDING, A2A_JSONRPC_BINDING, ServerSettings
from tests.support.agents.a2a_agent import LARGE_ARTIFACT_CHARS
from tests.support.processes import (
    connections_to,
    free_port,
    logged_process,
    open_fds,
    process_output,
    running_server_process,
    wait_until,
)
from tests.support.waiting import within

pytestmark = pytest.mark.subprocess  # a real a2a-sdk agent and e2a-grpc serve processes

#: The budget for stopping the agent's work after a client cancel or deadline.
CANCEL_BUDGET_SECONDS = 1.0


@dataclass
class Agent:
    url: str
    log: Path
    #: The transport the a2a backend calls it with by default: gRPC when it serves gRPC too.
    transport: str

    def records(self, kind: str | None = None, context_id: str | None = None) -> list[dict[str, Any]]:
        # The agent may be writing a line right now: only newline-terminated lines are complete.
        lines = self.log.read_text(encoding="utf-8").split("\n")[:-1]
        records = [json.loads(line) for line in lines]
        return [
            record
            for record in records
            if (kind is None or record["kind"] == kind)
            and (context_id is None or record.get("context_id") == context_id)
        ]

    def events(self, context_id: str) -> list[dict[str, Any]]:
        return [record["event"] for record in self.records("event", context_id)]

    def wait_for(self, kind: str, context_id: str, timeout: float = 3) -> list[dict[str, Any]]:
        wait_until(lambda: bool(self.records(kind, context_id)), timeout)
        return self.records(kind, context_id)

    def streams_closed(self) -> bool:
        """Every SSE response the agent started has ended."""
        return len(self.records("sse_closed")) == len(self.records("sse_opened"))


@dataclass
class Server:
    address: str
    process: subprocess.Popen[Any]


@contextlib.contextmanager
def _serve(*args: str) -> Iterator[Server]:
    with running_server_process(*args) as (address, process, _):
        yield Server(address, process)


@contextlib.contextmanager
def running_agent(port: int, log: Path, transport: str = A2A_JSONRPC_BINDING) -> Iterator[Agent]:
    """The scripted a2a-sdk agent on ``port``, serving its card (and gRPC if ``transport`` is gRPC, which
    the a2a backend then prefers); always stopped."""
    log.touch()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "tests.support.agents.a2a_agent", "--port", str(port), "--log", str(log)]
    if transport == A2A_GRPC_BINDING:
        command += ["--grpc-port", str(free_port())]
    with logged_process(command) as (process, output):

        def card_served() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"the test agent exited with {process.returncode}:\n{process_output(output)}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{url}/.well-known/agent-card.json", timeout=1) as reply,
            ):
                return bool(reply.status == 200)
            return False

        assert wait_until(card_served, 30), "the test agent did not serve its card within 30 s"
        yield Agent(url, log, transport)


#: The largest message the a2a backend takes from an agent over gRPC, as ``serve`` sets it by default.
DEFAULT_MAX_MESSAGE_BYTES: int = ServerSettings.model_fields["max_message_bytes"].default

#: The transports the a2a backend is tested on: each agent fixture runs once per transport.
AGENT_TRANSPORTS = (A2A_GRPC_BINDING, A2A_JSONRPC_BINDING)


@pytest.fixture(scope="module", params=AGENT_TRANSPORTS)
def agent(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Agent]:
    with running_agent(free_port(), tmp_path_factory.mktemp("a2a") / "agent.jsonl", request.param) as running:
        yield running


def http_only(agent: Agent) -> None:
    """Skip a test about the HTTP connections of the JSON-RPC transport when the backend calls over gRPC."""
    if agent.transport != A2A_JSONRPC_BINDING:
        pytest.skip("about JSON-RPC's HTTP connections and SSE responses")


@pytest.fixture(scope="module")
def server(agent: Agent) -> Iterator[Server]:
    with _serve("--backend", "a2a", "--a2a-url", agent.url, "--a2a-timeout-seconds", "30") as running:
        yield running


def _envelope(text: str, **fields: Any) -> E2AEnvelope:
    fields.setdefault("context_id", f"ctx-{uuid.uuid4()}")
    return E2AEnvelope(method="chat.send", params={"text": text}, **fields)


def _chat(server: Server, envelope: E2AEnvelope) -> list[E2AResponse]:
    with grpc.insecure_channel(server.address) as channel:
        return list(chat(channel, envelope, timeout=30))  # chat() checks the section 12 invariants


def _stream_events(frames: list[E2AResponse]) -> list[dict[str, Any]]:
    """The A2A StreamResponse JSON of each non-final frame, which must all be a2a.stream_event."""
    for frame in frames:
        assert (frame.response_kind, frame.status) == ("a2a.stream_event", "in_progress"), frame
        assert frame.body["branch"] in E2A_A2A_STREAM_BRANCHES
        assert frame.provenance.source_protocol == "a2a"
    events = [to_a2a_stream(frame) for frame in frames]
    assert all(isinstance(event, dict) for event in events), events
    return events  # type: ignore[return-value]


def _context_of(envelope: E2AEnvelope) -> str:
    assert envelope.context_id is not None, "the test envelopes carry a context id"
    return envelope.context_id


def test_frames_carry_the_agents_events_and_the_answer(server: Server, agent: Agent) -> None:
    files = [{"uri": "https://example.com/cat.png", "name": "cat.png", "mime_type": "image/png"}]
    envelope = E2AEnvelope(
        method="chat.send",
        request_id="req-a2a-1",
        message_id="msg-1",
        session_id=f"session-{uuid.uuid4()}",  # the A2A contextId when the envelope has no context_id
        params={"text": "hello agent", "files": files},
        expected_output_modes=["text/plain"],
        a2a_metadata={"trace": "t-1"},
    )
    frames = _chat(server, envelope)
    *events, final = frames
    context_id = envelope.session_id
    assert context_id is not None
    assert _stream_events(events) == agent.events(context_id)
    assert [frame.body["branch"] for frame in events] == [
        "task", "status_update", "artifact_update", "artifact_update", "status_update",
    ]  # fmt: skip
    # The ConversionService's ToA2AStream RPC agrees with the local conversion.
    with ConversionClient.connect(server.address) as client:
        for frame, event in zip(events, agent.events(context_id), strict=True):
            assert json.loads(str(client.to_a2a_stream_json(frame.to_json()))) == event

    (request,) = agent.records("request", context_id)
    assert request["message"] == {
        "messageId": "msg-1",
        "contextId": context_id,
        "taskId": final.body["result"]["task_id"],  # the agent's server assigns the task
        "role": "ROLE_USER",
        "parts": [
            {"text": "hello agent"},
            {"url": "https://example.com/cat.png", "filename": "cat.png", "mediaType": "image/png"},
        ],
    }
    assert request["configuration"] == {"acceptedOutputModes": ["text/plain"]}
    assert request["metadata"] == {"trace": "t-1"}

    assert (final.response_kind, final.status, final.is_final) == ("e2a.complete", "succeeded", True)
    task_id = agent.events(context_id)[0]["task"]["id"]
    assert final.body["result"] == {
        "content": "thinking\nHello, hello agent\ndone",
        "task_id": task_id,
        "context_id": context_id,
        "state": "TASK_STATE_COMPLETED",
    }


def test_frames_name_the_agents_task_so_the_final_frame_ends_it_in_a2a(server: Server) -> None:
    """A request without task_id / context_id: frames carry the agent's from its first event on."""
    envelope = E2AEnvelope(method="chat.send", request_id=f"req-{uuid.uuid4()}", params={"text": "hello ids"})
    frames = _chat(server, envelope)  # chat() runs the StreamChecker
    first, final = frames[0], frames[-1]
    task = first.body["payload"]
    assert first.body["branch"] == "task" and task["id"] and task["contextId"]
    assert all((frame.task_id, frame.context_id) == (task["id"], task["contextId"]) for frame in frames)
    assert final.request_id == envelope.request_id != task["id"]
    update = to_a2a_stream(final, project_native_kinds=True)
    assert isinstance(update, dict)
    status_update = update["statusUpdate"]
    assert (status_update["taskId"], status_update["contextId"]) == (task["id"], task["contextId"])
    assert status_update["status"]["state"] == "TASK_STATE_COMPLETED"


def _frames_of(envelope: E2AEnvelope, *steps: AgentIds | str) -> list[E2AResponse]:
    """What a FrameBuilder makes of text deltas and agent ids, then a result."""
    builder = FrameBuilder(envelope, BackendInfo("fake", "a2a"), UtcClock())
    frames = []
    for step in steps:
        if isinstance(step, AgentIds):
            builder.adopt_agent_ids(step)
        else:
            frames.append(builder.delta(Delta(DeltaKind.TEXT, step)))
    frames.append(builder.complete({"content": ""}))
    return [E2AResponse.from_proto(pb.ChatResponse.FromString(frame).response) for frame in frames]


def _check(envelope: E2AEnvelope, frames: list[E2AResponse]) -> None:
    checker = StreamChecker(envelope)
    for frame in frames:
        checker.check(frame)
    checker.finish()


def test_the_agents_ids_fill_only_what_the_request_left_unset_and_then_stay() -> None:
    bare = E2AEnvelope(method="chat.send", request_id="r", params={"text": "x"})
    frames = _frames_of(bare, "a", AgentIds("t1", None), "b", AgentIds("t2", "c1"), "c")
    assert [(frame.task_id, frame.context_id) for frame in frames] == [
        (None, None), ("t1", None), ("t1", "c1"), ("t1", "c1"),
    ]  # fmt: skip
    _check(bare, frames)
    own = E2AEnvelope(method="chat.send", request_id="r", task_id="mine", params={"text": "x"})
    frames = _frames_of(own, AgentIds("t1", "c1"), "a")
    assert all((frame.task_id, frame.context_id) == ("mine", "c1") for frame in frames)
    _check(own, frames)


@pytest.mark.parametrize(
    ("request_task_id", "frame_task_ids", "problem"),
    [
        (None, ["t1", "t2"], "earlier frame carried the agent's 't1'"),  # the agent's id changed
        (None, ["t1", None], "earlier frame carried the agent's 't1'"),  # and then vanished
        (None, [""], "task_id is empty"),
        ("mine", ["t1"], "does not echo the request's"),  # the request's own id always wins
    ],
)
def test_the_checker_accepts_the_agents_ids_and_nothing_looser(
    request_task_id: str | None, frame_task_ids: list[str | None], problem: str
) -> None:
    envelope = E2AEnvelope(method="chat.send", request_id="r", task_id=request_task_id, params={"text": "x"})
    checker = StreamChecker(envelope)
    base: dict[str, Any] = {"request_id": "r", "timestamp": "2026-01-01T00:00:00+00:00", "method": "chat.send"}
    with pytest.raises(StreamInvariantError, match=problem):
        for sequence, task_id in enumerate(frame_task_ids):
            checker.check(E2AResponse(response_id=str(sequence), sequence=sequence, task_id=task_id, **base))


def test_a_direct_message_reply(server: Server, agent: Agent) -> None:
    envelope = _envelope("reply please")
    *events, final = _chat(server, envelope)
    assert _stream_events(events) == agent.events(_context_of(envelope)) and len(events) == 1
    assert events[0].body["branch"] == "message"
    assert final.response_kind == "e2a.complete"
    assert final.body["result"] == {
        "content": "direct: reply please",
        "task_id": None,
        "context_id": envelope.context_id,
        "state": None,
    }


def test_a_failed_task_ends_with_an_a2a_error(server: Server, agent: Agent) -> None:
    envelope = _envelope("please fail")
    *events, final = _chat(server, envelope)
    sent = agent.events(_context_of(envelope))
    assert _stream_events(events) == sent and sent[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    assert (final.response_kind, final.status) == ("e2a.error", "failed")
    body = final.body
    assert body["code"] == "a2a_task_failed"
    assert body["message"] == "the A2A task ended in TASK_STATE_FAILED: the test agent failed on purpose"
    assert body["details"] == {
        "task_id": sent[0]["task"]["id"],
        "context_id": envelope.context_id,
        "state": "TASK_STATE_FAILED",
    }
    assert body["external"] == {"protocol": "a2a", "type": "TASK_STATE_FAILED", "payload": sent[-1]}


def test_turns_one_after_another_reuse_one_connection_to_the_agent(server: Server, agent: Agent) -> None:
    http_only(agent)
    # The stream of a finished turn is read to its end, so its connection goes back to the pool; a
    # stream closed before its end would drop the connection and the next turn would open a new one.
    for index in range(3):
        *_, final = _chat(server, _envelope(f"hello {index}"))
        assert final.response_kind == "e2a.complete"
    ports = [record["client_port"] for record in agent.records("sse_opened")[-3:]]
    assert len(set(ports)) == 1, ports


def test_an_agent_error_on_the_stream_ends_with_an_a2a_error(server: Server, agent: Agent) -> None:
    envelope = _envelope("raise, please")
    *events, final = _chat(server, envelope)
    assert _stream_events(events) == agent.events(_context_of(envelope)) and len(events) == 2
    assert (final.response_kind, final.status) == ("e2a.error", "failed")
    assert final.body["code"] == "a2a_agent_error"
    external = final.body["external"]
    assert (external["protocol"], external["type"], external["payload"]["data"]) == ("a2a", "InternalError", None)
    if agent.transport == A2A_JSONRPC_BINDING:
        assert external["payload"]["message"] == "the test agent raised on purpose"
    else:  # the SDK's gRPC server leaves the exception to grpc, whose status message names its class too
        assert external["payload"]["message"] == "Unexpected <class 'RuntimeError'>: the test agent raised on purpose"
    assert final.body["details"]["state"] == "TASK_STATE_WORKING"


def test_an_unreachable_agent_is_an_a2a_error() -> None:
    with _serve("--backend", "a2a", "--a2a-url", f"http://127.0.0.1:{free_port()}") as server:
        (final,) = _chat(server, _envelope("anyone there?"))
    assert (final.response_kind, final.status) == ("e2a.error", "failed")
    assert final.body["code"] == "a2a_unavailable"
    assert final.body["external"]["protocol"] == "a2a"
    assert final.body["external"]["type"] == "AgentCardResolutionError"


def _cancel_after_three_frames(channel: grpc.Channel, envelope: E2AEnvelope) -> float:
    call = pb_grpc.AgentServiceStub(channel).Chat(pb.ChatRequest(envelope=envelope.to_proto()), timeout=30)
    for index, _ in enumerate(call):
        if index == 2:
            call.cancel()
            return time.time()
    raise AssertionError("the stream ended before it could be cancelled")


def test_client_cancel_closes_the_a2a_stream_and_cancels_the_task(server: Server, agent: Agent) -> None:
    http_only(agent)  # over gRPC, test_a_deadline_stops_the_agents_work and the shutdown test cover the cancel
    with grpc.insecure_channel(server.address) as channel:
        # Warm up: the server's connection pool to the agent holds one idle keep-alive connection.
        _cancel_after_three_frames(channel, _envelope("slow warm-up"))
        assert wait_until(agent.streams_closed, 5)
        pid, agent_port = server.process.pid, int(agent.url.rsplit(":", 1)[1])

        def files_but_agent_connections() -> int:
            return open_fds(pid) - connections_to(pid, agent_port)

        baseline = files_but_agent_connections()
        for index in range(5):
            envelope = _envelope(f"slow {index}")
            cancelled_at = _cancel_after_three_frames(channel, envelope)
            # The agent's execute() was cancelled (A2A CancelTask) and its SSE response ended.
            (stopped,) = agent.wait_for("execute_cancelled", _context_of(envelope))
            assert stopped["at"] - cancelled_at < CANCEL_BUDGET_SECONDS
            assert len(agent.records("cancel_called", envelope.context_id)) == 1
            assert wait_until(agent.streams_closed, 3)
            assert agent.records("sse_closed")[-1]["at"] - cancelled_at < CANCEL_BUDGET_SECONDS
        # Nothing the cancelled requests opened is left open: each leaked stream would be a connection to
        # the agent. The pool may keep up to two idle keep-alive ones (a CancelTask request runs on a
        # second connection while the stream is open), whichever of them it happens to keep.
        assert wait_until(lambda: connections_to(pid, agent_port) <= 2, 3), connections_to(pid, agent_port)
        assert wait_until(lambda: files_but_agent_connections() <= baseline, 3), (
            files_but_agent_connections(),
            baseline,
        )
        # And the server still answers.
        assert list(chat(channel, _envelope("still there?"), timeout=30))[-1].response_kind == "e2a.complete"


def test_a_deadline_stops_the_agents_work(server: Server, agent: Agent) -> None:
    envelope = _envelope("slow, with a deadline")
    with grpc.insecure_channel(server.address) as channel, pytest.raises(grpc.RpcError) as caught:
        list(chat(channel, envelope, timeout=2.0))
    expired_at = time.time()
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    (stopped,) = agent.wait_for("execute_cancelled", _context_of(envelope))
    assert stopped["at"] - expired_at < CANCEL_BUDGET_SECONDS


def test_shutdown_ends_the_stream_with_a_final_frame_and_cancels_the_task(agent: Agent) -> None:
    envelope = _envelope("slow, until the server shuts down")
    frames = []
    with _serve("--backend", "a2a", "--a2a-url", agent.url, "--grace-seconds", "5") as server:
        with grpc.insecure_channel(server.address) as channel:
            for frame in chat(channel, envelope, timeout=30):
                frames.append(frame)
                if len(frames) == 3:
                    server.process.send_signal(signal.SIGTERM)
                    stopping_at = time.time()
        assert server.process.wait(timeout=10) == 0
    final = frames[-1]
    assert (final.response_kind, final.body["code"]) == ("e2a.error", "server_shutting_down")
    (cancelled,) = agent.wait_for("cancel_called", _context_of(envelope))
    assert cancelled["at"] - stopping_at < CANCEL_BUDGET_SECONDS


def test_the_backend_leaves_no_task_or_connection_behind(agent: Agent) -> None:
    """In process, where asyncio tasks can be counted: cancel mid-stream, then close the backend."""

    def new_backend() -> A2ABackend:
        return A2ABackend(
            agent.url,
            timeout_seconds=30,
            answer_timeout_seconds=30,
            transports=A2A_DEFAULT_TRANSPORTS,
            max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
        )

    async def run() -> None:
        # A whole backend's life first: grpc's C core opens its process-wide files (poller, wake-up) on
        # first use and keeps them, so the files a backend leaves behind count from there.
        first, hello = new_backend(), _envelope("hello")
        assert [event async for event in first.stream(hello, read_prompt(hello))]
        await first.aclose()
        fds_before = open_fds(os.getpid())
        backend = new_backend()
        envelope = _envelope("slow, in process")
        received = asyncio.Event()

        async def consume() -> None:
            count = 0
            async for _ in backend.stream(envelope, read_prompt(envelope)):
                count += 1
                if count == 3:
                    received.set()

        consumer = asyncio.create_task(consume())
        await asyncio.wait_for(received.wait(), 10)
        consumer.cancel()
        cancelled_at = time.time()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        assert time.time() - cancelled_at < CANCEL_BUDGET_SECONDS
        assert agent.records("cancel_called", envelope.context_id)  # sent before the stream task ended
        assert asyncio.all_tasks() == {asyncio.current_task()}
        await backend.aclose()
        assert asyncio.all_tasks() == {asyncio.current_task()}

        async def connections_closed() -> None:
            # grpc's C core closes a closed channel's socket on its own poller, soon after aclose returns.
            while open_fds(os.getpid()) > fds_before:
                await asyncio.sleep(0.02)

        await within(connections_closed())  # the connections to the agent are closed

    asyncio.run(run())


def test_serve_explains_a_missing_url_or_a2a_sdk() -> None:
    no_url = subprocess.run(
        [sys.executable, "-m", "e2a_grpc", "serve", "--backend", "a2a"],
        capture_output=True, text=True, timeout=30, env={**os.environ, "E2A_GRPC_A2A_URL": ""},
    )  # fmt: skip
    assert no_url.returncode == 2 and "--a2a-url" in no_url.stderr
    # a2a-sdk is optional: without it (None in sys.modules makes its import fail), serve says how to get it.
    without_sdk = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['a2a'] = None; from e2a_grpc.cli import main; "
            "sys.exit(main(['serve', '--backend', 'a2a', '--a2a-url', 'http://127.0.0.1:9']))",
        ],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert without_sdk.returncode == 1, without_sdk.stderr
    assert "pip install 'e2a-grpc[a2a]'" in without_sdk.stderr and "Traceback" not in without_sdk.stderr


async def _turn(backend: A2ABackend, text: str) -> list[Any]:
    envelope = _envelope(text)
    return [event async for event in backend.stream(envelope, read_prompt(envelope))]


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", AGENT_TRANSPORTS)
async def test_the_card_is_fetched_once_and_again_after_a_transport_failure(tmp_path: Path, transport: str) -> None:
    port = free_port()
    backend = A2ABackend(
        f"http://127.0.0.1:{port}",
        timeout_seconds=10,
        answer_timeout_seconds=10,
        transports=A2A_DEFAULT_TRANSPORTS,
        max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
    )
    try:
        with running_agent(port, tmp_path / "first.jsonl", transport) as first:
            for text in ("hello", "hello again"):
                assert isinstance((await _turn(backend, text))[-1], Complete)
            # One fetch to see the agent is up, one by the backend for both turns.
            assert len(first.records("card_served")) == 2
        with pytest.raises(BackendError) as failed:
            await _turn(backend, "anyone there?")
        assert failed.value.code == ErrorCode.A2A_UNAVAILABLE
        # Over gRPC the agent comes back on another gRPC port: the card read again names it.
        with running_agent(port, tmp_path / "second.jsonl", transport) as second:
            assert isinstance((await _turn(backend, "back again"))[-1], Complete)
            # After the transport failure the backend asked for the card again.
            assert len(second.records("card_served")) == 2
    finally:
        await backend.aclose()


@pytest.mark.asyncio
async def test_the_agents_cookies_reach_no_later_request(tmp_path: Path) -> None:
    # The backend's requests are every user's: a cookie the agent set in answer to one (every answer
    # of the test agent sets one) must not go out with the next.
    port = free_port()
    backend = A2ABackend(
        f"http://127.0.0.1:{port}",
        timeout_seconds=10,
        answer_timeout_seconds=10,
        transports=A2A_DEFAULT_TRANSPORTS,
        max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
    )
    try:
        with running_agent(port, tmp_path / "agent.jsonl") as agent:
            for text in ("hello", "hello again"):
                assert isinstance((await _turn(backend, text))[-1], Complete)
            requests = agent.records("http_request")
            # The card, then a send per turn, after the fixture's own look at the card.
            assert [request["path"] for request in requests[1:]] == [AGENT_CARD_WELL_KNOWN_PATH, "/", "/"]
            assert [request["cookies"] for request in requests] == [[]] * 4
    finally:
        await backend.aclose()


@pytest.mark.parametrize(("script", "reason"), [("ask", "input"), ("login", "auth")])
def test_a_waiting_task_ends_the_turn_waiting_and_a_request_with_its_task_id_continues_it(
    server: Server, agent: Agent, script: str, reason: str
) -> None:
    envelope = _envelope(script)
    *events, waiting = _chat(server, envelope)  # chat() checks the section 12 invariants
    sent = agent.events(_context_of(envelope))
    assert _stream_events(events) == sent
    task_id = sent[0]["task"]["id"]
    question = sent[-1]["statusUpdate"]["status"]["message"]
    assert (waiting.response_kind, waiting.status, waiting.is_final) == ("e2a.input_required", "in_progress", True)
    assert waiting.task_id == task_id and waiting.context_id == envelope.context_id
    assert waiting.body == {
        "reason": reason,
        "message": "what is your name?",
        "request": question,
        "result": {
            "content": "thinking\nwhat is your name?",
            "task_id": task_id,
            "context_id": envelope.context_id,
            "state": sent[-1]["statusUpdate"]["status"]["state"],
        },
    }
    # Projected to A2A, the final frame leaves the agent's task waiting, with the question.
    projected = to_a2a_stream(waiting, project_native_kinds=True)
    assert isinstance(projected, dict)
    assert projected["statusUpdate"]["status"]["state"] == sent[-1]["statusUpdate"]["status"]["state"]
    assert projected["statusUpdate"]["status"]["message"]["parts"][0] == {"text": "what is your name?"}

    answer = _envelope("Ada", context_id=envelope.context_id, task_id=task_id)
    *events, final = _chat(server, answer)
    assert (final.response_kind, final.status) == ("e2a.complete", "succeeded")
    assert final.body["result"]["content"] == "hello, Ada" and final.body["result"]["task_id"] == task_id
    assert [frame.sequence for frame in [*events, final]] == list(range(len(events) + 1))  # numbered anew
    requests = agent.records("request", _context_of(envelope))
    assert requests[-1]["message"]["taskId"] == task_id


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("transports", "over_http"),
    [((A2A_GRPC_BINDING, A2A_JSONRPC_BINDING), False), ((A2A_JSONRPC_BINDING, A2A_GRPC_BINDING), True)],
)
async def test_the_first_preferred_transport_the_card_offers_carries_the_turn(
    tmp_path: Path, transports: tuple[str, ...], over_http: bool
) -> None:
    with running_agent(free_port(), tmp_path / "agent.jsonl", A2A_GRPC_BINDING) as agent:
        backend = A2ABackend(
            agent.url,
            timeout_seconds=10,
            answer_timeout_seconds=10,
            transports=transports,
            max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
        )
        try:
            for incremental in (True, False):
                envelope = _envelope("hello")
                events = [
                    event async for event in backend.stream(envelope, read_prompt(envelope), incremental=incremental)
                ]
                assert isinstance(events[-1], Complete)
                assert len(agent.records("request", envelope.context_id)) == 1
        finally:
            await backend.aclose()
    # The agent's card offers JSON-RPC first and gRPC too: the backend's order decides.
    sends = [request for request in agent.records("http_request") if request["path"] == "/"]
    assert len(sends) == (2 if over_http else 0)


@pytest.mark.asyncio
async def test_an_answer_over_grpcs_default_message_bound_arrives_within_max_message_bytes(tmp_path: Path) -> None:
    # JSON-RPC reads an answer of any size; over gRPC the channel's bound is the server's, not grpc's 4 MiB.
    with running_agent(free_port(), tmp_path / "agent.jsonl", A2A_GRPC_BINDING) as agent:
        backend = A2ABackend(
            agent.url,
            timeout_seconds=10,
            answer_timeout_seconds=10,
            transports=(A2A_GRPC_BINDING,),
            max_message_bytes=2 * LARGE_ARTIFACT_CHARS,
        )
        try:
            events = await _turn(backend, "large")
        finally:
            await backend.aclose()
    assert isinstance(events[-1], Complete)
    artifacts = [
        event.body["payload"]["artifact"]
        for event in events
        if isinstance(event, Passthrough) and event.body["branch"] == "artifact_update"
    ]
    assert [len(artifact["parts"][0]["text"]) for artifact in artifacts] == [LARGE_ARTIFACT_CHARS]


@pytest.mark.asyncio
async def test_an_agent_offering_none_of_the_transports_is_unsupported(tmp_path: Path) -> None:
    with running_agent(free_port(), tmp_path / "agent.jsonl", A2A_JSONRPC_BINDING) as agent:
        backend = A2ABackend(
            agent.url,
            timeout_seconds=10,
            answer_timeout_seconds=10,
            transports=(A2A_GRPC_BINDING,),
            max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
        )
        try:
            with pytest.raises(BackendError) as refused:
                await _turn(backend, "hello")
        finally:
            await backend.aclose()
    assert refused.value.code == ErrorCode.A2A_UNSUPPORTED_AGENT
    assert "no compatible transports" in refused.value.message


@pytest.mark.asyncio
async def test_a_blocking_send_past_its_time_is_an_a2a_timeout(agent: Agent) -> None:
    backend = A2ABackend(
        agent.url,
        timeout_seconds=10,
        answer_timeout_seconds=0.5,
        transports=A2A_DEFAULT_TRANSPORTS,
        max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
    )
    envelope = _envelope("slow, longer than the answer may take")
    try:
        with pytest.raises(BackendError) as late:
            async for _ in backend.stream(envelope, read_prompt(envelope), incremental=False):
                pass
    finally:
        await backend.aclose()
    assert late.value.code == ErrorCode.A2A_TIMEOUT
    assert late.value.external is not None and late.value.external["protocol"] == "a2a"
