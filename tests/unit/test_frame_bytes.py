"""The C half of the frame path (``e2a_grpc.chat._frame_bytes``): its timestamps, the edges of its text
delta frames that streams of ordinary length never reach, and its refusals of bad arguments.

That its text delta frames are the very bytes protobuf writes, for any text, is tested with the rest of
the frames in test_frames.py."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope, jsontext
from e2a_grpc.chat._frame_bytes import text_chunk, utc_timestamp
from e2a_grpc.chat.events import BackendInfo, Delta
from e2a_grpc.chat.frames import TIMESTAMP_BYTES, FrameBuilder, UtcClock
from e2a_grpc.model import DeltaKind
from tests.support.strategies import any_text

_TIMESTAMP = re.compile(rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00")
#: The frame with the largest sequence a response id's 12 hex digits can hold.
_LAST_SEQUENCE = 16**12 - 1


def _microseconds(timestamp: bytes) -> int:
    moment = datetime.fromisoformat(timestamp.decode("ascii"))
    assert moment.utcoffset() is not None and not moment.utcoffset()  # UTC, and says so
    return round((moment - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000)


def test_timestamps_are_the_time_now_in_rfc_3339_utc_across_a_change_of_second() -> None:
    """Each timestamp lies between the clock's readings around it, including those written after the
    second changed (the date and time are formatted once a second)."""
    seconds_seen: set[bytes] = set()
    deadline = time.monotonic() + 3.0  # a second changes within one; three against a stalled machine
    while len(seconds_seen) < 2:
        assert time.monotonic() < deadline, "the second never changed"
        before = time.time_ns() // 1000
        timestamp = utc_timestamp()
        after = time.time_ns() // 1000
        assert len(timestamp) == TIMESTAMP_BYTES and _TIMESTAMP.fullmatch(timestamp), timestamp
        assert before <= _microseconds(timestamp) <= after
        seconds_seen.add(timestamp[:19])
    assert UtcClock().now is utc_timestamp


def _builder() -> FrameBuilder:
    envelope = E2AEnvelope(method="chat.send", params={"text": "hi"}, request_id="r-1")
    return FrameBuilder(envelope, BackendInfo("echo", "e2a"), UtcClock())


@given(st.one_of(any_text, st.text(st.characters(max_codepoint=0x7F), max_size=40)))
def test_a_text_delta_body_is_the_very_text_jsontext_writes(text: str) -> None:
    """Byte for byte (a record keeps a canonical text as it is): strings without escapes are written
    by the C side itself, the others by orjson, lone surrogates by the general path."""
    frame = _builder().delta(Delta(DeltaKind.TEXT, text))
    body = pb.ChatResponse.FromString(frame).response.body
    assert body == jsontext.dumps({"delta_kind": DeltaKind.TEXT, "delta": text})


def test_the_last_sequence_a_response_id_holds_is_written_and_the_next_is_refused() -> None:
    builder = _builder()
    builder.sequence = _LAST_SEQUENCE
    response = pb.ChatResponse.FromString(builder.delta(Delta(DeltaKind.TEXT, "w"))).response
    assert (response.sequence, response.response_id[-12:]) == (_LAST_SEQUENCE, "f" * 12)
    for event in (Delta(DeltaKind.TEXT, "w"), Delta(DeltaKind.TEXT, {"not": "text"})):
        with pytest.raises(RuntimeError, match="unique for 281474976710656 frames"):
            builder.delta(event)


def test_no_text_delta_after_the_final_frame() -> None:
    builder = _builder()
    builder.complete({"content": "done"})
    with pytest.raises(RuntimeError, match="exactly one final frame"):
        builder.delta(Delta(DeltaKind.TEXT, "late"))


def _layout(**changes: Any) -> tuple[Any, ...]:
    pieces: dict[str, Any] = {
        "frame_tag": b"\x0a",
        "before_id_digits": b"\x12\x0cid-",
        "before_sequence": b"",
        "sequence_tag": b"\x20",
        "before_timestamp": b"\x42\x20",
        "before_body_size": b"\x52",
        "body_prefix": b'{"d":',
        "body_suffix": b"}",
        "after_body": b"",
        "hex_digits": 9,
    }
    pieces.update(changes)
    return tuple(pieces.values())


def test_a_frame_of_pieces_is_assembled_in_their_order_with_its_varints() -> None:
    timestamp = utc_timestamp()
    frame = text_chunk(_layout(), 300, timestamp, 'a"b')
    body = b'{"d":"a\\"b"}'
    response = (
        b"\x12\x0cid-00000012c" + b"\x20\xac\x02" + b"\x42\x20" + timestamp + b"\x52" + bytes((len(body),)) + body
    )
    assert frame == b"\x0a" + bytes((len(response),)) + response


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((_layout(),), TypeError, "takes 4 arguments"),
        ((_layout()[:-1], 1, b"t", "x"), TypeError, "tuple of 10 items"),
        ((list(_layout()), 1, b"t", "x"), TypeError, "tuple of 10 items"),
        ((_layout(body_prefix="{"), 1, b"t", "x"), TypeError, "layout item 6 must be bytes"),
        ((_layout(hex_digits=0), 1, b"t", "x"), ValueError, "hex digits must be 1 to 16"),
        ((_layout(hex_digits="12"), 1, b"t", "x"), TypeError, "cannot be interpreted as an integer"),
        ((_layout(), 1, "t", "x"), TypeError, "timestamp must be bytes"),
        ((_layout(), "1", b"t", "x"), TypeError, "cannot be interpreted as an integer"),
    ],
)
def test_bad_arguments_are_refused(arguments: tuple[Any, ...], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        text_chunk(*arguments)


@pytest.mark.parametrize("text", ["\ud800", b"bytes", None, {"delta": "x"}])
def test_what_only_the_general_path_writes_is_left_to_it(text: object) -> None:
    assert text_chunk(_layout(), 1, b"t", text) is None


@pytest.mark.parametrize("sequence", [16**9, 2**64, -1])
def test_a_sequence_the_id_cannot_hold_is_left_to_the_general_path(sequence: int) -> None:
    assert text_chunk(_layout(), sequence, b"t", "x") is None
