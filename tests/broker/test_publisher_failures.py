"""Bugs in the NATS publisher (``FramePublisher``), injected through subclasses, against a real
nats-server: a bug in the handling of one frame (building its message, sending it, reading its
answer) is logged with its traceback and the frame's stand-in is published in its place, so the
broker's copy of its stream has no gap and ends; a frame whose stand-in meets the bug too is lost
alone, logged as such, and publishing goes on; a failure of a publisher task stops publishing, logged with its traceback,
and neither ``put`` nor ``flush`` (nor Chat) ever waits for it again."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio

from e2a.v1.agent_service_pb2 import ChatResponse
from e2a_grpc.broker import frame_publisher, stream_reader
from e2a_grpc.broker.frame_messages import NOT_PUBLISHED_DELTA, BrokerMessage, FrameMessages
from e2a_grpc.chat.events import Delta
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.client import achat
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse
from e2a_grpc.settings import ServerSettings
from tests.conftest import in_process_server
from tests.support.fakes import FAKE_INFO
from tests.support.nats_server import NatsServer, stored_messages
from tests.support.waiting import within

pytestmark = pytest.mark.timeout(120)
in_module_loop = pytest.mark.asyncio(loop_scope="module")
DEFAULTS = ServerSettings()
STREAM, PREFIX = DEFAULTS.nats_stream, DEFAULTS.nats_subject_prefix


def _frames(request_id: str, words: int) -> list[bytes]:
    """A stream's frames as the Chat servicer hands them to the publisher: ``words`` chunks, then the final one."""
    envelope = E2AEnvelope(method="chat.send", request_id=request_id, is_stream=True, params={"text": "x"})
    builder = FrameBuilder(envelope, FAKE_INFO, UtcClock())
    chunks = [builder.delta(Delta(DeltaKind.TEXT, f"w{n} ")) for n in range(words)]
    return [*chunks, builder.complete({"content": ""})]


async def _stored(broker: NatsServer, request_id: str) -> int:
    return await stored_messages(broker.url, STREAM, stream_reader.streams_filter(PREFIX, request_id=request_id))


def _publisher(
    cls: type[frame_publisher.FramePublisher], broker: NatsServer, **settings: Any
) -> frame_publisher.FramePublisher:
    return cls.from_settings(ServerSettings(publish_nats=broker.url, **settings))


@pytest_asyncio.fixture(loop_scope="module")
async def started(broker: NatsServer) -> AsyncIterator[list[frame_publisher.FramePublisher]]:
    """Publishers the test starts (appended here) are closed after it."""
    publishers: list[frame_publisher.FramePublisher] = []
    yield publishers
    for publisher in publishers:
        await publisher.close(1.0)


def _tracebacks(caplog: pytest.LogCaptureFixture, error: type[BaseException]) -> list[logging.LogRecord]:
    """The ERROR records that carry an ``error``'s traceback."""
    return [
        record
        for record in caplog.records
        if record.levelno == logging.ERROR and record.exc_info is not None and isinstance(record.exc_info[1], error)
    ]


def _unencodable(message: BrokerMessage) -> BrokerMessage:
    """``message`` with a header value nats-py cannot encode (an int): a bug of the kind the publisher
    meets only when it sends the frame."""
    return message._replace(headers={**message.headers, "ce-e2abug": 1})  # type: ignore[dict-item]


class _UnencodableHeader(FrameMessages):
    """Writes every message of the stream ``poison`` (stand-ins too) with a header nats-py cannot encode."""

    def message(self, frame: bytes) -> BrokerMessage:
        message = super().message(frame)
        return _unencodable(message) if ".poison" in message.subject else message


class _BuggyFrames(FrameMessages):
    """Meets a bug on exactly the frames given: building the message of those in ``unbuildable``,
    sending that of those in ``unsendable``. Their stand-ins are other frames, which it spares."""

    def __init__(self, *, unbuildable: tuple[bytes, ...] = (), unsendable: tuple[bytes, ...] = ()) -> None:
        super().__init__(subject_prefix=PREFIX, type_prefix=DEFAULTS.cloudevents_type_prefix, source=None)
        self.unbuildable, self.unsendable = unbuildable, unsendable

    def message(self, frame: bytes) -> BrokerMessage:
        if frame in self.unbuildable:
            raise RuntimeError("a bug building the message")
        message = super().message(frame)
        return _unencodable(message) if frame in self.unsendable else message


