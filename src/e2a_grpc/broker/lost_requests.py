"""Ending the broker's copy of a request whose worker was lost (nats-py, the ``nats`` extra).

At most once (docs/agent-bus.md): a request whose worker died is never run again; whoever notices
(the gateway, when the worker's notices stop; a worker that is delivered the request again) writes its
final ``e2a.error`` ``agent_unavailable`` frame, one after the last frame stored on the request's
frame subject. The frame's ``Nats-Msg-Id`` is ``<request_id>:lost`` whoever writes it, so the broker
stores it once when both notice.

The lost frame is stored only if the frame it follows is still the subject's last
(``Nats-Expected-Last-Subject-Sequence``): a worker that was only silent (stopped, partitioned away)
and stored a frame meanwhile is not lost, and the two frames would share a sequence number. A worker
that resumes after such a silence looks at the subject's last frame (``last_stored``) before its next.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import nats.js.errors
from nats.js import JetStreamContext
from nats.js.api import Header

from e2a_grpc.broker.agent_requests import lost_final_frame, lost_message_id
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, frame_message, frame_subject, read_frame
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.model.records import utc_now_iso
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)

#: JetStream's error codes for a publish whose ``Nats-Expected-Last-Subject-Sequence`` is not the
#: subject's last message any more ("wrong last sequence"): 10071, or 10164 from a replicated stream
#: of a newer server (the two mean the same, as nats.go's ``JSErrCodeStreamWrongLastSequence*`` say).
WRONG_LAST_SEQUENCE = frozenset({10071, 10164})


@dataclass(frozen=True, slots=True)
class LastStored:
    """The last message stored on a frame subject: its stream sequence, and its frame (None: a message
    that is no frame, logged)."""

    sequence: int
    frame: E2AResponse | None

    @property
    def is_final(self) -> bool:
        """Whether it is a final frame: the request's stream has ended."""
        return self.frame is not None and self.frame.is_final


async def last_stored(js: JetStreamContext, stream: str, subject: str) -> LastStored | None:
    """The last message stored on ``subject`` (None: none)."""
    try:
        message = await js.get_last_msg(stream, subject)
    except nats.js.errors.NotFoundError:
        return None
    try:
        frame = read_frame(message.headers or {}, message.data or b"")
    except E2AFieldError as exc:
        log.warning("the last message on %s is no E2A frame (%s)", subject, exc)
        frame = None
    return LastStored(message.seq or 0, frame)


async def end_lost_request(
    js: JetStreamContext,
    envelope: E2AEnvelope,
    config: ServerSettings,
    *,
    noticed_by: str,
) -> E2AResponse | None:
    """Store the lost request's final frame (on ``config``'s frame stream, in its CloudEvents
    attributes) unless its frame subject has a final frame already, or gets another frame before it;
    return the frame written (None: the request's stream ended, or moved on: its worker writes)."""
    assert envelope.request_id is not None
    subject = frame_subject(config.nats_subject_prefix, envelope.session_id, envelope.request_id)
    last = await last_stored(js, config.nats_stream, subject)
    if last is not None and last.is_final:
        return None
    frame = lost_final_frame(
        envelope, None if last is None else last.frame, noticed_by=noticed_by, timestamp=utc_now_iso()
    )
    message = frame_message(
        frame,
        subject_prefix=config.nats_subject_prefix,
        type_prefix=config.cloudevents_type_prefix,
        source=config.cloudevents_source,
    )
    headers = {
        **message.headers,
        MSG_ID_HEADER: lost_message_id(envelope.request_id),
        Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(0 if last is None else last.sequence),
    }
    try:
        await js.publish(message.subject, message.payload, stream=config.nats_stream, headers=headers)
    except nats.js.errors.APIError as exc:
        if exc.err_code not in WRONG_LAST_SEQUENCE:
            raise
        # Stored since the look above: a frame of a worker that was only silent, or this frame, written
        # by the other side that noticed. Either is on its way to the request's readers.
        log.info(
            "request %s: a frame was stored on it meanwhile; %s writes no lost-request frame",
            envelope.request_id,
            noticed_by,
        )
        return None
    log.warning(
        "request %s: its worker was lost before the final frame; %s wrote its agent_unavailable final frame",
        envelope.request_id,
        noticed_by,
    )
    return frame
