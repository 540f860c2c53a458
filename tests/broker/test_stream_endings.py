"""Chat calls that end without their final frame reaching the client (a cancel, a deadline, a client
that stopped reading, a shutdown whose grace ran out) still end in the broker, through a real
nats-server: the published copy of the stream is every frame the server built, in sequence, then
exactly one final ``e2a.error`` frame naming why, so ``read_streams`` (``e2a-grpc subscribe``)
ends at once instead of waiting for its idle timeout."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import grpc
import pytest

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc.broker import frame_publisher, stream_reader
from e2a_grpc.chat.events import Event
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.grpc import chat_servicer
from e2a_grpc.model import E2AEnvelope, E2AResponse, ErrorCode, ResponseKind, ResponseStatus
from e2a_grpc.settings import ServerSettings
from tests.conftest import InProcessServer, in_process_server
from tests.support.fakes import ControlledBackend, EndlessBackend, FloodBackend
from tests.support.nats_server import NatsServer, stored_messages
from tests.support.waiting import EVENT_TIMEOUT_SECONDS, within

pytestmark = pytest.mark.timeout(120)
DEFAULTS = ServerSettings()
STREAM, PREFIX = DEFAULTS.nats_stream, DEFAULTS.nats_subject_prefix
#: A subscriber waits this long without a message before it gives up: far longer than the tests'
#: bound on reading a whole stream, so a stream without its final frame fails them.
IDLE_TIMEOUT_SECONDS = 60.0
#: Small enough to keep the tests fast (stream time limit, and the grace of a stalled write).
SHORT_SECONDS = 0.3
#: Frames big enough that HTTP/2 flow control stops the server's writes within a few of them.
BIG_DELTA_BYTES = 64 * 1024
#: A client channel whose HTTP/2 window does not grow (no BDP probing), and frames over that window:
#: a client that stops reading stops the server in the middle of a write, the next frame's at latest.
SMALL_WINDOW = (("grpc.http2.bdp_probe", 0),)
HUGE_DELTA_BYTES = 256 * 1024


def _envelope(request_id: str) -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", request_id=request_id, is_stream=True, params={"text": "hello"})


def _call(channel: grpc.aio.Channel, envelope: E2AEnvelope, **options: Any) -> Any:
    """A raw Chat call, for tests that cancel it or stop reading it."""
    return pb_grpc.AgentServiceStub(channel).Chat(pb.ChatRequest(envelope=envelope.to_proto()), **options)


async def _published(broker: NatsServer, running: InProcessServer, request_id: str) -> list[E2AResponse]:
    """The stream as a subscriber rebuilds it from the broker (in order, checked against the section
    12 invariants, ending at its final frame), once the server's publisher has it all."""
    assert running.server.publisher is not None
    await within(running.server.publisher.flush())
    frames = stream_reader.read_streams(
        broker.url, stream=STREAM, subject_prefix=PREFIX, request_id=request_id, idle_timeout=IDLE_TIMEOUT_SECONDS
    )
    stream = await within(_all(frames))
    # Exactly these frames were stored: none after the final one, none twice.
    stored = await stored_messages(broker.url, STREAM, stream_reader.streams_filter(PREFIX, request_id=request_id))
    assert stored == len(stream)
    return stream


async def _all(frames: Any) -> list[E2AResponse]:
    return [frame async for frame in frames]


def _assert_ends_with(stream: list[E2AResponse], code: ErrorCode) -> E2AResponse:
    final = stream[-1]
    assert (final.response_kind, final.status, final.is_final) == (ResponseKind.E2A_ERROR, ResponseStatus.FAILED, True)
    assert final.body["code"] == code
    assert not any(frame.is_final for frame in stream[:-1])
    return final


