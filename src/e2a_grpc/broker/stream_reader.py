"""Chat streams read back from NATS JetStream, as ``frame_publisher`` put them there (nats-py, the
``nats`` extra).

``read_streams`` rebuilds streams from a consumer of its own (``StreamAssembler``), resuming after
the last message it saw when the broker or the connection went away, or when its consumer did: on a
cluster, the ephemeral consumer lives on one node, and when that node is lost, fetches to it just
time out (nats-py publishes pull requests, so no "no responders" comes back); a reader that has had
no message for a while asks for its consumer's info and makes a new consumer if that fails.

A message on the subjects that is not a frame of a Chat stream (another publisher's: not an E2A
response CloudEvent, or a frame without a request_id) is logged and skipped, so that one foreign
message does not stop the readers of a shared stream; frames that break a stream's invariants
(``StreamInvariantError``) still end the read: they come from a publisher of frames that is broken,
and skipping them would hand on a stream that is not what the agent sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from e2a_grpc.broker.assembly import StreamAssembler
from e2a_grpc.broker.connection import connect
from e2a_grpc.broker.frame_messages import read_frame, subject_token
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AResponse

log = logging.getLogger(__name__)

#: A reader's pause before it resumes after losing the broker.
RESUME_PAUSE_SECONDS = 0.2
#: Messages asked for per fetch by a reader.
FETCH_BATCH = 256
#: How long a reader goes without a message before it checks that its consumer still answers.
CONSUMER_CHECK_SECONDS = 5.0


def streams_filter(prefix: str, *, session_id: str | None = None, request_id: str | None = None) -> str:
    """The subjects of one request's stream, of a session's streams, or of every stream."""
    if session_id is None and request_id is None:
        return f"{prefix}.>"
    session = "*" if session_id is None else subject_token(session_id)
    request = "*" if request_id is None else subject_token(request_id)
    return f"{prefix}.{session}.{request}"


def _stream_frame(msg: Msg) -> E2AResponse | None:
    """The frame of a Chat stream a message carries, or None (logged) for a message that is none."""
    try:
        frame = read_frame(msg.headers or {}, msg.data)
    except E2AFieldError as exc:
        problem = str(exc)
    else:
        if frame.request_id:
            return frame
        problem = "the frame has no request_id"
    log.warning(
        "skipped message %d of stream %s on %s: not a frame of a Chat stream (%s)",
        msg.metadata.sequence.stream,
        msg.metadata.stream,
        msg.subject,
        problem,
    )
    return None


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


async def _answers(subscription: JetStreamContext.PullSubscription) -> bool:
    """Whether the consumer of ``subscription`` is still there to deliver (its node may be gone)."""
    try:
        await subscription.consumer_info()
    except (TimeoutError, nats.errors.Error):
        return False
    return True


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
    TimeoutError after that long without a message. Messages are acknowledged once yielded; one
    that is not a frame of a Chat stream is logged and skipped (acknowledged too)."""
    assembler = assembler or StreamAssembler()
    subject_filter = streams_filter(subject_prefix, session_id=session_id, request_id=request_id)
    nc = await connect(url)
    js = nc.jetstream()
    next_sequence = 1
    subscription: JetStreamContext.PullSubscription | None = None
    loop = asyncio.get_running_loop()
    last_message = last_checked = loop.time()
    try:
        while True:
            if idle_timeout is not None and loop.time() - last_message > idle_timeout:
                raise TimeoutError(f"no frame for {idle_timeout:g} s on {subject_filter}")
            try:
                if subscription is None:
                    subscription = await _consumer(js, stream, subject_filter, next_sequence)
                messages = await subscription.fetch(FETCH_BATCH, timeout=1.0)
            except (TimeoutError, nats.errors.TimeoutError):
                if subscription is not None and loop.time() - max(last_message, last_checked) >= CONSUMER_CHECK_SECONDS:
                    last_checked = loop.time()
                    if not await _answers(subscription):
                        log.debug(
                            "reading %s: the consumer does not answer; resuming from stream sequence %d",
                            subject_filter,
                            next_sequence,
                        )
                        with contextlib.suppress(nats.errors.Error):
                            await subscription.unsubscribe()
                        subscription = None
                continue
            except nats.errors.Error as exc:
                # The broker restarted (the consumer may be gone) or the connection is down: resume
                # after the last message seen once it is back.
                log.debug("reading %s: %r; resuming from stream sequence %d", subject_filter, exc, next_sequence)
                if subscription is not None:
                    with contextlib.suppress(nats.errors.Error):
                        await subscription.unsubscribe()
                subscription = None
                await asyncio.sleep(RESUME_PAUSE_SECONDS)
                continue
            last_message = loop.time()
            for message in messages:
                next_sequence = max(next_sequence, message.metadata.sequence.stream + 1)
                frame = _stream_frame(message)
                for ready in assembler.add(frame) if frame is not None else ():
                    yield ready
                with contextlib.suppress(nats.errors.Error):
                    await message.ack()  # an ack lost to a disconnect means a redelivery, which is dropped
                if streams is not None and len(assembler.finished) >= streams:
                    return
    finally:
        await nc.close()
