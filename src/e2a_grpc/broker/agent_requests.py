"""The agent bus's wire contract as pure functions (docs/agent-bus.md): no NATS here.

A gateway publishes a request envelope to the agent's workers on JetStream; a worker runs it as a
Chat turn and publishes its frames on the broker path's frame subjects (``frame_messages``). This
module is the one home of everything both sides must agree on: the request subjects and consumer
names, the request message (the envelope's CloudEvent in binary mode plus the bus headers) read and
written, the notices a worker sends the gateway, the cancel subjects (of a running request, of a
task waiting for its client) and the task cancel's replies, and the final frame written for a
request whose worker was lost. The gateway (``backends.bus``), the worker (``agent_worker``) and
the Go example worker follow it.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from e2a_grpc.broker.agent_records import key_token
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, BrokerMessage, subject_token
from e2a_grpc.chat.invariants import ECHOED_FIELDS
from e2a_grpc.errors import E2AValueError
from e2a_grpc.model import E2AEnvelope, E2AResponse, ErrorCode, ResponseKind, ResponseStatus
from e2a_grpc.protocols import cloudevents
from e2a_grpc.protocols.cloudevent_formats import from_http_binary, to_http_binary

#: The gateway's core-NATS inbox for the request's notices.
REPLY_TO_HEADER: Final = "E2A-Reply-To"
#: RFC 3339 UTC: a worker that takes the request later drops it unrun.
START_BY_HEADER: Final = "E2A-Start-By"
#: RFC 3339 UTC: the Chat call's deadline; the worker stops the turn then.
DEADLINE_HEADER: Final = "E2A-Deadline"
#: W3C trace context of the gateway's call, when it traces.
TRACEPARENT_HEADER: Final = "traceparent"
#: A notice's kind (``Notice``) and the worker instance that sends it.
NOTICE_HEADER: Final = "E2A-Notice"
WORKER_HEADER: Final = "E2A-Worker"
#: The subject token after the agent's for the subject every worker of the agent shares.
ANY_WORKER: Final = "any"
#: The subject token before a worker's instance id on its own subject.
ONE_WORKER: Final = "worker"
#: The prefix of the shared durable consumer of an agent (``<prefix><agent token>``).
CONSUMER_PREFIX: Final = "e2a-agent-"
#: The suffix of the message id of a lost request's final frame (``<request_id>:lost``).
LOST_SUFFIX: Final = ":lost"
#: The suffix of the message id of a request sent again to any worker (``<request_id>:again``): the
#: worker that holds its session took it by Start-By (the JetStream de-duplication of the first
#: publish's id would drop it otherwise).
AGAIN_SUFFIX: Final = ":again"
#: How often a gateway may miss a worker's progress notice before it takes the worker for lost.
MISSED_NOTICES: Final = 3
#: The subject token after the cancel prefix of a waiting task's cancel: ``<prefix>.task.<agent>.<task>``
#: has two tokens more than a request's ``<prefix>.<request token>``, so no request token can clash.
TASK_CANCEL: Final = "task"
#: The task id a task cancel names (its subject has the id's token, which is not always the id).
TASK_ID_HEADER: Final = "E2A-Task-Id"
#: A worker's reply to a task cancel (``TaskCancelOutcome``), and for a failure its ``ErrorCode`` (the
#: payload is the error's message, UTF-8).
TASK_CANCEL_HEADER: Final = "E2A-Task-Cancel"
ERROR_CODE_HEADER: Final = "E2A-Error-Code"


class TaskCancelOutcome(StrEnum):
    """What the worker whose backend holds a waiting task replies to its cancel (a worker that holds
    no such task does not reply)."""

    #: The task waited there and is cancelled (its agent was told, e.g. ACP ``session/cancel``).
    CANCELLED = "cancelled"
    #: The backend could not cancel it (``E2A-Error-Code`` and the payload say why).
    FAILED = "failed"


@dataclass(frozen=True)
class TaskCancelReply:
    """A worker's reply to a task cancel, read back."""

    outcome: TaskCancelOutcome
    worker: str
    #: A failure's ``ErrorCode`` (or the backend's own code) and message; empty when cancelled.
    code: str = ""
    message: str = ""


class Notice(StrEnum):
    """What a worker tells the gateway of a request (core NATS, no payload)."""

    #: The worker started the request (sent before its first frame).
    TAKEN = "taken"
    #: The turn still runs (every ``bus_progress_seconds``).
    WORKING = "working"


def any_worker_subject(prefix: str, agent_id: str) -> str:
    """Where a request to any worker of ``agent_id`` goes."""
    return f"{prefix}.{key_token(agent_id)}.{ANY_WORKER}"


