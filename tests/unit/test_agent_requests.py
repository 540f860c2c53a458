"""The agent bus's wire contract (broker/agent_requests.py): request messages read back as written,
subjects that one token per id keeps apart, notices, task cancels and their replies, and the final
frame of a lost request, which keeps the stream's invariants after any stored frame."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.broker.agent_requests import (
    AGAIN_SUFFIX,
    DEADLINE_HEADER,
    REPLY_TO_HEADER,
    START_BY_HEADER,
    TASK_CANCEL,
    TASK_ID_HEADER,
    BusRequest,
    Notice,
    TaskCancelOutcome,
    TaskCancelReply,
    any_worker_subject,
    cancel_subject,
    lost_final_frame,
    lost_message_id,
    notice_headers,
    read_notice,
    read_request,
    read_task_cancel,
    read_task_cancel_reply,
    request_message,
    shared_consumer,
    task_cancel_filter,
    task_cancel_headers,
    task_cancel_reply_headers,
    task_cancel_subject,
    with_request_id,
    worker_consumer,
    worker_subject,
)
from e2a_grpc.broker.frame_messages import MSG_ID_HEADER
from e2a_grpc.chat.events import BackendInfo, Delta
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import DeltaKind, E2AEnvelope, ErrorCode, SourceProtocol
from e2a_grpc.model.records import utc_now_iso
from tests.support.strategies import canonical_envelopes

PREFIX = "e2a.requests"
_MOMENTS = st.datetimes(
    min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2100, 1, 1), timezones=st.just(datetime.UTC)
).map(lambda moment: moment.replace(microsecond=moment.microsecond // 1000 * 1000))
_IDS = st.text(min_size=1, max_size=40)
_INSTANCE = "0123456789abcdef0123456789abcdef"


def _envelope(document: dict[str, Any]) -> E2AEnvelope:
    return with_request_id(E2AEnvelope.from_dict(document))


@given(
    canonical_envelopes,
    _MOMENTS,
    st.none() | _MOMENTS,
    st.none() | st.just("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    st.booleans(),
)
def test_a_request_message_reads_back_as_written(
    document: dict[str, Any],
    start_by: datetime.datetime,
    deadline: datetime.datetime | None,
    traceparent: str | None,
    sent_again: bool,
) -> None:
    request = BusRequest(_envelope(document), "_INBOX.abc", start_by, deadline, traceparent)
    message = request_message(
        request, any_worker_subject(PREFIX, "agent"), type_prefix="io.e2a", source=None, sent_again=sent_again
    )
    # Sent again, it has a message id of its own: JetStream would drop it as the first one's duplicate.
    assert message.headers[MSG_ID_HEADER] == request.request_id + (AGAIN_SUFFIX if sent_again else "")
    assert message.headers["ce-mcptype"] == "request"
    read = read_request(message.headers, message.payload)
    assert read.envelope.to_dict() == request.envelope.to_dict()
    assert (read.reply_to, read.start_by, read.deadline, read.traceparent) == (
        "_INBOX.abc",
        start_by,
        deadline,
        traceparent,
    )


def _message(**changes: str | None) -> tuple[dict[str, str], bytes]:
    envelope = E2AEnvelope(method="chat.send", request_id="r-1", params={"text": "hi"})
    request = BusRequest(envelope, "_INBOX.x", datetime.datetime.now(datetime.UTC))
    message = request_message(request, "e2a.requests.a.any", type_prefix="io.e2a", source=None)
    headers = dict(message.headers)
    for name, value in changes.items():
        header = {"reply_to": REPLY_TO_HEADER, "start_by": START_BY_HEADER, "deadline": DEADLINE_HEADER}[name]
        if value is None:
            del headers[header]
        else:
            headers[header] = value
    return headers, message.payload


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"reply_to": None}, REPLY_TO_HEADER),
        ({"start_by": None}, START_BY_HEADER),
        ({"start_by": "tomorrow"}, START_BY_HEADER),
        ({"deadline": "soon"}, DEADLINE_HEADER),
    ],
)
def test_a_message_without_the_bus_headers_is_no_request(changes: dict[str, str | None], field: str) -> None:
    headers, payload = _message(**changes)
    with pytest.raises(E2AFieldError) as raised:
        read_request(headers, payload)
    assert raised.value.field == field


def test_a_header_whose_percent_encoding_is_not_utf8_is_no_request() -> None:
    headers, payload = _message()
    headers["ce-id"] = "%ff"
    with pytest.raises(E2AFieldError) as raised:
        read_request(headers, payload)
    assert raised.value.field == "ce-id"


def test_a_response_event_is_no_request() -> None:
    headers, payload = _message()
    headers["ce-mcptype"] = "response"
    with pytest.raises(E2AFieldError):
        read_request(headers, payload)


@given(st.lists(_IDS, min_size=2, max_size=2, unique=True))
def test_each_agent_and_request_is_one_subject_token_of_its_own(ids: list[str]) -> None:
    first, second = ids
    for make in (
        lambda agent: any_worker_subject(PREFIX, agent),
        lambda agent: worker_subject(PREFIX, agent, _INSTANCE),
        shared_consumer,
        lambda agent: worker_consumer(agent, _INSTANCE),
        lambda request: cancel_subject("e2a.cancel", request),
    ):
        one, other = make(first), make(second)
        assert one != other
        for name in (one, other):
            assert not set(name) & set(" *>\t\r\n")
    assert any_worker_subject(PREFIX, first).count(".") == 3
    assert cancel_subject("e2a.cancel", first).count(".") == 2


def _nats_matches(subscription: str, subject: str) -> bool:
    """Whether a core NATS subscription (``*``: one token, ``>``: the rest) gets ``subject``."""
    wanted, tokens = subscription.split("."), subject.split(".")
    if wanted[-1] == ">":
        return len(tokens) >= len(wanted) and all(w in ("*", t) for w, t in zip(wanted[:-1], tokens, strict=False))
    return len(wanted) == len(tokens) and all(w in ("*", t) for w, t in zip(wanted, tokens, strict=True))


CANCEL_PREFIX = "e2a.cancel"


@given(_IDS, _IDS, _IDS)
def test_a_task_cancel_reaches_its_agents_workers_alone_and_never_a_request_cancel(
    agent_id: str, task_id: str, other: str
) -> None:
    subject = task_cancel_subject(CANCEL_PREFIX, agent_id, task_id)
    assert _nats_matches(task_cancel_filter(CANCEL_PREFIX, agent_id), subject)
    assert _nats_matches(task_cancel_filter(CANCEL_PREFIX, other), subject) == (other == agent_id)
    # The workers' request-cancel subscription never gets a task cancel, nor a task filter a request's
    # cancel: not even a request whose id is the task token's word.
    assert not _nats_matches(f"{CANCEL_PREFIX}.*", subject)
    for request_id in (task_id, TASK_CANCEL):
        assert not _nats_matches(task_cancel_filter(CANCEL_PREFIX, agent_id), cancel_subject(CANCEL_PREFIX, request_id))
    assert read_task_cancel(subject, task_cancel_headers(task_id)) == task_id


def test_a_task_cancel_without_its_task_id_or_with_another_is_no_task_cancel() -> None:
    subject = task_cancel_subject(CANCEL_PREFIX, "writer", "task.1")
    assert subject == f"{CANCEL_PREFIX}.task.writer.~dGFzay4x"  # the id's dot cannot split the subject
    with pytest.raises(E2AFieldError, match=TASK_ID_HEADER):
        read_task_cancel(subject, None)
    with pytest.raises(E2AFieldError, match="not the one subject"):
        read_task_cancel(subject, task_cancel_headers("task-2"))


@pytest.mark.parametrize(
    "reply",
    [
        TaskCancelReply(TaskCancelOutcome.CANCELLED, _INSTANCE),
        TaskCancelReply(TaskCancelOutcome.FAILED, _INSTANCE, ErrorCode.A2A_AGENT_ERROR, "the agent said no: é"),
    ],
)
def test_task_cancel_replies_read_back(reply: TaskCancelReply) -> None:
    assert read_task_cancel_reply(task_cancel_reply_headers(reply), reply.message.encode()) == reply


def test_a_message_without_a_known_task_cancel_reply_is_none() -> None:
    assert read_task_cancel_reply(None, b"") is None
    assert read_task_cancel_reply({"E2A-Task-Cancel": "maybe"}, b"") is None
    assert read_task_cancel_reply({"Status": "503"}, b"") is None  # the server's "no responders"


@given(st.sampled_from(list(Notice)))
def test_notices_read_back(notice: Notice) -> None:
    assert read_notice(notice_headers(notice, _INSTANCE)) == (notice, _INSTANCE)


def test_a_message_without_a_known_notice_is_none() -> None:
    assert read_notice(None) is None
    assert read_notice({"E2A-Notice": "sleeping"}) is None


def _stored_frames(envelope: E2AEnvelope, chunks: int, final: bool) -> list[bytes]:
    builder = FrameBuilder(envelope, BackendInfo("echo", SourceProtocol.E2A), UtcClock())
    frames = [builder.delta(Delta(DeltaKind.TEXT, f"w{n} ")) for n in range(chunks)]
    if final:
        frames.append(builder.complete({"content": "done"}))
    return frames


@given(st.integers(min_value=0, max_value=5), st.booleans() | st.none(), st.none() | _IDS)
def test_the_lost_frame_ends_any_stored_stream_with_agent_unavailable(
    chunks: int, task_id_adopted: bool | None, session_id: str | None
) -> None:
    envelope = E2AEnvelope(method="chat.send", request_id="req-1", session_id=session_id, params={"text": "x"})
    frames = [frame_record(frame) for frame in _stored_frames(envelope, chunks, final=False)]
    if task_id_adopted and frames:
        frames = [dataclasses.replace(frame, task_id="agent-task") for frame in frames]
    lost = lost_final_frame(envelope, frames[-1] if frames else None, noticed_by="gateway", timestamp=utc_now_iso())
    checker = StreamChecker(envelope)
    for frame in [*frames, lost]:
        checker.check(frame)
    checker.finish()
    assert lost.sequence == len(frames)
    assert lost.response_id == lost_message_id("req-1") == "req-1:lost"
    assert lost.body["code"] == ErrorCode.AGENT_UNAVAILABLE
    assert lost.task_id == (frames[-1].task_id if frames else None)


def test_a_request_keeps_its_id_and_gets_one_when_it_has_none() -> None:
    envelope = E2AEnvelope(method="chat.send", request_id="mine", params={"text": "x"})
    assert with_request_id(envelope) is envelope
    assigned = with_request_id(dataclasses.replace(envelope, request_id=None)).request_id
    assert assigned and assigned != with_request_id(dataclasses.replace(envelope, request_id=None)).request_id