async def _read_back(broker: NatsServer, request_id: str) -> list[E2AResponse]:
    """The stream as a subscriber rebuilds it: in order, checked, ending at its final frame."""
    frames = stream_reader.read_streams(broker.url, stream=STREAM, subject_prefix=PREFIX, request_id=request_id)
    return await within(_collect(frames))


async def _publish_all(publisher: frame_publisher.FramePublisher, frames: list[bytes]) -> None:
    for frame in frames:
        await within(publisher.put(frame))
    await within(publisher.flush())


@in_module_loop
async def test_a_bug_building_the_final_frames_message_publishes_its_stand_in(
    broker: NatsServer, started: list[frame_publisher.FramePublisher], caplog: pytest.LogCaptureFixture
) -> None:
    publisher = _publisher(frame_publisher.FramePublisher, broker)
    frames = _frames("unbuilt-final", 3)
    publisher._messages = _BuggyFrames(unbuildable=(frames[-1],))
    await publisher.start()
    started.append(publisher)
    await _publish_all(publisher, frames)
    assert (publisher.dropped, publisher.stood_in, publisher.published) == (0, 1, len(frames))
    assert await _stored(broker, "unbuilt-final") == len(frames)
    stream = await _read_back(broker, "unbuilt-final")
    original = [E2AResponse.from_proto(ChatResponse.FromString(frame).response) for frame in frames]
    assert [frame.to_json() for frame in stream[:-1]] == [frame.to_json() for frame in original[:-1]]
    final = stream[-1]
    assert (final.response_id, final.sequence) == (original[-1].response_id, original[-1].sequence)
    assert (final.response_kind, final.is_final, final.body["code"]) == ("e2a.error", True, "frame_not_published")
    assert "RuntimeError" in final.body["details"]["reason"]
    (logged,) = _tracebacks(caplog, RuntimeError)
    assert "cannot build the CloudEvent of Chat frame" in logged.getMessage()


@in_module_loop
async def test_a_bug_sending_a_chunk_publishes_its_stand_in_and_leaves_no_gap(
    broker: NatsServer, started: list[frame_publisher.FramePublisher], caplog: pytest.LogCaptureFixture
) -> None:
    publisher = _publisher(frame_publisher.FramePublisher, broker)
    frames = _frames("unsent-chunk", 3)
    publisher._messages = _BuggyFrames(unsendable=(frames[1],))
    await publisher.start()
    started.append(publisher)
    await _publish_all(publisher, frames)
    assert (publisher.dropped, publisher.stood_in, publisher.published) == (0, 1, len(frames))
    assert await _stored(broker, "unsent-chunk") == len(frames)
    stream = await _read_back(broker, "unsent-chunk")
    assert [frame.sequence for frame in stream] == list(range(len(frames)))
    stand_in = stream[1]
    assert (stand_in.response_kind, stand_in.is_final) == ("e2a.chunk", False)
    assert stand_in.body["delta"][NOT_PUBLISHED_DELTA]["sequence"] == 1
    assert stream[-1].response_kind == "e2a.complete"
    (logged,) = _tracebacks(caplog, AttributeError)
    assert "cannot publish Chat frame" in logged.getMessage()


@in_module_loop
async def test_a_bug_that_meets_the_stand_in_too_loses_that_frame_alone_and_says_so(
    broker: NatsServer, started: list[frame_publisher.FramePublisher], caplog: pytest.LogCaptureFixture
) -> None:
    publisher = _publisher(frame_publisher.FramePublisher, broker)
    publisher._messages = _UnencodableHeader(subject_prefix=PREFIX, type_prefix="io.e2a", source=None)
    await publisher.start()
    started.append(publisher)
    poisoned, after = _frames("poison", 0), _frames("after-poison", 20)
    await _publish_all(publisher, [*poisoned, *after])  # returns: the frame no longer waits for an ack
    assert (publisher.dropped, publisher.stood_in, publisher.published) == (1, 1, len(after))
    assert await _stored(broker, "poison") == 0
    assert await _stored(broker, "after-poison") == len(after)
    frame_bug, stand_in_bug = _tracebacks(caplog, AttributeError)
    assert "cannot publish Chat frame" in frame_bug.getMessage()
    assert "cannot publish Chat frame" in stand_in_bug.getMessage()
    assert "nor its stand-in could be published" in caplog.text
    assert not publisher.failed


