"""Text deltas that pile up behind a slow client go out as one frame (``e2a_grpc.chat.coalesce``), in process.

The agent is a ``PushBackend``: the test puts its events while the servicer writes. To hold a write in
flight without timing, the client keeps its HTTP/2 window at the initial 64 KiB (no BDP probing) and
reads nothing: a first frame of ``STALL_BYTES`` cannot be written until it reads, so every event put
after the servicer took that one waits in the inbox. When the client keeps up, each delta is one frame.
Every stream is checked against spec section 12 (``StreamChecker``) and the deltas must concatenate to
the agent's text exactly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.chat.events import Delta, Event, Passthrough
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.model import DeltaKind, ErrorCode
from tests.conftest import InProcessServer, in_process_server
from tests.support.fakes import PushBackend
from tests.support.waiting import within

#: Bigger than the client's 64 KiB window and the server's write buffer: its write waits for the client.
STALL_BYTES = 1024 * 1024
#: The client's channel: its window does not grow, so a reader that stops reading stops the writes.
FIXED_WINDOW = [("grpc.http2.bdp_probe", 0), ("grpc.max_receive_message_length", 4 * STALL_BYTES)]
MAX_COALESCED_BYTES = 100


@pytest_asyncio.fixture
async def backend() -> PushBackend:
    return PushBackend(MAX_COALESCED_BYTES)


@pytest_asyncio.fixture
async def running(backend: PushBackend) -> AsyncIterator[InProcessServer]:
    async with in_process_server(backend, chat_coalesce_max_bytes=MAX_COALESCED_BYTES) as server:
        yield server


@pytest_asyncio.fixture
async def channel(running: InProcessServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(running.address, options=FIXED_WINDOW) as opened:
        yield opened


def _envelope() -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", request_id="req-coalesce", params={"text": "hi"})


def _call(channel: grpc.aio.Channel, **options: Any) -> Any:
    return pb_grpc.AgentServiceStub(channel).Chat(pb.ChatRequest(envelope=_envelope().to_proto()), **options)


async def _read_all(call: Any) -> list[E2AResponse]:
    """The rest of the call's frames, each checked against spec section 12 in order."""
    checker = StreamChecker(_envelope())
    frames = []
    async for reply in call:
        frame = E2AResponse.from_proto(reply.response)
        checker.check(frame)
        frames.append(frame)
    checker.finish()
    return frames


async def _stall(backend: PushBackend, call: Any) -> str:
    """Start the stream and leave the servicer writing a frame its client cannot take yet."""
    await within(backend.started.wait())
    stalling = "s" * STALL_BYTES
    backend.put(stalling)
    await within(backend.taken_at_least(1))  # its write is in flight now, and stays so: nobody reads
    return stalling


async def _put_one_by_one(backend: PushBackend, events: list[str | Event]) -> None:
    """Put each event on its own turn of the event loop, as an agent's messages arrive: a servicer
    whose writer were free would take each one alone."""
    for event in events:
        backend.put(event)
        await asyncio.sleep(0)


def _chunks(frames: list[E2AResponse]) -> list[tuple[str, Any]]:
    return [(frame.body["delta_kind"], frame.body["delta"]) for frame in frames if frame.response_kind == "e2a.chunk"]


@pytest.mark.asyncio
async def test_deltas_that_wait_behind_a_stalled_write_go_out_merged(
    backend: PushBackend, channel: grpc.aio.Channel
) -> None:
    pieces = [f"word{index:02d} " for index in range(25)]  # 7 bytes each
    call = _call(channel, timeout=30)
    stalling = await _stall(backend, call)
    await _put_one_by_one(backend, list(pieces))
    backend.finish(stalling + "".join(pieces))
    frames = await within(_read_all(call))
    *chunks, final = frames
    deltas = [chunk.body["delta"] for chunk in chunks]
    # 25 deltas, 14 of them fit in 100 bytes: 3 frames instead of 25, none over the bound, in order.
    assert deltas == [stalling, "".join(pieces[:14]), "".join(pieces[14:])]
    assert all(len(delta.encode()) <= MAX_COALESCED_BYTES for delta in deltas[1:])
    assert "".join(deltas) == final.body["result"]["content"]
    assert len(backend.taken) == 4  # the stalling delta, the 2 merged ones and the result


