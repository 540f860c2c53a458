"""The agent bus's wire as a gateway speaks it (the bus contract, docs/agent-bus.md), for tests of
workers the project does not run itself (the Go worker): a request published on JetStream, the
notices that come back to its inbox, and its frames read from the frame stream and checked with the
section 12 invariants.

A request is its envelope's CloudEvent in binary mode (``record_to_event``, ``to_http_binary``)
on ``<prefix>.<agent token>.any``, with ``Nats-Msg-Id`` (the request id), ``E2A-Reply-To``,
``E2A-Start-By`` and, when given, ``E2A-Deadline`` (RFC 3339, UTC).
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass, field

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy

from e2a_grpc.broker.agent_records import agent_token
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, subject_token
from e2a_grpc.broker.stream_reader import frame_of, streams_filter
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.protocols.cloudevent_formats import to_http_binary
from e2a_grpc.protocols.cloudevents import record_to_event
from tests.support.waiting import within

#: The contract's default names (the gateway's and workers' settings default to them).
REQUEST_PREFIX = "e2a.requests"
FRAME_STREAM = "E2A_FRAMES"
FRAME_PREFIX = "e2a.frames"
CANCEL_PREFIX = "e2a.cancel"
TYPE_PREFIX = "io.e2a"
REPLY_TO_HEADER = "E2A-Reply-To"
START_BY_HEADER = "E2A-Start-By"
DEADLINE_HEADER = "E2A-Deadline"
NOTICE_HEADER = "E2A-Notice"
WORKER_HEADER = "E2A-Worker"
#: How long after its publication a request may be taken when the test sets no Start-By (the gateway's default).
START_BY_SECONDS = 5.0


def rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def request_subject(agent_id: str) -> str:
    return f"{REQUEST_PREFIX}.{agent_token(agent_id)}.any"


def cancel_subject(request_id: str) -> str:
    return f"{CANCEL_PREFIX}.{subject_token(request_id)}"


@dataclass
class Exchange:
    """One request's traffic: its notices (in arrival order) and its frames with their messages."""

    envelope: E2AEnvelope
    notices: asyncio.Queue[Msg] = field(default_factory=asyncio.Queue)
    frames: list[tuple[E2AResponse, Msg]] = field(default_factory=list)
    _frames_sub: Subscription | None = None
    _notices_sub: Subscription | None = None

    @property
    def request_id(self) -> str:
        assert self.envelope.request_id is not None
        return self.envelope.request_id

    async def next_frame(self) -> tuple[E2AResponse, Msg]:
        """The next frame stored for the request, checked against its envelope as it comes."""
        assert self._frames_sub is not None
        msg = await self._frames_sub.next_msg(timeout=10)
        frame = frame_of(msg)
        self.frames.append((frame, msg))
        return frame, msg

    async def final_frames(self) -> list[E2AResponse]:
        """Every frame up to the final one, the stream checked with the section 12 invariants."""
        while not self.frames or not self.frames[-1][0].is_final:
            await self.next_frame()
        checker = StreamChecker(self.envelope)
        for frame, _ in self.frames:
            checker.check(frame)
        checker.finish()
        return [frame for frame, _ in self.frames]

    async def notice(self) -> tuple[str, str]:
        """The next notice: its kind (taken, working) and the worker instance that sent it."""
        msg = await within(self.notices.get())
        headers = msg.headers or {}
        return headers[NOTICE_HEADER], headers[WORKER_HEADER]

    async def close(self) -> None:
        for subscription in (self._frames_sub, self._notices_sub):
            if subscription is not None:
                await subscription.unsubscribe()


async def open_exchange(nc: NatsClient, js: JetStreamContext, envelope: E2AEnvelope) -> Exchange:
    """Subscribe to the request's notices and frames (an ordered consumer from the stream's first
    message, so that no frame is missed) before the request is published."""
    assert envelope.request_id, "the bus needs the request id (the gateway assigns one)"
    exchange = Exchange(envelope)
    exchange._notices_sub = await nc.subscribe(nc.new_inbox(), cb=exchange.notices.put)
    exchange._frames_sub = await js.subscribe(
        streams_filter(FRAME_PREFIX, session_id=envelope.session_id, request_id=envelope.request_id),
        stream=FRAME_STREAM,
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
    )
    return exchange


async def publish_request(
    js: JetStreamContext,
    exchange: Exchange,
    agent_id: str,
    *,
    start_by: datetime.datetime | None = None,
    deadline: datetime.datetime | None = None,
) -> None:
    """Publish the exchange's request for the workers of ``agent_id``, as the gateway does (Start-By
    ``START_BY_SECONDS`` from now unless given)."""
    binary = to_http_binary(record_to_event(exchange.envelope, type_prefix=TYPE_PREFIX))
    assert exchange._notices_sub is not None
    if start_by is None:
        start_by = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=START_BY_SECONDS)
    headers = {
        **binary.headers,
        MSG_ID_HEADER: exchange.request_id,
        REPLY_TO_HEADER: exchange._notices_sub.subject,
        START_BY_HEADER: rfc3339(start_by),
    }
    if deadline is not None:
        headers[DEADLINE_HEADER] = rfc3339(deadline)
    await js.publish(request_subject(agent_id), binary.body, headers=headers)
