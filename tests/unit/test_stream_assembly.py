"""StreamAssembler: streams rebuilt in sequence order and checked, whatever order and how many times
the broker delivered their frames."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.broker import assembly
from e2a_grpc.broker.assembly import StreamAssembler
from e2a_grpc.chat.invariants import StreamInvariantError
from e2a_grpc.model import E2AResponse


def _frames(request_id: str, count: int) -> list[E2AResponse]:
    frames = [
        E2AResponse(
            response_id=f"{request_id}-{n}",
            request_id=request_id,
            sequence=n,
            response_kind="e2a.chunk",
            timestamp="2026-01-01T00:00:00.000000+00:00",
            is_stream=True,
            method="chat.send",
        )
        for n in range(count)
    ]
    final = frames[-1]
    final.is_final, final.status, final.response_kind = True, "succeeded", "e2a.complete"
    for frame in frames:
        frame.provenance.source_protocol = "e2a"
    return frames


@given(st.data())
def test_any_order_with_redeliveries_gives_each_stream_once_in_order(data: st.DataObject) -> None:
    streams = {name: _frames(name, data.draw(st.integers(1, 8))) for name in ("a", "b")}
    deliveries = [frame for frames in streams.values() for frame in frames]
    deliveries += data.draw(st.lists(st.sampled_from(deliveries), max_size=10))  # redeliveries
    deliveries = data.draw(st.permutations(deliveries))
    assembler = StreamAssembler()
    released: dict[str, list[int]] = {"a": [], "b": []}
    for frame in deliveries:
        for ready in assembler.add(frame):
            assert ready.request_id is not None
            released[ready.request_id].append(ready.sequence)
    assert released == {name: list(range(len(frames))) for name, frames in streams.items()}
    assert sorted(assembler.finished) == ["a", "b"]
    assert not assembler._streams  # nothing is kept of a finished stream but its request id
    assert assembler.finished_count == 2


def test_finished_streams_are_counted_but_only_the_last_ones_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assembly, "REMEMBERED_FINISHED_STREAMS", 2)
    assembler = StreamAssembler()
    for name in ("a", "b", "c"):
        for frame in _frames(name, 1):
            assembler.add(frame)
    assert assembler.finished_count == 3 and assembler.finished == ["b", "c"]


def test_two_different_frames_with_one_sequence_are_refused() -> None:
    first = _frames("r", 2)[0]
    impostor = E2AResponse.from_dict({**first.to_dict(), "response_id": "other"})
    assembler = StreamAssembler()
    assembler.add(first)
    with pytest.raises(StreamInvariantError, match="two frames with sequence 0"):
        assembler.add(impostor)


def test_released_frames_are_checked_against_section_12() -> None:
    first, second = _frames("r", 2)
    bad = E2AResponse.from_dict({**second.to_dict(), "method": "other.method"})  # does not echo the request
    assembler = StreamAssembler()
    assert assembler.add(first) == [first]
    with pytest.raises(StreamInvariantError, match="method"):
        assembler.add(bad)


def test_frames_past_the_waiting_limit_are_refused() -> None:
    frames = _frames("r", 5)
    assembler = StreamAssembler(max_waiting_frames=2)
    assembler.add(frames[3])
    assembler.add(frames[2])
    with pytest.raises(StreamInvariantError, match="out of order"):
        assembler.add(frames[1])
