"""Chat frames as CloudEvents on NATS JetStream (nats-py, the ``nats`` extra).

Each frame is one NATS message in the CloudEvents binary mode (``ce-*`` headers, ``content-type``,
the frame's wire JSON as payload) on ``<prefix>.<session>.<request>``, with ``Nats-Msg-Id`` = the
frame's ``response_id``: a frame published twice (a retry after a lost ack, a broker restart) is
stored once. The stream (file storage, so a broker restart keeps it) is created if missing.

``FramePublisher`` takes frames from the Chat servicer through a bounded queue and publishes them
in windows of concurrent publishes, retrying each until the broker acknowledges it; Chat never
waits for the broker unless the queue is full. ``read_streams`` rebuilds streams from a
consumer of its own (``StreamAssembler``), resuming after the last message it saw when the broker
or the connection went away.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck, StorageType, StreamConfig

from e2a_grpc.broker.assembly import StreamAssembler
from e2a_grpc.chat.frames import frame_record
from e2a_grpc.chat.invariants import StreamInvariantError
from e2a_grpc.errors import E2AValueError
from e2a_grpc.model import E2AResponse
from e2a_grpc.protocols import cloudevents

log = logging.getLogger(__name__)

#: JetStream's de-duplication header.
MSG_ID_HEADER = "Nats-Msg-Id"
#: How long JetStream remembers message ids for de-duplication (its default).
DUPLICATE_WINDOW_SECONDS = 120.0
#: Subject token of a frame whose request has no session.
NO_SESSION = "_"
_PLAIN_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
#: Frames published concurrently, then awaited together.
PUBLISH_WINDOW = 256
#: How long a publish waits for the broker's ack before it is sent again (with the same id).
ACK_TIMEOUT_SECONDS = 2.0
#: The pause before retrying publishes the broker did not acknowledge, doubling up to the maximum.
RETRY_PAUSE_SECONDS = 0.2
MAX_RETRY_PAUSE_SECONDS = 2.0
#: Messages asked for per fetch by a reader.
FETCH_BATCH = 256


def subject_token(value: str) -> str:
    """``value`` as one NATS subject token: itself when plain (letters, digits, ``-``, ``_``), else
    ``~`` and its URL-safe base64, so that ``.``, ``*``, ``>`` and spaces cannot split or widen it."""
    if value != NO_SESSION and _PLAIN_TOKEN.match(value):
        return value
    return "~" + base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def frame_subject(prefix: str, session_id: str | None, request_id: str) -> str:
    """Where a frame is published: ``<prefix>.<session or _>.<request>``."""
    session = NO_SESSION if session_id is None else subject_token(session_id)
    return f"{prefix}.{session}.{subject_token(request_id)}"


def streams_filter(prefix: str, *, session_id: str | None = None, request_id: str | None = None) -> str:
    """The subjects of one request's stream, of a session's streams, or of every stream."""
    if session_id is None and request_id is None:
        return f"{prefix}.>"
    session = "*" if session_id is None else subject_token(session_id)
    request = "*" if request_id is None else subject_token(request_id)
    return f"{prefix}.{session}.{request}"


@dataclass(frozen=True)
class BrokerMessage:
    """A frame as the NATS message that carries it."""

    subject: str
    headers: dict[str, str]
    payload: bytes


def frame_message(frame: E2AResponse, *, subject_prefix: str, type_prefix: str, source: str | None) -> BrokerMessage:
    """The NATS message of a frame: its CloudEvent in binary mode, de-duplicated by ``response_id``."""
    event = cloudevents.record_to_event(frame, type_prefix=type_prefix, source=source)
    binary = cloudevents.to_http_binary(event)
    headers = {**binary.headers, MSG_ID_HEADER: event.id}
    return BrokerMessage(
        frame_subject(subject_prefix, frame.session_id, frame.request_id or event.id), headers, binary.body
    )


def frame_of(msg: Msg) -> E2AResponse:
    """The frame a message carries; an event that is not a frame is an error naming the attribute."""
    event = cloudevents.from_http_binary(msg.headers or {}, msg.data)
    record = cloudevents.event_to_record(event)
    if not isinstance(record, E2AResponse):
        raise E2AValueError("mcptype", "a Chat stream carries response frames, got a request")
    return record


#: Connection attempts before a first connection gives up (a broker that is down now is an error);
#: once connected, reconnection never stops (a broker restart is not).
FIRST_CONNECT_ATTEMPTS = 3


async def _log_error(error: Exception) -> None:
    log.debug("nats: %r", error)  # connection troubles: the retries above say what matters


async def connect(url: str) -> NatsClient:
    """A connection to ``url`` (or to any of comma-separated URLs, a cluster's nodes) that reconnects
    for as long as it is open; raises NoServersError (or OSError) when no broker can be reached now."""
    nc = await nats.connect(
        [server.strip() for server in url.split(",") if server.strip()],
        connect_timeout=2,
        allow_reconnect=True,
        max_reconnect_attempts=FIRST_CONNECT_ATTEMPTS,
        reconnect_time_wait=0.25,
        name="e2a-grpc",
        error_cb=_log_error,
    )
    nc.options["max_reconnect_attempts"] = -1  # nats-py reads it on each reconnection
    return nc


async def ensure_stream(js: JetStreamContext, name: str, subject_prefix: str) -> None:
    """Create the frames' stream (file storage) unless it exists; several servers may race to."""
    config = StreamConfig(
        name=name,
        subjects=[f"{subject_prefix}.>"],
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_SECONDS,
    )
    try:
        await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        try:
            await js.add_stream(config)
        except nats.js.errors.BadRequestError:
            await js.stream_info(name)  # another server created it first; anything else fails here


class FramePublisher:
    """Publishes every frame handed to ``put`` to JetStream, in the background, losing none."""

    def __init__(
        self,
        url: str,
        *,
        stream: str,
        subject_prefix: str,
        type_prefix: str,
        source: str | None,
        queue_size: int,
    ) -> None:
        self._url = url
        self._stream = stream
        self._subject_prefix = subject_prefix
        self._type_prefix = type_prefix
        self._source = source
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(queue_size)
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None
        self._worker: asyncio.Task[None] | None = None
        #: Frames the broker has acknowledged.
        self.published = 0

    async def start(self) -> None:
        """Connect and make sure the stream exists; raises if the broker cannot be reached now."""
        self._nc = await connect(self._url)
        self._js = self._nc.jetstream()
        try:
            await ensure_stream(self._js, self._stream, self._subject_prefix)
        except BaseException:
            await self._nc.close()  # it would otherwise go on reconnecting for ever
            raise
        self._worker = asyncio.create_task(self._run(), name="e2a-nats-publisher")
        log.info("publishing Chat frames to %s (stream %s)", self._url, self._stream)

    async def put(self, frame: bytes) -> None:
        """Hand over a frame, a serialized ChatResponse (Chat waits here only while the queue is full)."""
        await self._queue.put(frame)

    async def flush(self) -> None:
        """Wait until every frame handed over so far is acknowledged by the broker."""
        await self._queue.join()

    async def close(self, timeout: float) -> None:
        """Publish what is queued (for at most ``timeout`` seconds), then disconnect."""
        try:
            async with asyncio.timeout(timeout):
                await self.flush()
        except TimeoutError:
            log.warning("%d Chat frames were not published to NATS before shutdown", self._queue.qsize())
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        if self._nc is not None:
            await self._nc.close()

    async def _run(self) -> None:
        while True:
            frames = [await self._queue.get()]
            while len(frames) < PUBLISH_WINDOW and not self._queue.empty():
                frames.append(self._queue.get_nowait())
            try:
                await self._publish(frames)
            finally:
                for _ in frames:
                    self._queue.task_done()

    def _message(self, frame: bytes) -> BrokerMessage:
        # Parsed here, in the publisher's task, so Chat's own path never decodes its frames.
        return frame_message(
            frame_record(frame),
            subject_prefix=self._subject_prefix,
            type_prefix=self._type_prefix,
            source=self._source,
        )

    async def _publish(self, frames: list[bytes]) -> None:
        assert self._js is not None and self._nc is not None
        pending = []
        for number, frame in enumerate(frames):
            try:
                pending.append(self._message(frame))
            except Exception:  # a frame the servicer wrote is valid: a bug, which must not stop the others
                log.exception("cannot build the CloudEvent of Chat frame %d of this batch; not published", number)
        pause = RETRY_PAUSE_SECONDS
        while pending:
            acks: dict[asyncio.Future[PubAck], BrokerMessage] = {}
            unsent: list[BrokerMessage] = []
            too_big = 0
            for message in pending:
                try:
                    # Checked first too: nats-py keeps a publish slot for a publish_async it then refuses.
                    if len(message.payload) > self._nc.max_payload:
                        raise nats.errors.MaxPayloadError
                    ack = await self._js.publish_async(message.subject, message.payload, headers=message.headers)
                except nats.errors.MaxPayloadError:
                    # No retry can publish it, and retrying would hold back every frame after it.
                    log.error(
                        "Chat frame %s (%d bytes) is over the NATS server's max_payload; not published",
                        message.headers[MSG_ID_HEADER],
                        len(message.payload),
                    )
                    too_big += 1
                except nats.errors.Error:
                    unsent.append(message)  # disconnected and its buffer full: send again later
                else:
                    acks[ack] = message
            if acks:
                done, late = await asyncio.wait(acks, timeout=ACK_TIMEOUT_SECONDS)
                for late_ack in late:
                    late_ack.cancel()
                refused = [ack for ack in done if ack.cancelled() or ack.exception() is not None]
                failed = [acks[ack] for ack in (*late, *refused)]
                if any(
                    not ack.cancelled() and isinstance(ack.exception(), nats.js.errors.NoStreamResponseError)
                    for ack in refused
                ):
                    # No stream takes the subject any more (deleted by an operator): make it again.
                    with contextlib.suppress(nats.errors.Error):
                        await ensure_stream(self._js, self._stream, self._subject_prefix)
            else:
                failed = []
            self.published += len(pending) - len(failed) - len(unsent) - too_big
            pending = unsent + failed
            if pending:
                log.warning("NATS did not acknowledge %d Chat frames; publishing them again", len(pending))
                await asyncio.sleep(pause)
                pause = min(pause * 2, MAX_RETRY_PAUSE_SECONDS)


async def _consumer(
    js: JetStreamContext, stream: str, subject_filter: str, start_sequence: int
) -> JetStreamContext.PullSubscription:
    """An ephemeral pull consumer of the stream from ``start_sequence`` (the broker forgets it when idle)."""
    config = ConsumerConfig(
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=start_sequence,
        inactive_threshold=60.0,
    )
    return await js.pull_subscribe(subject_filter, stream=stream, config=config)


async def read_streams(
    url: str,
    *,
    stream: str,
    subject_prefix: str,
    session_id: str | None = None,
    request_id: str | None = None,
    streams: int | None = 1,
    idle_timeout: float | None = None,
    assembler: StreamAssembler | None = None,
) -> AsyncIterator[E2AResponse]:
    """The frames of the streams under the filter, each stream in ``sequence`` order and checked,
    from the stream's first message on (late joiners get everything the broker keeps). Ends after
    ``streams`` streams ended with their final frame (None: never); ``idle_timeout``: raise
    TimeoutError after that long without a message. Messages are acknowledged once yielded."""
    assembler = assembler or StreamAssembler()
    subject_filter = streams_filter(subject_prefix, session_id=session_id, request_id=request_id)
    nc = await connect(url)
    js = nc.jetstream()
    next_sequence = 1
    subscription: JetStreamContext.PullSubscription | None = None
    loop = asyncio.get_running_loop()
    last_message = loop.time()
    try:
        while True:
            if idle_timeout is not None and loop.time() - last_message > idle_timeout:
                raise TimeoutError(f"no frame for {idle_timeout:g} s on {subject_filter}")
            try:
                if subscription is None:
                    subscription = await _consumer(js, stream, subject_filter, next_sequence)
                messages = await subscription.fetch(FETCH_BATCH, timeout=1.0)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            except nats.errors.Error as exc:
                # The broker restarted (the consumer may be gone) or the connection is down: resume
                # after the last message seen once it is back.
                log.debug("reading %s: %r; resuming from stream sequence %d", subject_filter, exc, next_sequence)
                if subscription is not None:
                    with contextlib.suppress(nats.errors.Error):
                        await subscription.unsubscribe()
                subscription = None
                await asyncio.sleep(RETRY_PAUSE_SECONDS)
                continue
            last_message = loop.time()
            for message in messages:
                next_sequence = max(next_sequence, message.metadata.sequence.stream + 1)
                for frame in assembler.add(frame_of(message)):
                    yield frame
                with contextlib.suppress(nats.errors.Error):
                    await message.ack()  # an ack lost to a disconnect means a redelivery, which is dropped
                if streams is not None and assembler.finished_count >= streams:
                    return
    finally:
        await nc.close()


__all__ = [
    "BrokerMessage",
    "FramePublisher",
    "StreamInvariantError",
    "frame_message",
    "frame_of",
    "frame_subject",
    "read_streams",
    "streams_filter",
    "subject_token",
]
