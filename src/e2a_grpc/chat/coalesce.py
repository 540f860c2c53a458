"""Where a backend puts the events its agent sends as they arrive, and where text deltas that piled up
behind a slow client are merged into one.

The Chat servicer asks a backend for its next event only once the previous frame is written, so a
backend that *pulls* its answer (the echo backend) is simply held back by a client that reads slowly
(HTTP/2 flow control): nothing piles up, and each event is one frame. An agent that *pushes* (an ACP
agent's ``session/update`` notifications) does not wait for the client: its events are put in an
``EventInbox`` as they arrive and wait there while a write is in flight. When the servicer asks again,
the inbox hands it the first waiting event and, when that is a string delta, the deltas of the same
kind waiting right behind it, joined, up to ``max_coalesced_bytes`` of UTF-8: one frame instead of
many. When the client keeps up, the servicer is already waiting when an event arrives and gets it
alone, at once.

Merging keeps spec section 12's concatenation rule: the deltas of a kind, concatenated, are the same
text before and after. Only ``text`` and ``reasoning`` deltas whose ``delta`` is a string and that
have no ``mime_type`` merge, each only with its own kind, and never past an event of another kind:
tool calls, custom deltas, passthrough records, agent ids and the result stay where they were.
"""

from __future__ import annotations

import asyncio
from collections import deque

from e2a_grpc.chat.events import Delta, Event
from e2a_grpc.model import DeltaKind

#: The delta kinds whose deltas are pieces of one string, so two in a row can be one.
MERGEABLE_KINDS = frozenset({DeltaKind.TEXT, DeltaKind.REASONING})


def _mergeable(event: Event) -> tuple[DeltaKind, str] | None:
    """The kind and text of a delta that may merge with its neighbours of the same kind, else None."""
    if (
        isinstance(event, Delta)
        and event.delta_kind in MERGEABLE_KINDS
        and event.mime_type is None
        and isinstance(event.delta, str)
    ):
        return event.delta_kind, event.delta
    return None


def _utf8_size(text: str) -> int:
    # surrogatepass: a lone surrogate is counted, not an error (the frame escapes it later).
    return len(text.encode("utf-8", "surrogatepass"))


def take_coalesced(waiting: deque[Event], max_coalesced_bytes: int) -> Event:
    """Remove and return the first of ``waiting`` (not empty), merged with the deltas of its kind that
    follow it, as long as the merged text stays within ``max_coalesced_bytes`` (a single bigger delta
    is passed on as it is; 0 merges nothing)."""
    first = waiting.popleft()
    if not waiting or not max_coalesced_bytes:
        return first
    mergeable = _mergeable(first)
    if mergeable is None:
        return first
    kind, text = mergeable
    size = _utf8_size(text)
    pieces = [text]
    while waiting:
        following = _mergeable(waiting[0])
        if following is None or following[0] != kind:
            break
        following_size = _utf8_size(following[1])
        if size + following_size > max_coalesced_bytes:
            break
        waiting.popleft()
        size += following_size
        pieces.append(following[1])
    return first if len(pieces) == 1 else Delta(kind, "".join(pieces))


class EventInbox:
    """Events an agent pushed, for one turn; iterate it (once) to take them, merged as described above.

    ``put`` and ``close`` are plain calls, for the callbacks that receive the agent's messages; both
    run on the event loop's thread.
    """

    def __init__(self, max_coalesced_bytes: int) -> None:
        self._max_coalesced_bytes = max_coalesced_bytes
        self._waiting: deque[Event] = deque()
        self._closed = False
        self._wakeup: asyncio.Future[None] | None = None

    def put(self, event: Event) -> None:
        """Queue an event; one put after ``close`` is dropped (the turn is over, nobody reads it)."""
        if not self._closed:
            self._waiting.append(event)
            self._wake()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """No more events: iteration ends once the waiting ones are taken."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def __aiter__(self) -> EventInbox:
        return self

    async def __anext__(self) -> Event:
        while not self._waiting:
            if self._closed:
                raise StopAsyncIteration
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None
        return take_coalesced(self._waiting, self._max_coalesced_bytes)
