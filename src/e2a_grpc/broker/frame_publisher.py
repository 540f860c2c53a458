"""Chat frames as CloudEvents on NATS JetStream (nats-py, the ``nats`` extra).

Each frame is one NATS message in the CloudEvents binary mode (``ce-*`` headers, ``content-type``,
the frame's wire JSON as payload) on ``<prefix>.<session>.<request>``, with ``Nats-Msg-Id`` = the
frame's ``response_id``: a frame published twice (a retry after a lost ack, a broker restart) is
stored once. The stream (file storage, so a broker restart keeps it) is created if missing.

``FramePublisher`` takes frames from the Chat servicer through a bounded queue and publishes them
as they come, up to a window of them unacknowledged at a time (JetStream's acks come back to an
inbox of its own), sending each again until the broker acknowledges it; Chat never waits for the
broker unless the queue is full. ``close`` publishes what it can within its timeout, then gives up
on the frames left (logged, counted in ``dropped``), those of callers still waiting for room
included, so that no caller waits for ever. Its tuning (queue, window, ack timeout, linger) is the
server's ``nats_publish_*`` / ``nats_ack_timeout_seconds`` settings. Each frame's message is written by
``FrameMessages`` (frame_messages.py), the fast form of the general mapping ``frame_message``.

An outage (disconnected, frames not acknowledged in time, refused for now, the client unable to
send) is one WARNING at its first sign and one INFO once the broker acknowledges a frame again (or
reconnects with nothing waiting), each with the number of frames ``queued``; the log says nothing
per frame meanwhile. ``backlogged`` says the queue is full, so Chat streams wait: the server's
health listens (``backlog_listeners``), and it clears only once the queue has drained to half.

A frame the broker cannot take (over the server's max_payload, refused by the stream for good: a
4xx answer) is logged and published as its stand-in (``stand_in_frame``: same sequence and response
id, a final ``frame_not_published`` error for a final frame), so that it holds back no later frame
and the broker's copy of its stream has no gap and ends. So is a frame whose handling hits a bug
(building its message, sending it, reading its answer), logged with the traceback: the stand-in is
another message, which the bug may spare (if the frame was stored after all, the broker drops the
stand-in as a duplicate of its message id). A frame whose stand-in fails too is logged at ERROR,
saying the broker's copy of its stream has a gap or no end, and given up on (counted in
``dropped``). A failure of a publisher task itself, outside
the handling of one frame, is a bug in the publisher's own bookkeeping: rather than run on with it
(a restarted loop could resend, reorder or lose frames without saying so, or fail again at once for
ever), the publisher stops (``failed``): the failure is logged with its traceback at ERROR, every
frame it held and every frame handed over later is given up on at once, so Chat streams go on and
never wait for it, and the operator restarts the server to publish again.

The streams are read back by ``stream_reader.read_streams``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import deque
from collections.abc import Callable

import nats.errors
import nats.js.errors
import orjson
from google.protobuf.message import DecodeError
from nats.aio.client import NO_RESPONDERS_STATUS
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import Header, StorageType, StreamConfig

from e2a.v1 import agent_service_pb2
from e2a_grpc.broker import jetstream_setup
from e2a_grpc.broker.connection import connect
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, BrokerMessage, FrameMessages, stand_in_frame
from e2a_grpc.settings import NATS_DUPLICATE_WINDOW_SECONDS, ServerSettings

log = logging.getLogger(__name__)

#: While frames are in flight (sent, not acknowledged), the publisher lets the next ones gather for
#: its linger time (``nats_publish_linger_seconds``), or until the broker has acknowledged every frame
#: in flight, before it sends them, unless this many are waiting already: the frames sent together
#: cost the server one socket write, and their acks one read, instead of one each (most of the cost of
#: publishing when frames come one at a time). With nothing in flight a frame is sent at once (as
#: Nagle's algorithm does), so that a lone frame, a stream's first, costs no wait.
PUBLISH_BATCH = 64
#: How long after the broker refused a frame (or the client could not send it) it is sent again.
REFUSED_RETRY_SECONDS = 1.0
#: How often unacknowledged frames are looked at, to send again those whose time came.
RETRY_PAUSE_SECONDS = 0.2
#: What nats-py's publish raises for the message itself (not for the connection's state).
_UNSENDABLE = (nats.errors.BadSubjectError, nats.errors.BadHeaderError, nats.errors.MaxPayloadError)
#: What is logged of a frame given up on after a bug met it and its stand-in.
_NOT_PUBLISHED = (
    "neither this Chat frame nor its stand-in could be published: the broker's copy of its stream has a gap "
    "there, or no end if it was the final frame"
)


def _frame_name(frame: bytes) -> str:
    """How the log names a frame (a serialized ChatResponse) whose message could not be built."""
    try:
        response = agent_service_pb2.ChatResponse.FromString(frame).response
    except DecodeError:
        return f"of {len(frame)} bytes that are not a ChatResponse"
    return f"{response.response_id} (sequence {response.sequence} of request {response.request_id})"


def _bug_reason(exc: Exception) -> str:
    """What a stand-in says of a frame a bug of the publisher kept from the broker."""
    return f"the publisher failed on it ({type(exc).__name__}; see the server log)"


async def ensure_stream(js: JetStreamContext, name: str, subject_prefix: str, *, replicas: int) -> None:
    """Create the frames' stream (file storage, ``replicas`` copies) unless it exists (``jetstream_setup``)."""
    config = StreamConfig(
        name=name,
        subjects=[f"{subject_prefix}.>"],
        storage=StorageType.FILE,
        duplicate_window=NATS_DUPLICATE_WINDOW_SECONDS,
        num_replicas=replicas,
    )
    await jetstream_setup.ensure_stream(js, config, kind="frames' stream")


