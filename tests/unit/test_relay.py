"""``relay_frames``: another E2A service's frames back into the events they were made of, so the
gateway's own ``FrameBuilder`` writes frames with the same content; a stream that breaks section 12 or
ends without a final frame ends in a ``BackendError`` naming the upstream and what broke."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.chat.events import (
    AgentIds,
    BackendError,
    BackendInfo,
    Complete,
    Delta,
    Event,
    InputRequired,
    Passthrough,
)
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.chat.relay import UPSTREAM_DETAIL, relay_frames
from e2a_grpc.model import DeltaKind, ErrorCode, WaitReason
from tests.support.strategies import any_text, json_objects, json_values, optional_text, unicode_text
from tests.unit.test_frames import envelopes

ORIGIN = "grpc://upstream.example:50051"
#: Fields a relayed frame may differ in from the upstream's: the gateway's own ids, time and origin.
_OWN_FIELDS = ("request_id", "response_id", "timestamp", "provenance", "metadata")

progress_events: st.SearchStrategy[Event] = st.one_of(
    st.builds(Delta, st.just(DeltaKind.TEXT), any_text),
    st.builds(Delta, st.sampled_from(list(DeltaKind)), json_values, st.none() | unicode_text),
    st.builds(Passthrough, st.sampled_from(["acp.session_update", "a2a.stream_event", "x.future"]), json_objects),
    st.builds(AgentIds, optional_text, optional_text),
)
final_events: st.SearchStrategy[Complete | InputRequired | BackendError] = st.one_of(
    st.builds(Complete, json_objects),
    st.builds(
        InputRequired,
        st.sampled_from(list(WaitReason)),
        unicode_text,
        json_objects,
        st.none() | json_objects,
        st.lists(json_objects, max_size=3).map(tuple),
    ),
    st.builds(
        BackendError,
        st.sampled_from(list(ErrorCode)) | st.integers(-(2**31), 2**31 - 1) | st.just("a_code_from_the_future"),
        unicode_text,
        st.none() | json_objects,
        st.none() | json_objects,
    ),
)


def _frames(envelope: E2AEnvelope, events: Iterable[Event | BackendError], name: str = "echo") -> list[E2AResponse]:
    """The records of the frames a ``FrameBuilder`` writes for ``events``, as a Chat stream carries them."""
    builder = FrameBuilder(envelope, BackendInfo(name, "e2a"), UtcClock())
    frames = []
    for event in events:
        if isinstance(event, AgentIds):
            builder.adopt_agent_ids(event)
        elif isinstance(event, BackendError):
            frames.append(frame_record(builder.error(event.code, event.message, event.details, event.external)))
        else:
            frames.append(frame_record(builder.for_event(event)))
    return frames


async def _stream(frames: Iterable[E2AResponse]) -> AsyncIterator[E2AResponse]:
    for frame in frames:
        yield frame


async def _relayed(envelope: E2AEnvelope, frames: Iterable[E2AResponse]) -> list[Event | BackendError]:
    events: list[Event | BackendError] = []
    try:
        async for event in relay_frames(_stream(frames), envelope, ORIGIN):
            events.append(event)
    except BackendError as error:
        events.append(error)
    return events


def _content(frame: E2AResponse) -> E2AResponse:
    return dataclasses.replace(frame, **{name: getattr(E2AResponse(), name) for name in _OWN_FIELDS})


@given(envelopes, st.lists(progress_events, max_size=8), final_events)
def test_relayed_frames_rebuilt_by_a_new_builder_say_the_same(
    envelope: E2AEnvelope, progress: list[Event], final: Complete | InputRequired | BackendError
) -> None:
    upstream = _frames(envelope, [*progress, final], name="acp")
    events = asyncio.run(_relayed(envelope, upstream))
    assert type(events[-1]) is type(final)  # the stream ended as the upstream's did, not as a broken one
    rebuilt = _frames(envelope, events)
    checker = StreamChecker(envelope)
    for frame in rebuilt:
        checker.check(frame)
    checker.finish()
    assert [_content(frame) for frame in rebuilt] == [_content(frame) for frame in upstream]
    if isinstance(final, BackendError):
        relayed_error = events[-1]
        assert isinstance(relayed_error, BackendError)
        assert (relayed_error.code, relayed_error.message) == (final.code, final.message)
        assert (relayed_error.details, relayed_error.external) == (final.details, final.external)


def _request() -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", params={"text": "hi"}, request_id="r-1")


async def _failure(frames: Iterable[E2AResponse]) -> BackendError:
    events = await _relayed(_request(), frames)
    error = events[-1]
    assert isinstance(error, BackendError)
    assert error.details[UPSTREAM_DETAIL] == ORIGIN and ORIGIN in error.message
    return error


@pytest.mark.asyncio
async def test_a_stream_that_ends_without_a_final_frame_is_incomplete_naming_the_upstream() -> None:
    frames = _frames(_request(), [Delta(DeltaKind.TEXT, "partial")])
    error = await _failure(frames)
    assert error.code == ErrorCode.BACKEND_INCOMPLETE
    assert "without a final frame" in error.message


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        ({"sequence": 5}, "sequence 5, expected 1"),
        ({"request_id": "someone-else"}, "request_id 'someone-else'"),
        ({"timestamp": "yesterday"}, "not RFC 3339"),
        ({"session_id": "s-9"}, "session_id 's-9' does not echo"),
        ({"status": "succeeded"}, "a non-final frame has status"),
    ],
)
@pytest.mark.asyncio
async def test_an_invariant_violation_is_invalid_output_naming_the_upstream_and_the_problem(
    broken: dict[str, Any], problem: str
) -> None:
    first, second, final = _frames(_request(), [Delta(DeltaKind.TEXT, "a"), Delta(DeltaKind.TEXT, "b"), Complete({})])
    error = await _failure([first, dataclasses.replace(second, **broken), final])
    assert error.code == ErrorCode.BACKEND_INVALID_OUTPUT
    assert problem in error.message and "spec section 12" in error.message


@pytest.mark.asyncio
async def test_a_frame_after_the_final_frame_is_never_read() -> None:
    """The relay ends at the final frame: what an upstream sends after it is the upstream's to close."""
    frames = _frames(_request(), [Complete({"content": "done"})])
    events = await _relayed(_request(), [*frames, frames[0]])
    assert events == [Complete({"content": "done"})]