def worker_subject(prefix: str, agent_id: str, instance_id: str) -> str:
    """Where a request to one worker instance goes (a session it holds)."""
    return f"{prefix}.{key_token(agent_id)}.{ONE_WORKER}.{instance_id}"


def shared_consumer(agent_id: str) -> str:
    """The durable pull consumer every worker of ``agent_id`` shares (on ``any_worker_subject``)."""
    return CONSUMER_PREFIX + key_token(agent_id)


def worker_consumer(agent_id: str, instance_id: str) -> str:
    """One worker instance's own pull consumer (on its ``worker_subject``)."""
    return f"{CONSUMER_PREFIX}{key_token(agent_id)}-{instance_id}"


def cancel_subject(prefix: str, request_id: str) -> str:
    """Where a gateway cancels a running request (core NATS)."""
    return f"{prefix}.{subject_token(request_id)}"


def task_cancel_subject(prefix: str, agent_id: str, task_id: str) -> str:
    """Where a gateway cancels a task of ``agent_id`` that waits for its client (core NATS request;
    every worker of the agent listens)."""
    return f"{prefix}.{TASK_CANCEL}.{key_token(agent_id)}.{subject_token(task_id)}"


def task_cancel_filter(prefix: str, agent_id: str) -> str:
    """The subscription of a worker of ``agent_id`` to its agent's task cancels."""
    return f"{prefix}.{TASK_CANCEL}.{key_token(agent_id)}.*"


def task_cancel_headers(task_id: str) -> dict[str, str]:
    return {TASK_ID_HEADER: task_id}


def read_task_cancel(subject: str, headers: Mapping[str, str] | None) -> str:
    """The task id a task cancel names; an ``E2AFieldError`` when its header is missing or does not
    match the subject's task token (a message no gateway of this contract sends)."""
    task_id = (headers or {}).get(TASK_ID_HEADER, "")
    if not task_id:
        raise E2AValueError(TASK_ID_HEADER, "a task cancel names its task id")
    if subject_token(task_id) != subject.rsplit(".", 1)[-1]:
        raise E2AValueError(TASK_ID_HEADER, f"task id {task_id!r} is not the one subject {subject!r} names")
    return task_id


def task_cancel_reply_headers(reply: TaskCancelReply) -> dict[str, str]:
    headers = {TASK_CANCEL_HEADER: reply.outcome.value, WORKER_HEADER: reply.worker}
    if reply.outcome is TaskCancelOutcome.FAILED:
        headers[ERROR_CODE_HEADER] = reply.code
    return headers


def read_task_cancel_reply(headers: Mapping[str, str] | None, payload: bytes) -> TaskCancelReply | None:
    """A worker's reply to a task cancel, or None when the message is no reply this version knows."""
    if not headers:
        return None
    try:
        outcome = TaskCancelOutcome(headers.get(TASK_CANCEL_HEADER, ""))
    except ValueError:
        return None
    if outcome is TaskCancelOutcome.CANCELLED:
        return TaskCancelReply(outcome, headers.get(WORKER_HEADER, ""))
    return TaskCancelReply(
        outcome,
        headers.get(WORKER_HEADER, ""),
        headers.get(ERROR_CODE_HEADER, ""),
        payload.decode("utf-8", errors="replace"),
    )


def lost_message_id(request_id: str) -> str:
    """The ``Nats-Msg-Id`` of a lost request's final frame: whoever writes it, the broker keeps one."""
    return request_id + LOST_SUFFIX