def _is_permanent_refusal(answer: object) -> bool:
    """Whether a JetStream publish reply refuses the message itself (a 4xx error: bad request,
    message too large, ...) rather than for now (503: no leader, storage unavailable, ...)."""
    if not isinstance(answer, dict) or not isinstance(error := answer.get("error"), dict):
        return False
    code = error.get("code")
    return isinstance(code, int) and 400 <= code < 500


class _Publish:
    """A frame's message on its way: the reply subject its ack comes to, and when it was last sent."""

    __slots__ = ("frame", "message", "reply", "sent_at", "stand_in")

    def __init__(self, frame: bytes, message: BrokerMessage) -> None:
        self.frame = frame
        self.message = message
        self.reply = ""  # until it is registered
        self.sent_at = -math.inf  # not sent yet
        #: ``message`` is a stand-in for the frame, which the broker cannot take.
        self.stand_in = False

    @property
    def frame_id(self) -> str:
        return self.message.headers[MSG_ID_HEADER]


class FramePublisher:
    """Publishes every frame handed to ``put`` to JetStream, in the background, losing none (but
    those it cannot publish at all: see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        stream: str,
        subject_prefix: str,
        type_prefix: str,
        source: str | None,
        queue_size: int,
        window: int,
        ack_timeout: float,
        linger: float,
        replicas: int,
    ) -> None:
        self._url = url
        self._stream = stream
        self._replicas = replicas
        self._subject_prefix = subject_prefix
        self._messages = FrameMessages(subject_prefix=subject_prefix, type_prefix=type_prefix, source=source)
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(queue_size)
        self._window = window
        self._ack_timeout = ack_timeout
        self._linger = linger
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None
        self._tasks: list[asyncio.Task[None]] = []
        #: Where the broker's acks come: ``<inbox>.<n>`` for the n-th frame.
        self._inbox = ""
        self._published_so_far = 0
        #: The frames taken from the queue and not yet sent, oldest first.
        self._batch: deque[bytes] = deque()
        #: The frames sent and not acknowledged yet, by reply subject, oldest first.
        self._unacked: dict[str, _Publish] = {}
        self._window_open = asyncio.Event()
        #: Set while no frame is in flight (``_unacked`` empty): what ends the linger early.
        self._all_acked = asyncio.Event()
        self._all_acked.set()
        #: Who waits to hear whether a frame was stored (``when_stored``), by the frame's bytes.
        self._stored_waiters: dict[bytes, asyncio.Future[bool]] = {}
        self._making_stream: asyncio.Task[None] | None = None
        #: Frames the broker has acknowledged.
        self.published = 0
        #: Frames given up on: refused for good, too large or failed on a bug, and no stand-in of
        #: theirs could be published; handed over after a publisher task failed; or not published
        #: by the time the publisher closed.
        self.dropped = 0
        #: Stand-ins written for frames the broker could not take (too large, refused) or a bug kept
        #: from it (the broker drops one as a duplicate if the frame was stored after all).
        self.stood_in = 0
        #: A task of the publisher failed: it publishes nothing more (see the module docstring).
        self.failed = False
        #: ``close`` has run: frames handed over now are given up on at once.
        self.closed = False
        #: Why publishing is failing (the broker unreachable, not acknowledging, refusing for now), from
        #: the first sign until the broker acknowledges a frame again; None while it works.
        self.failing: str | None = None
        self._closing = False
        self._failing_since = 0.0
        #: The queue is full (the broker down that long): Chat streams wait for room. Set when the queue
        #: fills, cleared once it has drained to half (so that readiness does not flap as it drains).
        self.backlogged = False
        #: Called with ``backlogged`` each time it changes (the server's health: NOT_SERVING while True).
        self.backlog_listeners: list[Callable[[bool], None]] = []

    @classmethod
    def from_settings(cls, config: ServerSettings, url: str | None = None) -> FramePublisher:
        """The publisher ``serve --publish-nats`` runs (``config.publish_nats`` is its URL), or an agent
        worker's (``url``: the agent bus's)."""
        url = url or config.publish_nats
        if not url:
            raise ValueError("publish_nats: no NATS URL to publish to")
        return cls(
            url,
            stream=config.nats_stream,
            subject_prefix=config.nats_subject_prefix,
            type_prefix=config.cloudevents_type_prefix,
            source=config.cloudevents_source,
            queue_size=config.nats_publish_queue,
            window=config.nats_publish_window,
            ack_timeout=config.nats_ack_timeout_seconds,
            linger=config.nats_publish_linger_seconds,
            replicas=config.nats_replicas,
        )

    @property
    def queued(self) -> int:
        """Frames handed over and not yet acknowledged by the broker (nor given up on)."""
        return self._queue.qsize() + len(self._batch) + len(self._unacked)

    async def start(self) -> None:
        """Connect and make sure the stream exists; raises if the broker cannot be reached now."""
        self._nc = await connect(self._url, disconnected_cb=self._disconnected, reconnected_cb=self._reconnected)
        self._js = self._nc.jetstream()
        try:
            await ensure_stream(self._js, self._stream, self._subject_prefix, replicas=self._replicas)
        except BaseException:
            self._closing = True  # the disconnection below is no outage: the caller reports why it failed
            await self._nc.close()  # it would otherwise go on reconnecting for ever
            raise
        self._inbox = self._nc.new_inbox()
        await self._nc.subscribe(f"{self._inbox}.*", cb=self._on_reply)
        self._tasks = [
            asyncio.create_task(self._run(), name="e2a-nats-publisher"),
            asyncio.create_task(self._send_unacked_again(), name="e2a-nats-publisher-retries"),
        ]
        for task in self._tasks:
            task.add_done_callback(self._on_task_done)
        log.info("publishing Chat frames to %s (stream %s)", self._url, self._stream)

    async def put(self, frame: bytes) -> None:
        """Hand over a frame, a serialized ChatResponse (Chat waits here only while the queue is full)."""
        if self.closed:
            self.dropped += 1
            self._tell_stored(frame, False)
            return
        await self._queue.put(frame)
        if self._queue.full():
            self._set_backlogged(True)

    def when_stored(self, frame: bytes) -> asyncio.Future[bool]:
        """A future of whether ``frame`` (to be handed to ``put`` next) ends up stored by the broker
        (True: it or its stand-in was acknowledged) or is given up on (False): an agent worker acks its
        request once the final frame is stored. Ask before ``put``."""
        waiter = self._stored_waiters.get(frame)
        if waiter is None:
            waiter = self._stored_waiters[frame] = asyncio.get_running_loop().create_future()
        return waiter

    def _tell_stored(self, frame: bytes, stored: bool) -> None:
        waiter = self._stored_waiters.pop(frame, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(stored)

    def _tell_all_given_up(self) -> None:
        for frame in list(self._stored_waiters):
            self._tell_stored(frame, False)

    async def flush(self) -> None:
        """Wait until every frame handed over so far is acknowledged by the broker (or given up on)."""
        await self._queue.join()

    async def close(self, timeout: float) -> None:
        """Publish what is queued (for at most ``timeout`` seconds), then disconnect."""
        with contextlib.suppress(TimeoutError):  # what is left is given up on below, and logged
            async with asyncio.timeout(timeout):
                await self.flush()
        self._closing = True  # the disconnection below is no outage
        if self.failed:
            log.error("the NATS publisher had failed: %d Chat frames in all were not published", self.dropped)
        tasks = [task for task in (*self._tasks, self._making_stream) if task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)  # a task that failed was logged then
        if self._nc is not None:
            # With the broker down, nats-py's close raises on flushing the lost connection.
            with contextlib.suppress(OSError, nats.errors.Error):
                await self._nc.close()
        await self._give_up_the_rest()

    async def _give_up_the_rest(self) -> None:
        """Once closed, give up on the frames taken but not acknowledged, those still queued and those
        of callers waiting for room in the full queue (the last frames of calls that outlived the
        shutdown's wait), so that neither they nor ``flush`` wait for ever; they count in ``dropped``."""
        self.closed = True
        given_up = len(self._batch) + len(self._unacked)
        self._batch.clear()
        self._unacked.clear()
        while not self._queue.empty():
            while not self._queue.empty():
                self._queue.get_nowait()
                given_up += 1
            await asyncio.sleep(0)  # each caller woken by the room made hands its frame over
        self._give_up(given_up)
        self._tell_all_given_up()
        if given_up:
            log.warning("%d Chat frames were not published to NATS before shutdown: given up on", given_up)

    async def _run(self) -> None:
        batch = self._batch
        queue = self._queue
        while True:
            batch.append(await queue.get())
            if self._unacked and queue.qsize() < PUBLISH_BATCH:
                await self._linger_while_in_flight()
            while len(batch) < self._window and not queue.empty():
                batch.append(queue.get_nowait())
            if self.backlogged and queue.qsize() <= queue.maxsize // 2:
                self._set_backlogged(False)
            while batch:
                while len(self._unacked) >= self._window:
                    self._window_open.clear()
                    await self._window_open.wait()
                await self._publish_first()

    async def _linger_while_in_flight(self) -> None:
        """Let frames gather for the linger time, or until no frame is in flight any more."""
        self._all_acked.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._linger):
                await self._all_acked.wait()

    async def _publish_first(self) -> None:
        """Publish the batch's first frame. It leaves the batch only for ``_unacked`` or to be given
        up on, so that a failure of the task anywhere leaves no frame unaccounted for."""
        batch = self._batch
        frame = batch[0]
        try:
            # Built here, in the publisher's task, so Chat's own path never decodes its frames.
            publish = _Publish(frame, self._messages.message(frame))
        except Exception as exc:  # a frame the servicer wrote is valid: a bug, which must not stop the others
            log.exception("cannot build the CloudEvent of Chat frame %s", _frame_name(frame))
            stand_in = self._stand_in_message(frame, _bug_reason(exc))
            if stand_in is None:
                log.error("%s: %s", _NOT_PUBLISHED, _frame_name(frame))
                batch.popleft()
                self._give_up()
                self._tell_stored(frame, False)
                return
            publish = _Publish(frame, stand_in)
            publish.stand_in = True
        assert self._nc is not None
        max_payload = self._nc.max_payload
        if (size := len(publish.message.payload)) > max_payload:
            # No retry can publish it, and retrying would hold a window slot for ever.
            reason = f"{size} bytes, over the NATS server's max_payload of {max_payload}"
            if not self._stand_in_for(publish, reason) or len(publish.message.payload) > max_payload:
                log.error("Chat frame %s is %s; not published", publish.frame_id, reason)
                batch.popleft()
                self._give_up()
                self._tell_stored(frame, False)
                return
            log.error("Chat frame %s is %s; a stand-in is published in its place", publish.frame_id, reason)
        self._published_so_far += 1
        publish.reply = f"{self._inbox}.{self._published_so_far}"
        batch.popleft()
        self._unacked[publish.reply] = publish
        await self._send(publish)

    def _stand_in_for(self, publish: _Publish, reason: str) -> bool:
        """Have a stand-in (``stand_in_frame``) published in the place of a frame the broker cannot
        take, so that the broker's copy of its stream has no gap and ends; False when it is a stand-in
        already, or none can be written (a bug, logged)."""
        if publish.stand_in:
            return False
        message = self._stand_in_message(publish.frame, reason)
        if message is None:
            return False
        publish.message = message
        publish.stand_in = True
        return True

    def _stand_in_message(self, frame: bytes, reason: str) -> BrokerMessage | None:
        """The message of ``frame``'s stand-in (counted in ``stood_in``), or None when none can be
        written (a bug, logged)."""
        try:
            message = self._messages.message(stand_in_frame(frame, reason))
        except Exception:
            log.exception("cannot write a stand-in for Chat frame %s", _frame_name(frame))
            return None
        self.stood_in += 1
        return message

    def _send_stand_in_soon(self, publish: _Publish) -> None:
        """A frame sent and refused is sent again as its stand-in, under a reply subject of its own
        (an answer to the frame that comes late is not taken for the stand-in's)."""
        if self._unacked.pop(publish.reply, None) is None:
            return  # acknowledged meanwhile: an earlier copy was stored after all
        self._published_so_far += 1
        publish.reply = f"{self._inbox}.{self._published_so_far}"
        self._unacked[publish.reply] = publish
        publish.sent_at = -math.inf  # due at once

    async def _send(self, publish: _Publish) -> None:
        assert self._nc is not None
        message = publish.message
        try:
            await self._nc.publish(message.subject, message.payload, reply=publish.reply, headers=message.headers)
        except _UNSENDABLE as exc:  # the message itself: sending it again would meet the same refusal
            if self._stand_in_for(publish, f"the NATS client refused it: {exc!r}"):
                log.error(
                    "NATS cannot take Chat frame %s (%r); a stand-in is published in its place", publish.frame_id, exc
                )
                self._send_stand_in_soon(publish)
            else:
                log.error("NATS cannot take Chat frame %s (%r); not published", publish.frame_id, exc)
                self._drop(publish)
        except nats.errors.Error as exc:
            self._failing_now(f"the NATS client cannot send: {exc!r}")
            self._retry_soon(publish)  # disconnected and the client's buffer full, or closed: send it again later
        except Exception as exc:  # not the broker's doing: a bug, which sending it again would meet again
            log.exception("cannot publish Chat frame %s to NATS", publish.frame_id)
            self._stand_in_after_bug(publish, exc)
        else:
            publish.sent_at = asyncio.get_running_loop().time()

    def _retry_soon(self, publish: _Publish) -> None:
        """Have a frame sent again REFUSED_RETRY_SECONDS from now, not after a whole ack timeout."""
        publish.sent_at = asyncio.get_running_loop().time() - self._ack_timeout + REFUSED_RETRY_SECONDS

    async def _on_reply(self, reply: Msg) -> None:
        """The broker's answer to a publish: its ack, or why it did not store the frame."""
        publish = self._unacked.get(reply.subject)
        if publish is None:
            return  # the ack of a frame sent twice, acknowledged already
        try:
            self._answered(publish, reply)
        except Exception as exc:  # a bug: nats-py would pass it to the error callback, and the frame wait for ever
            log.exception("cannot read NATS's answer to Chat frame %s", publish.frame_id)
            self._stand_in_after_bug(publish, exc)

    def _stand_in_after_bug(self, publish: _Publish, exc: Exception) -> None:
        """A frame (sent, or about to be) whose handling hit a bug is published as its stand-in; a
        stand-in that hits one, or that cannot be written, is given up on."""
        if self._stand_in_for(publish, _bug_reason(exc)):
            log.error("a stand-in is published in the place of Chat frame %s", publish.frame_id)
            self._send_stand_in_soon(publish)
        else:
            log.error("%s: %s", _NOT_PUBLISHED, publish.frame_id)
            self._drop(publish)

    def _answered(self, publish: _Publish, reply: Msg) -> None:
        if reply.headers and reply.headers.get(Header.STATUS) == NO_RESPONDERS_STATUS:  # no stream takes its subject
            # No stream takes the subject any more (deleted by an operator): make it again.
            self._retry_soon(publish)
            if self._making_stream is None or self._making_stream.done():
                self._making_stream = asyncio.create_task(self._make_stream())
            return
        try:
            answer = orjson.loads(reply.data)
        except orjson.JSONDecodeError:
            answer = None
        if isinstance(answer, dict) and "seq" in answer and "error" not in answer:
            self.published += 1  # stored (or a duplicate of one stored): it counts
            self._settle(publish)
            self._tell_stored(publish.frame, True)
            if self.failing is not None:
                self._recovered()
        elif _is_permanent_refusal(answer):
            # Refused for what the frame is (its size over the stream's max_msg_size, ...): no retry
            # can store it, and retrying would hold a window slot for ever.
            description = answer["error"].get("description", answer["error"])
            if self._stand_in_for(publish, f"the stream refused it: {description}"):
                log.error(
                    "NATS refused Chat frame %s for good (%s); a stand-in is published", publish.frame_id, description
                )
                self._send_stand_in_soon(publish)
            else:
                log.error("NATS refused Chat frame %s for good (%s); not published", publish.frame_id, description)
                self._drop(publish)
        else:
            self._failing_now(f"JetStream refused a frame for now: {reply.data[:200]!r}")
            log.debug("NATS refused a Chat frame (%r); publishing it again", reply.data[:200])
            self._retry_soon(publish)

    def _settle(self, publish: _Publish) -> bool:
        """Done with a frame: stored, or given up on. False if it was done with already (its ack
        came while it was being sent again)."""
        if self._unacked.pop(publish.reply, None) is None:
            return False
        self._queue.task_done()
        self._window_open.set()
        if not self._unacked:
            self._all_acked.set()
        return True

    def _drop(self, publish: _Publish) -> None:
        """Give up on a frame sent (or about to be): it will not be sent again."""
        if self._settle(publish):
            self.dropped += 1
            self._tell_stored(publish.frame, False)

    def _give_up(self, frames: int = 1) -> None:
        """Done with frames taken from the queue and never sent."""
        for _ in range(frames):
            self._queue.task_done()
        self.dropped += frames

    async def _make_stream(self) -> None:
        assert self._js is not None
        with contextlib.suppress(nats.errors.Error):
            await ensure_stream(self._js, self._stream, self._subject_prefix, replicas=self._replicas)

    async def _send_unacked_again(self) -> None:
        """Send again, with the same message id, the frames refused or not acknowledged in time."""
        assert self._nc is not None
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(RETRY_PAUSE_SECONDS)
            if not self._nc.is_connected:
                continue  # what is sent now waits in the client's buffer for the reconnection
            late = loop.time() - self._ack_timeout
            again = [publish for publish in self._unacked.values() if publish.sent_at <= late]
            if unacknowledged := sum(publish.sent_at > -math.inf for publish in again):  # not new stand-ins
                self._failing_now(f"{unacknowledged} Chat frames not acknowledged within {self._ack_timeout:g} s")
                log.debug("NATS did not acknowledge %d Chat frames; publishing them again", unacknowledged)
            for publish in again:
                if publish.reply in self._unacked:  # not acknowledged while the others were sent
                    await self._send(publish)

    async def _disconnected(self) -> None:
        if not self._closing:
            self._failing_now("disconnected from the broker")

    async def _reconnected(self) -> None:
        log.debug("nats: reconnected to %s", self._url)
        if self.failing is not None and not self.queued:
            self._recovered()  # nothing waits for an ack that would say so

    def _failing_now(self, reason: str) -> None:
        """Publishing fails: one WARNING at the first sign of an outage, until it is over."""
        if self.failing is not None or self._closing:
            return
        self.failing = reason
        self._failing_since = asyncio.get_running_loop().time()
        log.warning(
            "NATS publishing is failing (%s): Chat frames are queued until the broker takes them again "
            "(%d queued now; at %d, --nats-publish-queue, Chat streams wait and health is NOT_SERVING)",
            reason,
            self.queued,
            self._queue.maxsize,
        )

    def _recovered(self) -> None:
        seconds = asyncio.get_running_loop().time() - self._failing_since
        self.failing = None
        log.info("NATS publishing recovered after %.1f s: %d Chat frames queued, being published", seconds, self.queued)

    def _set_backlogged(self, backlogged: bool) -> None:
        if backlogged == self.backlogged:
            return
        self.backlogged = backlogged
        if backlogged:
            log.warning("the NATS publish queue is full (%d frames): Chat streams wait for the broker", self.queued)
        else:
            log.info("the NATS publish queue has room again (%d frames queued)", self.queued)
        for listener in self.backlog_listeners:
            listener(backlogged)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        """A publisher task ended: by ``close``, or by a bug, after which nothing more is published
        and every frame is given up on at once (the module docstring says why)."""
        if task.cancelled() or self.failed:
            return
        self.failed = True
        log.error(
            "the NATS publisher failed (task %s): no more Chat frames are published (Chat goes on); "
            "restart the server to publish again",
            task.get_name(),
            exc_info=task.exception(),
        )
        for other in self._tasks:
            other.cancel()
        given_up = len(self._batch) + len(self._unacked)
        self._batch.clear()
        self._unacked.clear()
        self._give_up(given_up)
        self._tell_all_given_up()
        self._window_open.set()
        self._set_backlogged(False)  # every frame is given up on at once from now on: none waits
        self._tasks.append(asyncio.create_task(self._discard(), name="e2a-nats-publisher-discard"))

    async def _discard(self) -> None:
        """After a failure: take every frame handed over, and give up on it, so Chat never waits."""
        while True:
            self._tell_stored(await self._queue.get(), False)
            self._give_up()