@pytest.mark.parametrize(
    ("kind", "body", "problem"),
    [
        ("e2a.chunk", {"delta": "x"}, "body.delta_kind must be a string"),
        ("e2a.chunk", {"delta_kind": "smell", "delta": "x"}, "body.delta_kind 'smell' is none of"),
        ("e2a.chunk", {"delta_kind": "text"}, "the body has no delta"),
        ("e2a.chunk", {"delta_kind": "text", "delta": "x", "mime_type": 3}, "body.mime_type must be a string"),
    ],
)
@pytest.mark.asyncio
async def test_a_chunk_no_delta_can_be_made_of_is_invalid_output(kind: str, body: dict[str, Any], problem: str) -> None:
    (frame, final) = _frames(_request(), [Delta(DeltaKind.TEXT, "x"), Complete({})])
    error = await _failure([dataclasses.replace(frame, response_kind=kind, body=body), final])
    assert error.code == ErrorCode.BACKEND_INVALID_OUTPUT
    assert problem in error.message and "frame 0 (e2a.chunk)" in error.message


@pytest.mark.parametrize(
    ("kind", "status", "body", "problem"),
    [
        ("e2a.complete", "succeeded", {"result": "done"}, "body.result must be an object"),
        ("a2a.task", "succeeded", {"id": "t"}, "a final frame must be e2a.complete"),
        (
            "e2a.input_required",
            "in_progress",
            {"reason": "input", "message": 7, "result": {}},
            "body.message must be a string",
        ),
        (
            "e2a.input_required",
            "in_progress",
            {"reason": "input", "message": "?", "result": {}, "options": ["yes"]},
            "body.options must be a list of objects",
        ),
        ("e2a.error", "failed", {"code": True, "message": "m", "details": {}}, "body.code must be a string or an"),
        ("e2a.error", "failed", {"code": 1, "message": "m", "details": []}, "body.details must be an object"),
    ],
)
@pytest.mark.asyncio
async def test_a_final_frame_no_event_can_be_made_of_is_invalid_output(
    kind: str, status: str, body: dict[str, Any], problem: str
) -> None:
    (model,) = _frames(_request(), [Complete({})])
    error = await _failure([dataclasses.replace(model, response_kind=kind, status=status, body=body)])
    assert error.code == ErrorCode.BACKEND_INVALID_OUTPUT
    assert problem in error.message


@pytest.mark.asyncio
async def test_the_agents_ids_are_reported_once_when_a_frame_first_carries_them() -> None:
    request = _request()
    upstream_events: list[Event] = [
        Delta(DeltaKind.TEXT, "a"),
        AgentIds("task-1", None),
        Delta(DeltaKind.TEXT, "b"),
        AgentIds(None, "ctx-1"),
        Delta(DeltaKind.TEXT, "c"),
        Complete({}),
    ]
    frames = _frames(request, upstream_events)
    events = await _relayed(request, frames)
    assert events == upstream_events