def rfc3339(moment: datetime.datetime) -> str:
    """A header's time: UTC, to the millisecond, with ``Z``."""
    return moment.astimezone(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _time(name: str, text: str) -> datetime.datetime:
    if not cloudevents.is_time(text):
        raise E2AValueError(name, f"expected an RFC 3339 timestamp, got {text!r}")
    moment = cloudevents.parse_time(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


@dataclass(frozen=True)
class BusRequest:
    """A request on the bus: the envelope (with its request id) and what the bus headers say."""

    envelope: E2AEnvelope
    #: The gateway's inbox for notices.
    reply_to: str
    start_by: datetime.datetime
    deadline: datetime.datetime | None = None
    traceparent: str | None = None

    @property
    def request_id(self) -> str:
        assert self.envelope.request_id is not None  # request_message and read_request see to it
        return self.envelope.request_id


def with_request_id(envelope: E2AEnvelope, assigned: str | None = None) -> E2AEnvelope:
    """The envelope with a request id (the bus names a request by it): its own, else ``assigned`` (the
    one the gateway's frames carry), else a new UUID."""
    if envelope.request_id and not envelope.request_id.isspace():
        return envelope
    return dataclasses.replace(envelope, request_id=assigned or str(uuid.uuid4()))


def request_message(
    request: BusRequest, subject: str, *, type_prefix: str, source: str | None, sent_again: bool = False
) -> BrokerMessage:
    """The NATS message of a request: the envelope's CloudEvent in binary mode (``ce-*`` headers,
    ``ce-targetagent``, ``ce-mcptype: request``, the envelope's wire JSON as payload), de-duplicated by
    the request id (``sent_again``: by ``<request_id>:again``), with the bus headers."""
    event = cloudevents.record_to_event(request.envelope, type_prefix=type_prefix, source=source)
    binary = to_http_binary(event)
    headers = {
        **binary.headers,
        MSG_ID_HEADER: request.request_id + AGAIN_SUFFIX if sent_again else request.request_id,
        REPLY_TO_HEADER: request.reply_to,
        START_BY_HEADER: rfc3339(request.start_by),
    }
    if request.deadline is not None:
        headers[DEADLINE_HEADER] = rfc3339(request.deadline)
    if request.traceparent is not None:
        headers[TRACEPARENT_HEADER] = request.traceparent
    return BrokerMessage(subject, headers, binary.body)


def read_request(headers: Mapping[str, str], payload: bytes) -> BusRequest:
    """A request message read back; an ``E2AFieldError`` names what makes it no request of the bus
    (a header missing or malformed, an event that carries no envelope, an envelope without request id)."""
    record = cloudevents.event_to_record(from_http_binary(headers, payload))
    if not isinstance(record, E2AEnvelope):
        raise E2AValueError("ce-mcptype", "the bus carries requests; this event carries a response")
    if not record.request_id:
        raise E2AValueError("data.request_id", "a request on the bus needs a request_id")
    reply_to = headers.get(REPLY_TO_HEADER)
    if not reply_to:
        raise E2AValueError(REPLY_TO_HEADER, "a request on the bus needs the gateway's inbox")
    start_by = headers.get(START_BY_HEADER)
    if start_by is None:
        raise E2AValueError(START_BY_HEADER, "a request on the bus needs the time it must start by")
    deadline = headers.get(DEADLINE_HEADER)
    return BusRequest(
        envelope=record,
        reply_to=reply_to,
        start_by=_time(START_BY_HEADER, start_by),
        deadline=None if deadline is None else _time(DEADLINE_HEADER, deadline),
        traceparent=headers.get(TRACEPARENT_HEADER),
    )


def notice_headers(notice: Notice, instance_id: str) -> dict[str, str]:
    return {NOTICE_HEADER: notice.value, WORKER_HEADER: instance_id}


def read_notice(headers: Mapping[str, str] | None) -> tuple[Notice, str] | None:
    """A notice's kind and worker, or None when the message is no notice this version knows."""
    if not headers:
        return None
    try:
        notice = Notice(headers.get(NOTICE_HEADER, ""))
    except ValueError:
        return None
    return notice, headers.get(WORKER_HEADER, "")


def lost_final_frame(
    envelope: E2AEnvelope, last: E2AResponse | None, *, noticed_by: str, timestamp: str
) -> E2AResponse:
    """The final ``e2a.error`` ``agent_unavailable`` frame of a request whose worker was lost: one
    after ``last`` (the last frame stored on the request's frame subject, whose correlation fields it
    keeps: an agent's task id adopted on the way), or the request's first frame when none is stored.
    ``noticed_by``: who wrote it ("gateway", "worker"), in its details."""
    request_id = envelope.request_id
    assert request_id is not None
    body = {
        "code": ErrorCode.AGENT_UNAVAILABLE.value,
        "message": "the agent worker running this request was lost before it ended; it was not run again",
        "details": {"noticed_by": noticed_by},
    }
    if last is not None:
        return dataclasses.replace(
            last,
            response_id=lost_message_id(request_id),
            sequence=last.sequence + 1,
            is_final=True,
            status=ResponseStatus.FAILED.value,
            response_kind=ResponseKind.E2A_ERROR.value,
            timestamp=timestamp,
            body=body,
        )
    return E2AResponse(
        protocol_version=envelope.protocol_version,
        request_id=request_id,
        response_id=lost_message_id(request_id),
        sequence=0,
        is_final=True,
        status=ResponseStatus.FAILED.value,
        response_kind=ResponseKind.E2A_ERROR.value,
        timestamp=timestamp,
        body=body,
        **{name: getattr(envelope, name) for name in ECHOED_FIELDS},
    )
