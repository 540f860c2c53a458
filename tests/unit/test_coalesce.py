"""Merging the deltas that waited in an ``EventInbox`` (``e2a_grpc.chat.coalesce``): properties over any
sequence of events, and the inbox as its consumer sees it."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.chat.coalesce import MERGEABLE_KINDS, EventInbox, take_coalesced
from e2a_grpc.chat.events import AgentIds, Complete, Delta, Event, Passthrough
from e2a_grpc.model import DeltaKind

#: Not empty, so that the test can tell which deltas a merged one is made of (empty ones: see below).
_texts = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from(["é", "🌍", "\ud800"]), min_size=1, max_size=12
)
_events: st.SearchStrategy[Event] = st.one_of(
    st.builds(Delta, st.sampled_from(sorted(MERGEABLE_KINDS)), _texts),
    st.builds(Delta, st.sampled_from(sorted(MERGEABLE_KINDS)), _texts, st.just("text/markdown")),
    st.builds(Delta, st.just(DeltaKind.TOOL), st.fixed_dictionaries({"toolCallId": st.text(max_size=3)})),
    st.builds(Delta, st.just(DeltaKind.CUSTOM), st.lists(st.integers(), max_size=2)),
    st.builds(Passthrough, st.just("acp.session_update"), st.just({"update": {}})),
    st.builds(AgentIds, st.just("task"), st.none()),
)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _mergeable(event: Event) -> bool:
    return (
        isinstance(event, Delta)
        and event.delta_kind in MERGEABLE_KINDS
        and event.mime_type is None
        and isinstance(event.delta, str)
    )


def _drain(events: list[Event], max_bytes: int) -> list[Event]:
    waiting = deque(events)
    taken = []
    while waiting:
        taken.append(take_coalesced(waiting, max_bytes))
    return taken


@given(st.lists(_events, max_size=30), st.integers(min_value=0, max_value=40))
def test_merged_deltas_are_runs_of_one_kind_within_the_bound_and_nothing_else_moves(
    events: list[Event], max_bytes: int
) -> None:
    taken = _drain(events, max_bytes)
    remaining = deque(events)
    for index, out in enumerate(taken):
        first = remaining.popleft()
        if not _mergeable(first):
            assert out is first  # passed on as it is, in its place
            continue
        assert isinstance(out, Delta) and isinstance(first, Delta) and isinstance(out.delta, str)
        assert (out.delta_kind, out.mime_type) == (first.delta_kind, None)
        run = [first]
        while len("".join(str(event.delta) for event in run)) < len(out.delta):
            following = remaining.popleft()
            assert _mergeable(following) and isinstance(following, Delta)
            assert following.delta_kind == first.delta_kind  # never across kinds
            run.append(following)
        assert "".join(str(event.delta) for event in run) == out.delta  # the concatenation rule
        if len(run) > 1:
            assert _size(out.delta) <= max_bytes
        # Greedy: the next delta of the kind did not fit (or something else came first).
        if remaining and _mergeable(remaining[0]) and index + 1 < len(taken):
            following = remaining[0]
            assert isinstance(following, Delta) and isinstance(following.delta, str)
            if following.delta_kind == first.delta_kind and max_bytes:
                assert _size(out.delta) + _size(following.delta) > max_bytes
    assert not remaining


@given(st.lists(_events, max_size=30))
def test_a_bound_of_zero_merges_nothing(events: list[Event]) -> None:
    taken = _drain(events, 0)
    assert len(taken) == len(events) and all(out is event for out, event in zip(taken, events, strict=True))


def test_a_single_delta_over_the_bound_goes_out_whole_and_alone() -> None:
    big = Delta(DeltaKind.TEXT, "x" * 50)
    assert _drain([Delta(DeltaKind.TEXT, "a"), big, Delta(DeltaKind.TEXT, "b")], 10) == [
        Delta(DeltaKind.TEXT, "a"), big, Delta(DeltaKind.TEXT, "b"),
    ]  # fmt: skip


def test_empty_deltas_merge_too() -> None:
    empty = Delta(DeltaKind.TEXT, "")
    assert _drain([empty, Delta(DeltaKind.TEXT, "a"), empty], 1) == [Delta(DeltaKind.TEXT, "a")]


@pytest.mark.asyncio
async def test_the_inbox_hands_over_what_waited_merged_and_ends_once_closed() -> None:
    inbox = EventInbox(max_coalesced_bytes=1024)
    taker = asyncio.create_task(anext(inbox))
    await asyncio.sleep(0)  # the taker now waits on the empty inbox
    assert not taker.done()
    inbox.put(Delta(DeltaKind.TEXT, "first"))
    assert await taker == Delta(DeltaKind.TEXT, "first")  # alone: it was waited for
    for piece in ("a", "b", "c"):
        inbox.put(Delta(DeltaKind.TEXT, piece))
    inbox.put(Complete({"content": "firstabc"}))
    inbox.close()
    inbox.put(Delta(DeltaKind.TEXT, "late"))  # after close: dropped
    assert [event async for event in inbox] == [Delta(DeltaKind.TEXT, "abc"), Complete({"content": "firstabc"})]


@pytest.mark.asyncio
async def test_closing_wakes_a_waiting_taker() -> None:
    inbox = EventInbox(max_coalesced_bytes=1024)
    taker = asyncio.create_task(anext(inbox))
    await asyncio.sleep(0)
    inbox.close()
    with pytest.raises(StopAsyncIteration):
        await taker