@pytest.mark.asyncio
async def test_a_client_cancel_ends_the_published_stream_with_client_cancelled(broker: NatsServer) -> None:
    backend = ControlledBackend(before=("one ", "two "))
    async with (
        in_process_server(backend, publish_nats=broker.url) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        call = _call(channel, _envelope("cancelled"), timeout=30)
        received = [E2AResponse.from_proto((await within(call.read())).response) for _ in range(2)]
        (turn,) = await within(backend.waiting_turns(1))
        call.cancel()
        await within(turn.finished.wait())
        assert turn.cancelled.is_set()
        stream = await _published(broker, running, "cancelled")
    assert [frame.to_json() for frame in stream[:-1]] == [frame.to_json() for frame in received]
    final = _assert_ends_with(stream, ErrorCode.CLIENT_CANCELLED)
    assert "cancelled" in final.body["message"]


@pytest.mark.asyncio
async def test_a_deadline_ends_the_published_stream_with_deadline_exceeded(broker: NatsServer) -> None:
    backend = ControlledBackend(before=("one ",))
    async with (
        in_process_server(backend, publish_nats=broker.url) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        call = _call(channel, _envelope("deadline"), timeout=SHORT_SECONDS)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            while await within(call.read()) is not grpc.aio.EOF:
                pass
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        (turn,) = backend.turns
        await within(turn.finished.wait())
        stream = await _published(broker, running, "deadline")
    assert len(stream) == 2  # the chunk, then the final frame
    _assert_ends_with(stream, ErrorCode.DEADLINE_EXCEEDED)


@pytest.mark.asyncio
async def test_a_cancel_during_a_write_publishes_that_frame_then_the_final_frame(broker: NatsServer) -> None:
    backend = FloodBackend(BIG_DELTA_BYTES, limit=2_000)  # never waits: the server is writing when it comes
    async with (
        in_process_server(backend, publish_nats=broker.url) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        call = _call(channel, _envelope("cancelled-writing"), timeout=30)
        await within(call.read())  # one frame, then the client reads no more and goes away
        call.cancel()
        stream = await _published(broker, running, "cancelled-writing")
    assert len(stream) > 2  # the frames written while the client did not read are in the copy too
    _assert_ends_with(stream, ErrorCode.CLIENT_CANCELLED)
    assert not backend.all_written.is_set()


@pytest.mark.asyncio
async def test_a_client_that_stopped_reading_gets_a_status_and_the_broker_a_final_frame(
    broker: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chat_servicer, "STALLED_WRITE_GRACE_SECONDS", SHORT_SECONDS)
    backend = EndlessBackend(delta_bytes=BIG_DELTA_BYTES)
    async with (
        in_process_server(backend, publish_nats=broker.url, chat_max_stream_seconds=SHORT_SECONDS) as running,
        # No window growth: a loaded machine might not fill a grown window before the time limit, and
        # the stream would end normally instead of stalled.
        grpc.aio.insecure_channel(running.address, options=SMALL_WINDOW) as channel,
    ):
        call = _call(channel, _envelope("stalled"), timeout=30)
        await within(call.read())  # one frame, then the client reads no more
        await within(backend.stopped.wait())
        # The broker's copy ends once the server has given up on the client. Reading the call before
        # that would let a late stall check find the client reading again (a loaded machine did).
        stream = await _published(broker, running, "stalled")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            while await within(call.read()) is not grpc.aio.EOF:
                pass
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    final = _assert_ends_with(stream, ErrorCode.STREAM_TIME_LIMIT)
    assert final.body["details"] == {"max_stream_seconds": SHORT_SECONDS, "client_stalled": True}


@pytest.mark.asyncio
async def test_a_shutdown_whose_grace_runs_out_under_a_write_still_ends_the_published_stream(
    broker: NatsServer,
) -> None:
    """The shutdown does not interrupt a write (the client may still take the frame and then the
    shutdown frame); a client that takes none holds the write until the grace period is over, and the
    call is cancelled: the broker's copy ends with ``server_shutting_down`` all the same."""
    backend = FloodBackend(HUGE_DELTA_BYTES, limit=2_000)
    async with (
        in_process_server(backend, publish_nats=broker.url, grace_seconds=SHORT_SECONDS) as running,
        grpc.aio.insecure_channel(running.address, options=SMALL_WINDOW) as channel,
    ):
        call = _call(channel, _envelope("shutdown-stalled"), timeout=30)
        await within(call.read())  # one frame, then the client reads no more
        assert running.server.publisher is not None
        publisher = running.server.publisher
        await within(running.stop())  # the grace passes, the write is cancelled, the publisher closed
        assert publisher.dropped == 0
        frames = stream_reader.read_streams(
            broker.url,
            stream=STREAM,
            subject_prefix=PREFIX,
            request_id="shutdown-stalled",
            idle_timeout=IDLE_TIMEOUT_SECONDS,
        )
        stream = await within(_all(frames))
        call.cancel()
    _assert_ends_with(stream, ErrorCode.SERVER_SHUTTING_DOWN)


class _PausedPublisher(frame_publisher.FramePublisher):
    """The server's publisher, sending nothing until ``resume`` is set: its queue fills and stays full.
    ``put_waits`` is set once a frame is handed over while the queue is full."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resume = asyncio.Event()
        self.put_waits = asyncio.Event()

    async def put(self, frame: bytes) -> None:
        if self._queue.full():
            self.put_waits.set()
        await super().put(frame)

    async def _publish_first(self) -> None:
        await self.resume.wait()
        await super()._publish_first()


class _CallTasks(ControlledBackend):
    """A ``ControlledBackend`` that keeps the task of each call it serves (the Chat handler's)."""

    def __init__(self, before: tuple[str, ...]) -> None:
        super().__init__(before=before)
        self.tasks: list[asyncio.Task[Any]] = []

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.append(task)
        async for event in super().stream(envelope, prompt):
            yield event


@pytest.mark.asyncio
async def test_a_second_cancel_while_the_closing_frames_wait_for_a_full_queue_loses_none(
    broker: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frame_publisher, "FramePublisher", _PausedPublisher)  # what serve --publish-nats starts
    backend = _CallTasks(before=("one ", "two "))
    async with (
        # A queue of one and a window of one: "one" waits to be sent, "two" fills the queue.
        in_process_server(backend, publish_nats=broker.url, nats_publish_queue=1, nats_publish_window=1) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        publisher = running.server.publisher
        assert isinstance(publisher, _PausedPublisher)
        call = _call(channel, _envelope("cancelled-twice"), timeout=30)
        for _ in range(2):
            await within(call.read())
        await within(backend.waiting_turns(1))
        call.cancel()
        await within(publisher.put_waits.wait())  # the call hands its final frame to the full queue
        (handler,) = backend.tasks
        # A second cancel of the call's task (grpc's stop does not cancel a call its client cancelled,
        # but the event loop's own shutdown or a wrapper's timeout does).
        handler.cancel()
        await within(asyncio.wait([handler]))  # the call ends at once: nothing waits for the broker
        publisher.resume.set()
        await within(publisher.flush())
        stored = await stored_messages(
            broker.url, STREAM, stream_reader.streams_filter(PREFIX, request_id="cancelled-twice")
        )
        assert stored == 3  # both chunks and the final frame
        stream = await _published(broker, running, "cancelled-twice")
    assert [frame.body.get("delta") for frame in stream[:-1]] == ["one ", "two "]
    _assert_ends_with(stream, ErrorCode.CLIENT_CANCELLED)


class _ClosingFloodBackend(FloodBackend):
    """A ``FloodBackend`` that says when the server's shutdown has begun (it closes the backend)."""

    def __init__(self, delta_bytes: int, limit: int) -> None:
        super().__init__(delta_bytes, limit)
        self.closed = asyncio.Event()

    async def aclose(self) -> None:
        self.closed.set()


@pytest.mark.asyncio
async def test_a_client_cancel_during_the_shutdowns_grace_ends_the_published_stream_with_client_cancelled(
    broker: NatsServer,
) -> None:
    """The other order, the grace running out under a write before the client cancels, ends with
    ``server_shutting_down``: test_a_shutdown_whose_grace_runs_out_under_a_write_still_ends_the_published_stream."""
    backend = _ClosingFloodBackend(HUGE_DELTA_BYTES, limit=2_000)
    async with (
        in_process_server(backend, publish_nats=broker.url, grace_seconds=4 * EVENT_TIMEOUT_SECONDS) as running,
        grpc.aio.insecure_channel(running.address, options=SMALL_WINDOW) as channel,
    ):
        call = _call(channel, _envelope("cancelled-in-shutdown"), timeout=30)
        await within(call.read())  # one frame, then the client reads no more: the server waits in a write
        stopping = asyncio.create_task(running.stop())
        await within(backend.closed.wait())  # the shutdown has begun, its grace far from over
        call.cancel()
        await within(stopping)  # the cancelled call unwinds, the server stops, the publisher is flushed
        frames = stream_reader.read_streams(
            broker.url,
            stream=STREAM,
            subject_prefix=PREFIX,
            request_id="cancelled-in-shutdown",
            idle_timeout=IDLE_TIMEOUT_SECONDS,
        )
        stream = await within(_all(frames))
    _assert_ends_with(stream, ErrorCode.CLIENT_CANCELLED)


@pytest.mark.asyncio
async def test_callers_waiting_for_room_when_the_publisher_closes_wait_no_longer(broker: NatsServer) -> None:
    """Calls that outlived the shutdown's wait may still be handing frames to a full queue when the
    publisher closes: they are given up on (and counted), not left waiting for ever."""
    publisher = _PausedPublisher(
        broker.url,
        stream=STREAM,
        subject_prefix=PREFIX,
        type_prefix=DEFAULTS.cloudevents_type_prefix,
        source=None,
        queue_size=1,
        window=1,
        ack_timeout=DEFAULTS.nats_ack_timeout_seconds,
        linger=0.0,
        replicas=DEFAULTS.nats_replicas,
    )
    await publisher.start()
    # The first frame is taken and held unsent (paused), the second fills the queue, the rest wait.
    callers = [asyncio.create_task(publisher.put(b"frame %d" % number)) for number in range(5)]
    await within(publisher.put_waits.wait())
    assert sum(caller.done() for caller in callers) == 2
    await within(publisher.close(timeout=SHORT_SECONDS))
    await within(asyncio.wait(callers))  # each caller's frame was handed over, none waits any more
    assert publisher.dropped == 5  # all of them, the one held unsent included
    await within(publisher.flush())  # nothing is left to wait for
    await within(publisher.put(b"after close"))
    assert publisher.dropped == 6
