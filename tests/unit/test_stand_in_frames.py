"""``stand_in_frame``: the frame the publisher sends in the place of one the broker cannot take keeps
the stream whole for its readers (same stream fields, response id and sequence; the stream still
passes the section 12 invariants and ends where it ended), and says which frame was left out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from e2a.v1 import agent_service_pb2
from e2a_grpc.broker.frame_messages import NOT_PUBLISHED_DELTA, FrameMessages, frame_message, stand_in_frame
from e2a_grpc.chat.events import Delta
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.model import DeltaKind, E2AEnvelope, ErrorCode
from tests.support.fakes import FAKE_INFO

#: The fields a stand-in writes itself; every other field is the frame's.
STAND_IN_FIELDS = ("status", "response_kind", "body")


def _stream(words: list[str], failed: bool) -> tuple[E2AEnvelope, list[bytes]]:
    envelope = E2AEnvelope(method="chat.send", request_id="r-1", session_id="s 1", is_stream=True, params={})
    builder = FrameBuilder(envelope, FAKE_INFO, UtcClock())
    frames = [builder.delta(Delta(DeltaKind.TEXT, word)) for word in words]
    final = builder.error(ErrorCode.INTERNAL, "failed") if failed else builder.complete({"content": "".join(words)})
    return envelope, [*frames, final]


@given(
    words=st.lists(st.text(max_size=20), max_size=6),
    failed=st.booleans(),
    index=st.integers(min_value=0),
    reason=st.text(max_size=40),
)
def test_a_stand_in_keeps_the_stream_whole_and_names_the_frame_it_replaces(
    words: list[str], failed: bool, index: int, reason: str
) -> None:
    envelope, frames = _stream(words, failed)
    index %= len(frames)
    original = agent_service_pb2.ChatResponse.FromString(frames[index]).response
    frames[index] = stand_in_frame(frames[index], reason)
    stand_in = agent_service_pb2.ChatResponse.FromString(frames[index]).response
    for field in original.DESCRIPTOR.fields:
        if field.name not in STAND_IN_FIELDS:
            assert getattr(stand_in, field.name) == getattr(original, field.name), field.name
    checker = StreamChecker(envelope)
    for frame in frames:
        checker.check(frame_record(frame))
    assert checker.finish().sequence == len(frames) - 1  # the stream ends where it ended
    record = frame_record(frames[index])
    details = {
        "sequence": original.sequence,
        "response_kind": original.response_kind,
        "frame_bytes": len(agent_service_pb2.ChatResponse(response=original).SerializeToString()),
        "reason": reason,
    }
    if original.is_final:
        assert record.body == {
            "code": ErrorCode.FRAME_NOT_PUBLISHED,
            "message": f"the stream's final frame could not be published to the broker: {reason}",
            "details": details,
        }
    else:
        assert record.body == {"delta_kind": "custom", "delta": {NOT_PUBLISHED_DELTA: details}}
    # The publisher's fast path writes its message exactly as the general mapping does.
    messages = FrameMessages(subject_prefix="e2a.frames", type_prefix="io.e2a", source=None)
    general = frame_message(record, subject_prefix="e2a.frames", type_prefix="io.e2a", source=None)
    assert messages.message(frames[index]) == general
