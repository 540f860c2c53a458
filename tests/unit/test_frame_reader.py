"""``FrameReader`` reads exactly what the general mapping (``read_frame``) reads, message by message,
for generated streams of frames and corruptions of their messages, and reads a stream's frames after
its first without the general mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.broker import frame_reader
from e2a_grpc.broker.frame_messages import FrameMessages, read_frame
from e2a_grpc.broker.frame_reader import FrameReader
from e2a_grpc.chat.events import AgentIds, BackendInfo, Complete, Delta
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse
from tests.unit.test_frame_messages import _frame, _general, own_fields, shared_fields

Message = tuple[dict[str, str], bytes]
#: The data's fields a corruption writes to: those the headers say too, and the frame's own.
_FIELDS = ("method", "request_id", "sequence", "response_id", "timestamp", "is_final", "status", "body", "task_id")


def _received(frame: bytes) -> Message:
    """A frame's message as a subscriber gets it: nats-py hands headers over as plain strings."""
    message = _general(frame, None)
    return {name: str(value) for name, value in message.headers.items()}, message.payload


def _corrupted(message: Message, how: str, value: str, index: int) -> Message:
    """``message`` with ``how`` done to it: ``value`` written into the header, or the data's field,
    that ``index`` picks."""
    headers, payload = dict(message[0]), message[1]
    name = sorted(headers)[index % len(headers)]
    if how == "header":
        headers[name] = value
    elif how == "drop":
        headers.pop(name)
    elif how == "extra":
        headers["ce-" + (value or "x")] = value
    elif how == "swap":  # one header for another: as many in all
        headers.pop(name)
        headers["ce-" + value if index % 2 else value or "x-other"] = "1"
    elif how == "spaced":
        try:
            payload = json.dumps(json.loads(payload), separators=(", ", ": ")).encode()
        except ValueError:
            payload = b"{"
    elif how == "bytes":
        payload = payload[: len(value)] + b"\xff" + payload[len(value) :]
    elif how == "field":
        document = json.loads(payload)
        document[_FIELDS[index % len(_FIELDS)]] = value
        payload = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    return headers, payload


def _outcome(read: Any, message: Message) -> Any:
    try:
        frame = read(*message)
    except E2AFieldError as exc:
        return type(exc), exc.field, str(exc)
    assert isinstance(frame, E2AResponse)
    return frame.to_json()


corruptions = st.one_of(
    st.just(("none", "", 0)),
    st.tuples(
        st.sampled_from(["header", "drop", "extra", "swap", "spaced", "bytes", "field"]),
        st.sampled_from(
            ["", "1", "7", "%41", "2026-02-30T00:00:00Z", "2026-12-07T10:00:00Z", "ce-seq", "Bad_Name", "tools/call"]
        ),
        st.integers(0, 40),
    ),
)


@given(
    streams=st.lists(shared_fields(), min_size=1, max_size=2),
    frames=st.lists(st.tuples(st.integers(0, 1), own_fields(), corruptions), min_size=1, max_size=8),
)
def test_the_reader_reads_what_the_general_mapping_reads(
    streams: list[dict[str, Any]], frames: list[tuple[int, dict[str, Any], tuple[str, str, int]]]
) -> None:
    reader = FrameReader()  # one reader for frames of two streams, corrupted: the worst it can be given
    for stream, own, (how, value, index) in frames:
        try:
            message = _received(_frame(streams[stream % len(streams)], own))
        except E2AFieldError:
            continue  # a frame the mapping cannot write: nothing on the bus to read
        message = _corrupted(message, how, value, index)
        assert _outcome(reader.read, message) == _outcome(read_frame, message)


@given(
    request_id=st.sampled_from(["r-1", "a b", "100%", "ü"]),
    method=st.sampled_from(["chat.send", "tools/call"]),
    session_id=st.sampled_from([None, "s 1"]),
    corrupted=st.lists(corruptions, min_size=1, max_size=6),
)
def test_a_streams_corrupted_frames_are_read_as_the_general_mapping_reads_them(
    request_id: str, method: str, session_id: str | None, corrupted: list[tuple[str, str, int]]
) -> None:
    envelope = E2AEnvelope(method=method, request_id=request_id, session_id=session_id, is_stream=True)
    builder = FrameBuilder(envelope, BackendInfo(name="echo", source_protocol="e2a"), UtcClock())
    writer = FrameMessages(subject_prefix="e2a.frames", type_prefix="io.e2a", source=None)
    reader = FrameReader()
    # The first frame as it was sent (the reader keeps its headers), then corrupted ones of the stream.
    for how, value, index in [("none", "", 0), *corrupted]:
        message = writer.message(builder.delta(Delta(DeltaKind.TEXT, "w ")))
        received = {name: str(text) for name, text in message.headers.items()}, message.payload
        received = _corrupted(received, how, value, index)
        assert _outcome(reader.read, received) == _outcome(read_frame, received)


def test_a_streams_frames_after_its_first_take_the_fast_path_an_adopted_id_included(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    general = 0

    def counted(headers: Any, payload: bytes) -> E2AResponse:
        nonlocal general
        general += 1
        return read_frame(headers, payload)

    monkeypatch.setattr(frame_reader, "read_frame", counted)
    envelope = E2AEnvelope(method="chat.send", request_id="r-1", session_id="s 1", is_stream=True, jsonrpc_id=7)
    builder = FrameBuilder(envelope, BackendInfo(name="echo", source_protocol="e2a"), UtcClock())
    frames = [builder.delta(Delta(DeltaKind.TEXT, word)) for word in ("a ", 'say "hi" ', "ü\u2028")]
    builder.adopt_agent_ids(AgentIds("task-1", None))  # in the data, not the headers
    frames += [builder.delta(Delta(DeltaKind.TEXT, "b")), builder.complete(Complete({"content": "x"}).result)]
    writer = FrameMessages(subject_prefix="e2a.frames", type_prefix="io.e2a", source=None)
    reader = FrameReader()
    for frame in frames:
        message = writer.message(frame)
        headers = {name: str(value) for name, value in message.headers.items()}
        assert reader.read(headers, message.payload).to_json() == read_frame(headers, message.payload).to_json()
    assert general == 1  # the reader's first frame (the test's own calls are not counted)