@pytest.mark.asyncio
async def test_merging_keeps_to_one_kind_and_never_passes_another_event(
    backend: PushBackend, channel: grpc.aio.Channel
) -> None:
    plan = Passthrough("acp.session_update", {"update": {"sessionUpdate": "plan"}})
    tool = Delta(DeltaKind.TOOL, {"toolCallId": "call-1", "status": "pending"})
    image = Delta(DeltaKind.CUSTOM, {"type": "image", "data": "AA=="}, "image/png")
    events: list[str | Event] = [
        "a", "b", Delta(DeltaKind.REASONING, "think "), Delta(DeltaKind.REASONING, "more"), "c",
        tool, "d", "e", plan, "f", Delta(DeltaKind.TEXT, "typed", "text/markdown"), "g", image, "h", "i",
    ]  # fmt: skip
    call = _call(channel, timeout=30)
    stalling = await _stall(backend, call)
    await _put_one_by_one(backend, events)
    backend.finish(stalling + "abcdefghi")
    frames = await within(_read_all(call))
    kinds = [frame.response_kind for frame in frames]
    assert kinds == ["e2a.chunk"] * 6 + ["acp.session_update"] + ["e2a.chunk"] * 5 + ["e2a.complete"]
    assert _chunks(frames) == [
        ("text", stalling), ("text", "ab"), ("reasoning", "think more"), ("text", "c"), ("tool", tool.delta),
        ("text", "de"), ("text", "f"), ("text", "typed"), ("text", "g"), ("custom", image.delta), ("text", "hi"),
    ]  # fmt: skip
    assert frames[6].body == plan.body
    mime_types = [frame.body.get("mime_type") for frame in frames if frame.response_kind == "e2a.chunk"]
    assert mime_types[7:10] == ["text/markdown", None, "image/png"]


@pytest.mark.asyncio
async def test_a_client_that_keeps_up_gets_each_delta_in_a_frame_of_its_own(
    backend: PushBackend, channel: grpc.aio.Channel
) -> None:
    pieces = [f"w{index} " for index in range(20)]
    call = _call(channel, timeout=30)
    await within(backend.started.wait())
    checker = StreamChecker(_envelope())
    for piece in pieces:
        backend.put(piece)
        frame = E2AResponse.from_proto((await within(call.read())).response)  # it comes at once, alone
        checker.check(frame)
        assert frame.body["delta"] == piece
    backend.finish("".join(pieces))
    final = E2AResponse.from_proto((await within(call.read())).response)
    checker.check(final)
    assert final.body["result"]["content"] == "".join(pieces) and checker.finish() is final
    assert await within(call.read()) is grpc.aio.EOF


@pytest.mark.asyncio
async def test_a_client_cancel_with_deltas_waiting_stops_the_agent(
    backend: PushBackend, channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    call = _call(channel, timeout=30)
    await _stall(backend, call)
    await _put_one_by_one(backend, ["one ", "two "])
    call.cancel()
    await within(backend.stopped.wait())
    assert await call.code() == grpc.StatusCode.CANCELLED
    assert len(backend.taken) == 1  # the waiting deltas were not written after the cancel
    assert not caplog.records  # a cancel under a pending write is no backend failure, nor a second write


@pytest.mark.asyncio
async def test_a_deadline_with_deltas_waiting_stops_the_agent(
    backend: PushBackend, channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    call = _call(channel, timeout=1.0)
    await _stall(backend, call)
    await _put_one_by_one(backend, ["one ", "two "])
    await within(backend.stopped.wait())  # the deadline passes while the write waits for the client
    assert await call.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert len(backend.taken) == 1
    assert not caplog.records


@pytest.mark.asyncio
async def test_a_shutdown_with_deltas_waiting_still_ends_with_the_shutdown_frame(
    backend: PushBackend, running: InProcessServer, channel: grpc.aio.Channel
) -> None:
    call = _call(channel, timeout=30)
    stalling = await _stall(backend, call)
    await _put_one_by_one(backend, ["one ", "two "])
    stopping = asyncio.create_task(running.stop())
    await within(backend.closed.wait())  # the servicer has begun its shutdown (it closes its backend)
    frames = await within(_read_all(call))  # the stalled write completes as the client reads
    await within(stopping)
    chunk, final = frames
    assert chunk.body["delta"] == stalling
    assert (final.response_kind, final.status, final.body["code"]) == (
        "e2a.error", "failed", ErrorCode.SERVER_SHUTTING_DOWN,
    )  # fmt: skip
    await within(backend.stopped.wait())
