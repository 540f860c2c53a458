"""The agent bus as a gateway speaks it (docs/agent-bus.md), for tests of workers the project does not
run itself (the Go worker): a request published on JetStream (``agent_requests.request_message``),
the notices that come back to its inbox, and its frames read from the frame stream and checked with
the section 12 invariants. The names are the settings' defaults, as gateways and workers have them.
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy

from e2a_grpc.broker.agent_requests import (
    BusRequest,
    Notice,
    any_worker_subject,
    cancel_subject,
    read_notice,
    request_message,
)
from e2a_grpc.broker.frame_messages import read_frame
from e2a_grpc.broker.stream_reader import streams_filter
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.settings import ServerSettings
from tests.support.waiting import within


def _default(name: str) -> Any:
    return ServerSettings.model_fields[name].default


REQUESTS_STREAM: str = _default("bus_requests_stream")
REQUESTS_PREFIX: str = _default("bus_requests_subject_prefix")
CANCEL_PREFIX: str = _default("bus_cancel_subject_prefix")
FRAME_STREAM: str = _default("nats_stream")
FRAME_PREFIX: str = _default("nats_subject_prefix")
TYPE_PREFIX: str = _default("cloudevents_type_prefix")
#: How long after its publication a request may be taken when the test sets no Start-By.
START_BY_SECONDS = 5.0


def request_subject(agent_id: str) -> str:
    return any_worker_subject(REQUESTS_PREFIX, agent_id)


def request_cancel_subject(request_id: str) -> str:
    return cancel_subject(CANCEL_PREFIX, request_id)


def frames_filter(envelope: E2AEnvelope) -> str:
    return streams_filter(FRAME_PREFIX, session_id=envelope.session_id, request_id=envelope.request_id)


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

    @property
    def reply_to(self) -> str:
        assert self._notices_sub is not None
        return self._notices_sub.subject

    async def next_frame(self) -> tuple[E2AResponse, Msg]:
        """The next frame stored for the request."""
        assert self._frames_sub is not None
        msg = await self._frames_sub.next_msg(timeout=10)
        frame = read_frame(msg.headers or {}, msg.data)
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

    async def notice(self) -> tuple[Notice, str]:
        """The next notice: its kind and the worker instance that sent it."""
        msg = await within(self.notices.get())
        notice = read_notice(msg.headers)
        assert notice is not None, f"not a notice: {msg.headers}"
        return notice

    async def close(self) -> None:
        for subscription in (self._frames_sub, self._notices_sub):
            if subscription is not None:
                await subscription.unsubscribe()


async def open_exchange(nc: NatsClient, js: JetStreamContext, envelope: E2AEnvelope) -> Exchange:
    """Subscribe to the request's notices and frames (an ordered consumer from the stream's first
    message, so that no frame is missed) before the request is published, as the gateway does."""
    assert envelope.request_id, "the bus names a request by its request id (the gateway assigns one)"
    exchange = Exchange(envelope)
    exchange._notices_sub = await nc.subscribe(nc.new_inbox(), cb=exchange.notices.put)
    exchange._frames_sub = await js.subscribe(
        frames_filter(envelope), stream=FRAME_STREAM, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
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
    """Publish the exchange's request to any worker of ``agent_id``, as the gateway does (Start-By
    ``START_BY_SECONDS`` from now unless given)."""
    if start_by is None:
        start_by = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=START_BY_SECONDS)
    request = BusRequest(exchange.envelope, reply_to=exchange.reply_to, start_by=start_by, deadline=deadline)
    message = request_message(request, request_subject(agent_id), type_prefix=TYPE_PREFIX, source=None)
    await js.publish(message.subject, message.payload, headers=message.headers)