class _BrokenAnswers(frame_publisher.FramePublisher):
    """Fails on the broker's answer to the first frame of the stream ``unanswered`` (not its stand-in's)."""

    def _answered(self, publish: Any, reply: Any) -> None:
        first_frame = ".unanswered" in publish.message.subject and publish.message.headers["ce-seq"] == "0"
        if first_frame and not publish.stand_in:
            raise RuntimeError("a bug reading the ack")
        super()._answered(publish, reply)


@in_module_loop
async def test_a_bug_reading_an_answer_settles_that_frame_and_holds_back_no_other(
    broker: NatsServer, started: list[frame_publisher.FramePublisher], caplog: pytest.LogCaptureFixture
) -> None:
    # A window of one: a frame that stayed unsettled would hold back every later frame.
    publisher = _publisher(_BrokenAnswers, broker, nats_publish_window=1)
    await publisher.start()
    started.append(publisher)
    frames = _frames("unanswered", 10)
    await _publish_all(publisher, frames)
    # Its stand-in is published, and acknowledged as a duplicate: the frame was stored, only its ack was lost.
    assert (publisher.dropped, publisher.stood_in, publisher.published) == (0, 1, len(frames))
    assert await _stored(broker, "unanswered") == len(frames)
    stream = await _read_back(broker, "unanswered")
    assert stream[0].to_json() == E2AResponse.from_proto(ChatResponse.FromString(frames[0]).response).to_json()
    (logged,) = _tracebacks(caplog, RuntimeError)
    assert "cannot read NATS's answer" in logged.getMessage()


class _LoopBug(frame_publisher.FramePublisher):
    """Its publishing task fails after it took its first frame from the queue."""

    async def _run(self) -> None:
        self._batch.append(await self._queue.get())
        raise RuntimeError("a bug in the publisher's loop")


@in_module_loop
async def test_a_failed_publisher_task_is_logged_and_never_blocks_put_or_flush(
    broker: NatsServer, started: list[frame_publisher.FramePublisher], caplog: pytest.LogCaptureFixture
) -> None:
    publisher = _publisher(_LoopBug, broker, nats_publish_queue=2)
    await publisher.start()
    started.append(publisher)
    frames = _frames("after-failure", 30)
    for frame in frames:  # far more than the queue holds
        await within(publisher.put(frame))
    await within(publisher.flush())
    assert publisher.failed
    assert (publisher.dropped, publisher.published) == (len(frames), 0)
    (logged,) = _tracebacks(caplog, RuntimeError)
    assert "no more Chat frames are published" in logged.getMessage()
    await within(publisher.close(1.0))
    started.remove(publisher)
    assert "31 Chat frames in all were not published" in caplog.text


@pytest.mark.asyncio
async def test_chat_goes_on_when_the_servers_publisher_failed(
    broker: NatsServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(frame_publisher, "FramePublisher", _LoopBug)  # what serve --publish-nats starts
    envelope = E2AEnvelope(method="chat.send", request_id="chat-on", is_stream=True, params={"text": "a b c d e f"})
    async with (
        in_process_server(publish_nats=broker.url, nats_publish_queue=1) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        assert isinstance(running.server.publisher, _LoopBug)
        for _ in range(5):  # every call gets its whole stream, though no frame is published
            frames = await within(_collect(achat(channel, envelope)))
            assert frames[-1].response_kind == "e2a.complete"
            assert frames[-1].body["result"]["content"] == "a b c d e f"
        assert running.server.publisher.failed
    assert _tracebacks(caplog, RuntimeError)


async def _collect(frames: AsyncIterator[E2AResponse]) -> list[E2AResponse]:
    return [frame async for frame in frames]
