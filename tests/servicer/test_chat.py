"""The Chat RPC in process: section 12 invariants, bad requests, backend errors, cancel, deadline,
shutdown, flow control, frame logs.

Each test runs the project's ``E2AServer`` in its own event loop on 127.0.0.1 (tests/conftest.py,
``in_process_server``) with the echo backend or a fake one the test drives with events
(tests/support/fakes.py). What needs a real process (signals, TLS, the CLI, open files) is in
tests/e2e/test_server_process.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import E2AAuth, E2AEnvelope, E2AResponse
from e2a_grpc.chat.events import BackendError, Delta, Passthrough
from e2a_grpc.chat.frames import REQUEST_ID_ASSIGNED_KEY
from e2a_grpc.chat.invariants import StreamChecker, StreamInvariantError
from e2a_grpc.client.chat import achat
from e2a_grpc.model import DeltaKind, ErrorCode
from tests.conftest import InProcessServer, in_process_server
from tests.support.fakes import ControlledBackend, FloodBackend
from tests.support.waiting import within

TEXT = "  Hello,  wide\tworld! 你好 🌍 \n end "


def _envelope(text: str = TEXT, **fields: Any) -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", params={"text": text}, **fields)


async def _frames(channel: grpc.aio.Channel, envelope: E2AEnvelope, **options: Any) -> list[E2AResponse]:
    """Every frame of one Chat call; ``achat`` checks the section 12 invariants as they arrive."""
    return [frame async for frame in achat(channel, envelope, **options)]


def _call(channel: grpc.aio.Channel, envelope: E2AEnvelope, **options: Any) -> Any:
    """A raw Chat call (no invariant checks), for tests that cancel it or stop reading it."""
    return pb_grpc.AgentServiceStub(channel).Chat(pb.ChatRequest(envelope=envelope.to_proto()), **options)


@pytest_asyncio.fixture
async def echo_server() -> AsyncIterator[InProcessServer]:
    async with in_process_server() as running:
        yield running


@pytest_asyncio.fixture
async def channel(echo_server: InProcessServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(echo_server.address) as opened:
        yield opened


# --- the echo backend ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_echo_streams_the_text_word_by_word(channel: grpc.aio.Channel) -> None:
    envelope = _envelope(
        request_id="req-1", jsonrpc_id=2**70, correlation_id="corr", task_id="t", context_id="c", session_id="s",
        message_id="m", is_stream=True, channel="web", user_id="u", agent_ref={"id": "a", "n": 1.0},
        source_agent_id="src",
    )  # fmt: skip
    frames = await _frames(channel, envelope, timeout=30)
    *chunks, final = frames
    assert [f.response_kind for f in chunks] == ["e2a.chunk"] * len(chunks) and len(chunks) > 5
    assert "".join(f.body["delta"] for f in chunks) == TEXT
    assert all(f.body["delta_kind"] == "text" and f.status == "in_progress" for f in chunks)
    assert (final.response_kind, final.status, final.is_final) == ("e2a.complete", "succeeded", True)
    assert final.body == {"result": {"content": TEXT}}
    assert {f.request_id for f in frames} == {"req-1"} and all(f.jsonrpc_id == 2**70 for f in frames)
    assert all(f.provenance.source_protocol == "e2a" and f.identity_origin.value == "agent" for f in frames)
    assert all(REQUEST_ID_ASSIGNED_KEY not in f.metadata for f in frames)


@pytest.mark.asyncio
async def test_session_prompt_with_content_blocks(channel: grpc.aio.Channel) -> None:
    envelope = E2AEnvelope(
        method="session/prompt",
        session_id="s1",
        params={
            "content_blocks": [
                {"type": "text", "text": "one "},
                {"type": "image", "data": "AA=="},
                {"type": "text", "text": "two"},
            ]
        },
    )
    final = (await _frames(channel, envelope, timeout=30))[-1]
    assert final.body["result"]["content"] == "one two"


@pytest.mark.asyncio
async def test_server_assigns_a_request_id_and_says_so(channel: grpc.aio.Channel) -> None:
    frames = await _frames(channel, _envelope("a b"), timeout=30)
    (request_id,) = {f.request_id for f in frames}
    assert request_id is not None and len(request_id) == 36  # a UUID
    assert all(f.metadata == {REQUEST_ID_ASSIGNED_KEY: True} for f in frames)


@pytest.mark.parametrize(
    ("request_message", "field"),
    [
        (pb.ChatRequest(), "envelope"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="history.get", params='{"text":"x"}')), "envelope.method"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="chat.send")), "envelope.params"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="chat.send", params="[1]")), "envelope.params"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="chat.send", params="{oops")), "envelope.params"),
    ],
)
@pytest.mark.asyncio
async def test_invalid_requests_fail_before_any_frame(
    channel: grpc.aio.Channel, request_message: pb.ChatRequest, field: str
) -> None:
    call = pb_grpc.AgentServiceStub(channel).Chat(request_message, timeout=10)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call.read()  # the first read already fails: no frame was written
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in str(caught.value.details())


def test_the_checker_catches_broken_streams() -> None:
    envelope = _envelope(request_id="r")
    base: dict[str, Any] = {"request_id": "r", "timestamp": "2026-01-01T00:00:00+00:00", "method": "chat.send"}
    checker = StreamChecker(envelope)
    checker.check(E2AResponse(response_id="a", sequence=0, **base))
    for broken, problem in [
        (E2AResponse(response_id="b", sequence=2, **base), "sequence"),
        (E2AResponse(response_id="a", sequence=1, **base), "response_id"),
        (E2AResponse(response_id="c", sequence=1, **{**base, "request_id": "x"}), "request_id"),
        (E2AResponse(response_id="d", sequence=1, **{**base, "timestamp": "yesterday"}), "timestamp"),
        (E2AResponse(response_id="e", sequence=1, status="succeeded", **base), "status"),
        (
            E2AResponse(response_id="f", sequence=1, is_final=True, status="failed", response_kind="e2a.chunk", **base),
            "e2a.error",
        ),
        (E2AResponse(response_id="g", sequence=1, **{**base, "method": "other"}), "method"),
    ]:
        fresh_checker = StreamChecker(envelope)
        fresh_checker.check(E2AResponse(response_id="a", sequence=0, **base))
        with pytest.raises(StreamInvariantError, match=problem):
            fresh_checker.check(broken)
    with pytest.raises(StreamInvariantError, match="without a final frame"):
        checker.finish()


@pytest.mark.asyncio
async def test_200_concurrent_streams_all_complete_with_valid_invariants(channel: grpc.aio.Channel) -> None:
    async def one(index: int) -> E2AResponse:
        text = f"stream {index} " + "word " * (index % 7)
        frames = await _frames(channel, _envelope(text, request_id=f"req-{index}"), timeout=120)
        assert "".join(f.body["delta"] for f in frames[:-1]) == text
        return frames[-1]

    finals = await asyncio.gather(*(one(i) for i in range(200)))
    assert len(finals) == 200 and all(f.status == "succeeded" for f in finals)


@pytest.mark.asyncio
async def test_frame_log_is_one_json_line_per_frame_without_secrets(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every record of every logger, to look for the secrets in
    secret = "tok-very-secret-123"
    envelope = _envelope("log me", request_id="req-log", auth=E2AAuth(bearer_token=secret, extra_headers={"x": secret}))
    authorized = (("authorization", "Bearer server-secret-456"),)
    async with (
        in_process_server(log_frames=True, token="server-secret-456") as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        frames = await _frames(channel, envelope, timeout=30, metadata=authorized)
    messages = [record.getMessage() for record in caplog.records if record.name == "e2a_grpc.frames"]
    assert all("\n" not in message for message in messages)
    lines = [json.loads(message) for message in messages]
    assert [line["sequence"] for line in lines] == [f.sequence for f in frames]
    for line, frame in zip(lines, frames, strict=True):
        assert list(line) == ["request_id", "response_id", "sequence", "is_final", "response_kind", "timestamp"]
        assert (line["request_id"], line["response_id"], line["is_final"], line["response_kind"], line["timestamp"]) == (
            frame.request_id, frame.response_id, frame.is_final, frame.response_kind, frame.timestamp,
        )  # fmt: skip
    everything = "\n".join(record.getMessage() for record in caplog.records)
    assert secret not in everything and "server-secret-456" not in everything


# --- a fake backend the test drives ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_passthrough_events_become_frames_of_their_kind() -> None:
    update = Passthrough("acp.session_update", {"sessionId": "s1", "update": {"sessionUpdate": "plan"}})
    backend = ControlledBackend(before=(update, "answer"), after=())
    backend.release.set()
    async with in_process_server(backend) as running, grpc.aio.insecure_channel(running.address) as channel:
        first, chunk, final = await within(_frames(channel, _envelope(request_id="req-pass"), timeout=30))
    assert (first.response_kind, first.status, first.body) == ("acp.session_update", "in_progress", update.body)
    assert (chunk.response_kind, chunk.body["delta"]) == ("e2a.chunk", "answer")
    assert (final.response_kind, final.body) == ("e2a.complete", {"result": {"content": "answer"}})
    assert all(frame.provenance.source_protocol == "e2a" for frame in (first, chunk, final))


@pytest.mark.asyncio
async def test_a_backend_error_ends_the_stream_with_a_final_error_frame() -> None:
    error = BackendError(ErrorCode.AGENT_CRASHED, "the agent exited", {"exit_code": 3}, {"protocol": "acp"})
    backend = ControlledBackend(before=("partial ",), after=(), error=error)
    backend.release.set()
    async with in_process_server(backend) as running, grpc.aio.insecure_channel(running.address) as channel:
        chunk, final = await within(_frames(channel, _envelope(request_id="req-err"), timeout=30))
    assert chunk.body["delta"] == "partial "
    assert (final.response_kind, final.status, final.is_final) == ("e2a.error", "failed", True)
    assert final.body == {
        "code": "agent_crashed",
        "message": "the agent exited",
        "details": {"exit_code": 3},
        "external": {"protocol": "acp"},
    }


@pytest.mark.asyncio
async def test_client_cancel_stops_the_backend() -> None:
    backend = ControlledBackend(before=("one ", "two "))
    async with in_process_server(backend) as running, grpc.aio.insecure_channel(running.address) as channel:
        call = _call(channel, _envelope(request_id="req-cancel"))
        first, second = await within(call.read()), await within(call.read())
        assert [E2AResponse.from_proto(r.response).body["delta"] for r in (first, second)] == ["one ", "two "]
        (turn,) = await within(backend.waiting_turns(1))
        call.cancel()
        await within(turn.finished.wait())
        assert turn.cancelled.is_set()  # stopped at its await, not left to finish
        assert await call.code() == grpc.StatusCode.CANCELLED
    assert turn.yielded == [Delta(DeltaKind.TEXT, "one "), Delta(DeltaKind.TEXT, "two ")]


@pytest.mark.asyncio
async def test_deadline_stops_the_stream_and_the_backend() -> None:
    backend = ControlledBackend()
    async with in_process_server(backend) as running, grpc.aio.insecure_channel(running.address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await within(_frames(channel, _envelope(), timeout=0.3))
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        (turn,) = backend.turns
        await within(turn.finished.wait())
        assert turn.waiting.is_set() and turn.cancelled.is_set()  # it was waiting when the deadline passed


@pytest.mark.asyncio
async def test_shutdown_ends_each_stream_with_a_final_error_frame() -> None:
    streams = 5
    backend = ControlledBackend(before=("first ",))
    async with (
        in_process_server(backend, grace_seconds=5) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        calls = [
            asyncio.create_task(_frames(channel, _envelope(request_id=f"r{index}"), timeout=30))
            for index in range(streams)
        ]
        turns = await within(backend.waiting_turns(streams))  # every stream is in flight
        await within(running.stop())  # what SIGTERM runs: tests/e2e/test_server_process.py sends one
        results = await within(asyncio.gather(*calls))
    for frames in results:
        chunk, final = frames
        assert chunk.body["delta"] == "first "
        assert (final.response_kind, final.status, final.is_final) == ("e2a.error", "failed", True)
        assert final.body["code"] == "server_shutting_down" and "shutting down" in final.body["message"]
    assert all(turn.cancelled.is_set() and turn.finished.is_set() for turn in turns)
    assert backend.closed.is_set()  # the servicer closed its backend


#: A client that stops reading must stop the server writing: 2,000 deltas of 64 KiB (125 MiB) would
#: all be written within this window if the server buffered without bound; a quarter of them is far
#: more than HTTP/2 flow control and socket buffers let through.
FLOOD_DELTA_BYTES = 64 * 1024
FLOOD_DELTAS = 2_000
FLOW_CONTROL_WINDOW_SECONDS = 1.0


@pytest.mark.asyncio
async def test_a_client_that_stops_reading_stops_the_server_writing() -> None:
    backend = FloodBackend(FLOOD_DELTA_BYTES, FLOOD_DELTAS)
    async with in_process_server(backend) as running, grpc.aio.insecure_channel(running.address) as channel:
        call = _call(channel, _envelope(request_id="req-slow"))
        await within(call.read())  # one frame, then the client reads no more
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(backend.all_written.wait(), FLOW_CONTROL_WINDOW_SECONDS)
        written = backend.written
        call.cancel()
    assert 1 <= written < FLOOD_DELTAS / 4, written
