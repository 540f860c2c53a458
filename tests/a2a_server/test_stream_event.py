"""The A2A server builds the ``StreamResponse`` of a chunk's projection itself (the per-frame path):
it must be the message ``json_format.ParseDict`` gives for the same projection, for every frame."""

from __future__ import annotations

from a2a.types.a2a_pb2 import StreamResponse
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc import E2AEnvelope, conversion
from e2a_grpc.a2a_server.executor import stream_event
from e2a_grpc.chat.events import BackendInfo, Delta, InputRequired, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.model import DeltaKind, ErrorCode, WaitReason
from tests.support.strategies import any_text, json_objects, json_values, optional_text, unicode_text

deltas = st.one_of(
    st.builds(Delta, st.sampled_from(list(DeltaKind)), any_text, st.none() | unicode_text),
    st.builds(Delta, st.sampled_from(list(DeltaKind)), json_objects | st.lists(json_values, max_size=3)),
)
remote_events = st.builds(
    lambda branch, payload: Passthrough("a2a.stream_event", {"branch": branch, "payload": payload}),
    st.sampled_from(["status_update", "artifact_update", "message", "task"]),
    st.fixed_dictionaries({"taskId": unicode_text, "contextId": unicode_text}),
)


finals = st.sampled_from(["complete", "error", "input_required"])


@given(optional_text, st.lists(deltas | remote_events, max_size=6), json_objects, finals)
def test_a_frame_s_stream_response_is_what_parse_dict_gives(
    context_id: str | None, events: list[Delta | Passthrough], result: dict[str, object], final: str
) -> None:
    """Also: the record the A2A server publishes a frame from (``last_record``) is the frame's own."""
    envelope = E2AEnvelope(method="message/send", params={"text": "hi"}, request_id="task-1", session_id=context_id)
    builder = FrameBuilder(envelope, BackendInfo("echo", "e2a"), UtcClock())
    records = []
    for event in [*events, final]:
        if event == "complete":
            frame = builder.complete(result)
        elif event == "error":
            frame = builder.error(ErrorCode.INTERNAL, "failed", result)
        elif event == "input_required":
            frame = builder.input_required(
                InputRequired(WaitReason.PERMISSION, "may I?", result, {"q": 1}, ({"o": 1},))
            )
        else:
            assert isinstance(event, Delta | Passthrough)
            frame = builder.for_event(event)
        record = builder.last_record()
        assert record == frame_record(frame)
        records.append(record)
    for record in records:
        payload = conversion.to_a2a_stream(record, project_native_kinds=True)
        if isinstance(payload, conversion.NotApplicable):
            continue
        try:
            expected = json_format.ParseDict(payload, StreamResponse(), ignore_unknown_fields=True)
        except json_format.ParseError:
            continue  # a lone surrogate: neither builds it (the SDK would not send it either)
        assert stream_event(payload) == expected
