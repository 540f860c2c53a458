"""``FrameBuilder`` writes each frame as the bytes of its ``ChatResponse``: they must be exactly what the
generated class serializes for the same frame (gRPC sends them as they are), and the frame must say what
the event and the request say (spec section 12)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.chat.events import AgentIds, BackendInfo, Delta, Event, Passthrough
from e2a_grpc.chat.frames import REQUEST_ID_ASSIGNED_KEY, FrameBuilder, UtcClock
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.model import DeltaKind, ErrorCode
from tests.support.strategies import any_text, json_objects, json_values, jsonrpc_ids, optional_text, unicode_text

_present_text = st.text(min_size=1, max_size=12)
envelopes = st.builds(
    E2AEnvelope,
    method=st.sampled_from(["chat.send", "session/prompt"]),
    params=st.just({"text": "hi"}),
    request_id=st.none() | _present_text,
    protocol_version=st.none() | _present_text,
    jsonrpc_id=jsonrpc_ids,
    correlation_id=optional_text,
    task_id=optional_text,
    context_id=optional_text,
    session_id=optional_text,
    message_id=optional_text,
    is_stream=st.booleans(),
    channel=optional_text,
    user_id=optional_text,
    agent_ref=st.none() | json_objects,
    source_agent_id=optional_text,
)
backends = st.builds(
    BackendInfo, st.sampled_from(["echo", "acp", "a2a"]), st.sampled_from(["e2a", "acp", "a2a"]), json_objects
)
events: st.SearchStrategy[Event] = st.one_of(
    st.builds(Delta, st.just(DeltaKind.TEXT), any_text),  # lone surrogates included: the escaping path
    st.builds(Delta, st.sampled_from(list(DeltaKind)), json_values, st.none() | unicode_text),
    st.builds(Passthrough, st.sampled_from(["acp.session_update", "a2a.stream_event", "x.future"]), json_objects),
    st.builds(AgentIds, optional_text, optional_text),
)
finals = st.one_of(
    st.builds(lambda result: ("complete", result), json_objects),
    st.builds(
        lambda code, message, details, external: ("error", code, message, details, external),
        st.sampled_from(list(ErrorCode)) | st.integers(-(2**31), 2**31 - 1),
        unicode_text,
        st.none() | json_objects,
        st.none() | json_objects,
    ),
)


def _parsed(frame: bytes) -> E2AResponse:
    message = pb.ChatResponse.FromString(frame)
    assert message.SerializeToString() == frame  # the very bytes the generated class writes
    return E2AResponse.from_proto(message.response)


@given(envelopes, backends, st.lists(events, max_size=8), finals)
def test_each_frame_is_its_chat_response_serialized_and_says_what_the_event_says(
    envelope: E2AEnvelope, backend: BackendInfo, stream: list[Event], final: tuple[Any, ...]
) -> None:
    builder = FrameBuilder(envelope, backend, UtcClock())
    checker = StreamChecker(envelope)
    for event in stream:
        if isinstance(event, AgentIds):
            builder.adopt_agent_ids(event)
            continue
        if isinstance(event, Delta):
            frame = _parsed(builder.delta(event))
            expected: dict[str, Any] = {"delta_kind": event.delta_kind, "delta": event.delta}
            if event.mime_type is not None:
                expected["mime_type"] = event.mime_type
            assert (frame.response_kind, frame.body) == ("e2a.chunk", expected)
        else:
            assert isinstance(event, Passthrough)
            frame = _parsed(builder.passthrough(event))
            assert (frame.response_kind, frame.body) == (event.response_kind, event.body)
        assert builder.last_kind == frame.response_kind  # what the Chat metrics count the frame as
        assert builder.last_record() == frame  # the A2A server publishes from it, not from the bytes
        checker.check(frame)
        assert frame.provenance.source_protocol == backend.source_protocol
        assert frame.provenance.converter == f"e2a_grpc.chat:{backend.name}"
        assert (REQUEST_ID_ASSIGNED_KEY in frame.metadata) is (envelope.request_id is None)
    if final[0] == "complete":
        last = _parsed(builder.complete(final[1]))
        assert (last.response_kind, last.status, last.body) == ("e2a.complete", "succeeded", {"result": final[1]})
    else:
        _, code, message, details, external = final
        last = _parsed(builder.error(code, message, details, external))
        assert (last.response_kind, last.status) == ("e2a.error", "failed")
        assert last.body["message"] == message and last.body["details"] == (details or {})
        assert last.body.get("external") == external
    assert builder.last_kind == last.response_kind
    assert builder.last_record() == last
    checker.check(last)
    assert checker.finish() is last and last.is_final and builder.finished


def test_frames_of_a_long_stream_are_their_chat_response_serialized() -> None:
    """Sequence numbers and bodies past the one-byte and two-byte varints (the hypothesis streams above
    are short), on the text delta fast path and the general one alike."""
    envelope = E2AEnvelope(method="chat.send", params={"text": "hi"}, request_id="r-1", task_id="t")
    builder = FrameBuilder(envelope, BackendInfo("echo", "e2a"), UtcClock())
    checker = StreamChecker(envelope)
    texts = {0x7F: "a" * 0x80, 0x3FFF: "b" * 0x4000, 0x4001: "ü" * 0x2001}
    passthrough_at = {0x80, 0x4000}
    for sequence in range(0x4000 + 8):
        if sequence in passthrough_at:
            frame = builder.passthrough(Passthrough("acp.session_update", {"n": sequence}))
        else:
            frame = builder.delta(Delta(DeltaKind.TEXT, texts.get(sequence, "w ")))
        record = _parsed(frame)
        checker.check(record)
        assert record.sequence == sequence
        assert builder.last_record() == record
        if sequence not in passthrough_at:
            assert record.body == {"delta_kind": "text", "delta": texts.get(sequence, "w ")}
    final = _parsed(builder.complete({"content": "done"}))
    checker.check(final)
    assert checker.finish().sequence == 0x4000 + 8
