"""The publisher's fast path (``FrameMessages``) writes exactly the NATS message of the general mapping
(``frame_message``: record, CloudEvent, binary mode) for generated frames: subject, headers in order,
payload; and both refuse the same frames."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import _HEADER_VALUE_NEWLINES  # what nats-py's publish does to each header value

from e2a.v1 import agent_service_pb2, e2a_pb2
from e2a_grpc.broker.frame_messages import (
    MSG_ID_HEADER,
    BrokerMessage,
    FrameMessages,
    HeaderText,
    frame_message,
    header_text,
)
from e2a_grpc.chat.events import BackendInfo, Complete, Delta
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse

PREFIX, TYPE_PREFIX = "e2a.frames", "io.e2a"

texts = st.text(max_size=12)
ids = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "r-1", "a b", "100%", 'q"uote', "ü", "x.y*z>", "_", "\n"]),
    st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1, max_size=10),
    texts,
)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False), texts
)
json_objects = st.dictionaries(
    texts, st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=5)
)


@st.composite
def object_texts(draw: st.DrawFn) -> str:
    """A free-form field's JSON text: canonical, spaced out, empty, or not an object at all."""
    value = draw(json_objects)
    form = draw(st.sampled_from(["compact", "spaced", "empty", "broken"]))
    if form == "empty":
        return ""
    if form == "broken":
        return draw(st.sampled_from(["[1]", "{", "nope", '{"a":NaN}']))
    return json.dumps(value, separators=(",", ":") if form == "compact" else (", ", ": "), ensure_ascii=False)


timestamps = st.one_of(
    st.none(),
    st.sampled_from(
        ["2026-11-30T17:52:46.819688+00:00", "2026-01-02T03:04:05Z", "2026-02-30T00:00:00Z", "yesterday", ""]
    ),
)


@st.composite
def shared_fields(draw: st.DrawFn) -> dict[str, Any]:
    """What every frame of one stream carries (``FrameBuilder``'s template)."""
    fields: dict[str, Any] = {
        "protocol_version": draw(st.one_of(st.none(), st.just("1.0"))),
        "request_id": draw(ids),
        "session_id": draw(ids),
        "channel": draw(ids),
        "method": draw(st.one_of(st.none(), st.sampled_from(["chat.send", "tools/call", "a b", ""]))),
        "is_stream": draw(st.booleans()),
        "identity_origin": draw(st.sampled_from([0, e2a_pb2.IDENTITY_ORIGIN_AGENT, e2a_pb2.IDENTITY_ORIGIN_USER])),
        "metadata": draw(object_texts()),
        "task_id": draw(ids),
    }
    if draw(st.booleans()):
        fields["provenance"] = e2a_pb2.E2AProvenance(source_protocol="e2a", converter="e2a_grpc.chat:echo")
    if draw(st.booleans()):
        fields["jsonrpc_id"] = e2a_pb2.JsonRpcId(integer_value=draw(st.integers(-(2**63), 2**63 - 1)))
    return {name: value for name, value in fields.items() if value is not None}


@st.composite
def own_fields(draw: st.DrawFn) -> dict[str, Any]:
    """What each frame sets itself."""
    fields: dict[str, Any] = {
        "response_id": draw(ids),
        "sequence": draw(st.one_of(st.integers(0, 3), st.integers(-(2**63), 2**63 - 1))),
        "is_final": draw(st.booleans()),
        "status": draw(st.sampled_from(["in_progress", "succeeded", ""])),
        "response_kind": draw(st.sampled_from(["e2a.chunk", "e2a.complete", "", "x/y"])),
        "timestamp": draw(timestamps),
        "body": draw(object_texts()),
    }
    return {name: value for name, value in fields.items() if value is not None}


def _frame(shared: dict[str, Any], own: dict[str, Any]) -> bytes:
    response = e2a_pb2.E2AResponse(**shared, **own)
    return agent_service_pb2.ChatResponse(response=response).SerializeToString()


def _general(frame: bytes, source: str | None) -> BrokerMessage:
    record = E2AResponse.from_proto(agent_service_pb2.ChatResponse.FromString(frame).response)
    return frame_message(record, subject_prefix=PREFIX, type_prefix=TYPE_PREFIX, source=source)


def _comparable(message: BrokerMessage, random_id: bool) -> tuple[str, list[tuple[str, str]], bytes]:
    """The message; an event id the mapping made up (the frame had none) is replaced by a marker."""
    headers = list(message.headers.items())
    subject = message.subject
    if random_id:
        event_id = message.headers[MSG_ID_HEADER]
        headers = [(name, "<random>" if value == event_id else value) for name, value in headers]
        subject = subject.replace(event_id, "<random>")
    return subject, headers, message.payload


def _outcome(build: Any, frame: bytes, random_id: bool) -> Any:
    try:
        return _comparable(build(frame), random_id)
    except E2AFieldError as exc:
        return type(exc), exc.field


@given(
    streams=st.lists(shared_fields(), min_size=1, max_size=3),
    frames=st.lists(st.tuples(st.integers(0, 2), own_fields()), min_size=1, max_size=8),
    source=st.one_of(st.none(), st.just("/agents/a b")),
)
def test_the_fast_path_writes_the_general_mappings_message(
    streams: list[dict[str, Any]], frames: list[tuple[int, dict[str, Any]]], source: str | None
) -> None:
    fast = FrameMessages(subject_prefix=PREFIX, type_prefix=TYPE_PREFIX, source=source)
    for stream, own in frames:  # the streams' frames interleaved, so cached parts are used again
        frame = _frame(streams[stream % len(streams)], own)
        response_id = own.get("response_id")
        random_id = not response_id or response_id.isspace()
        expected = _outcome(lambda data: _general(data, source), frame, random_id)
        assert _outcome(fast.message, frame, random_id) == expected


def test_a_streams_frames_from_the_frame_builder() -> None:
    envelope = E2AEnvelope(
        method="chat.send", request_id="r 1", session_id="s.1", channel="web/x", is_stream=True, jsonrpc_id=7
    )
    builder = FrameBuilder(envelope, BackendInfo(name="echo", source_protocol="e2a"), UtcClock())
    frames = [builder.delta(Delta(DeltaKind.TEXT, word)) for word in ("a ", 'say "hi" ', "ü\u2028")]
    frames.append(builder.complete(Complete({"content": "x"}).result))
    fast = FrameMessages(subject_prefix=PREFIX, type_prefix=TYPE_PREFIX, source=None)
    for frame in frames:
        message = fast.message(frame)
        assert _comparable(message, False) == _comparable(_general(frame, None), False)
        assert all(isinstance(value, HeaderText) for value in message.headers.values())


@given(value=st.text(max_size=20), table=st.dictionaries(st.integers(0, 0x7F), st.sampled_from([" ", "", None])))
def test_header_text_is_the_string_it_holds(value: str, table: dict[int, str | None]) -> None:
    text = header_text(value)
    assert text == value
    for mapping in (table, _HEADER_VALUE_NEWLINES):
        assert text.strip() == value.strip()
        assert text.strip("x ") == value.strip("x ")
        assert text.translate(mapping) == value.translate(mapping)


@pytest.mark.parametrize("value", ["plain", "a b", " lead", "trail\t", "cr\r", "ü"])
def test_only_plain_header_text_skips_the_clean_up(value: str) -> None:
    assert isinstance(header_text(value), HeaderText) == (value in ("plain", "a b"))
