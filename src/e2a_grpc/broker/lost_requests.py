"""Ending the broker's copy of a request whose worker was lost (nats-py, the ``nats`` extra).

At most once (docs/agent-bus.md): a request whose worker died is never run again; whoever notices
(the gateway, when the worker's notices stop; a worker that is delivered the request again) writes its
final ``e2a.error`` ``agent_unavailable`` frame, one after the last frame stored on the request's
frame subject. The frame's ``Nats-Msg-Id`` is ``<request_id>:lost`` whoever writes it, so the broker
stores it once when both notice.
"""

from __future__ import annotations

import logging

import nats.js.errors
from nats.js import JetStreamContext

from e2a_grpc.broker.agent_requests import lost_final_frame, lost_message_id
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, frame_message, frame_subject, read_frame
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.model.records import utc_now_iso
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)


async def last_stored_frame(js: JetStreamContext, stream: str, subject: str) -> E2AResponse | None:
    """The last frame stored on ``subject`` (None: none; a message that is no frame is logged and
    counts as none)."""
    try:
        message = await js.get_last_msg(stream, subject)
    except nats.js.errors.NotFoundError:
        return None
    try:
        return read_frame(message.headers or {}, message.data or b"")
    except E2AFieldError as exc:
        log.warning("the last message on %s is no E2A frame (%s)", subject, exc)
        return None


async def end_lost_request(
    js: JetStreamContext,
    envelope: E2AEnvelope,
    config: ServerSettings,
    *,
    noticed_by: str,
) -> E2AResponse | None:
    """Store the lost request's final frame (on ``config``'s frame stream, in its CloudEvents
    attributes) unless its frame subject has a final frame already; return the frame written (None:
    the stream had ended)."""
    assert envelope.request_id is not None
    subject = frame_subject(config.nats_subject_prefix, envelope.session_id, envelope.request_id)
    last = await last_stored_frame(js, config.nats_stream, subject)
    if last is not None and last.is_final:
        return None
    frame = lost_final_frame(envelope, last, noticed_by=noticed_by, timestamp=utc_now_iso())
    message = frame_message(
        frame,
        subject_prefix=config.nats_subject_prefix,
        type_prefix=config.cloudevents_type_prefix,
        source=config.cloudevents_source,
    )
    headers = {**message.headers, MSG_ID_HEADER: lost_message_id(envelope.request_id)}
    await js.publish(message.subject, message.payload, stream=config.nats_stream, headers=headers)
    log.warning(
        "request %s: its worker was lost before the final frame; %s wrote its agent_unavailable final frame",
        envelope.request_id,
        noticed_by,
    )
    return frame
