"""Rebuilding Chat streams from frames that a broker may deliver twice or out of order.

Frames are released in ``sequence`` order, each checked against the invariants of spec section 12
(``StreamChecker``) as it is released; a redelivered frame (same sequence, same ``response_id``) is
dropped, a different frame with a sequence already seen is an invariant violation. A stream is
complete once its final frame is released.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from e2a_grpc.chat.invariants import ECHOED_FIELDS, StreamChecker, StreamInvariantError
from e2a_grpc.model import E2AEnvelope, E2AResponse

#: Finished streams remembered to drop their late redeliveries.
REMEMBERED_FINISHED_STREAMS = 10_000


@dataclass
class _Stream:
    next_sequence: int = 0
    waiting: dict[int, E2AResponse] = field(default_factory=dict)
    released: dict[int, str | None] = field(default_factory=dict)  # sequence -> response_id
    checker: StreamChecker | None = None


def _request_of(first: E2AResponse) -> E2AEnvelope:
    """The request as its first frame echoes it (spec 12.4), for the checker of the rest."""
    echoed = {name: getattr(first, name) for name in ECHOED_FIELDS}
    return E2AEnvelope(request_id=first.request_id, **echoed)


class StreamAssembler:
    """Feed it frames as they arrive (``add``); it gives back the frames now in order, checked."""

    def __init__(self, max_waiting_frames: int = 100_000) -> None:
        self._streams: dict[str, _Stream] = {}
        #: The request ids of the last ``REMEMBERED_FINISHED_STREAMS`` finished streams, oldest first.
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._max_waiting = max_waiting_frames
        #: How many streams have finished (a reader that runs for ever keeps no list of them).
        self.finished_count = 0

    def add(self, frame: E2AResponse) -> list[E2AResponse]:
        request_id = frame.request_id
        if not request_id:
            raise StreamInvariantError(f"frame {frame.sequence} ({frame.response_kind}): no request_id")
        if request_id in self._finished:
            return []  # a redelivery of a stream already complete
        stream = self._streams.setdefault(request_id, _Stream())
        if frame.sequence in stream.released or frame.sequence in stream.waiting:
            seen = stream.released.get(frame.sequence) or stream.waiting[frame.sequence].response_id
            if seen != frame.response_id:
                raise StreamInvariantError(
                    f"request {request_id}: two frames with sequence {frame.sequence} "
                    f"(response_id {seen!r} and {frame.response_id!r})"
                )
            return []  # redelivered
        if frame.sequence < stream.next_sequence:
            raise StreamInvariantError(f"request {request_id}: sequence {frame.sequence} after it was released")
        if len(stream.waiting) >= self._max_waiting:
            raise StreamInvariantError(f"request {request_id}: more than {self._max_waiting} frames out of order")
        stream.waiting[frame.sequence] = frame
        ready = []
        while stream.next_sequence in stream.waiting:
            next_frame = stream.waiting.pop(stream.next_sequence)
            if stream.checker is None:
                stream.checker = StreamChecker(_request_of(next_frame))
            stream.checker.check(next_frame)
            stream.released[next_frame.sequence] = next_frame.response_id
            stream.next_sequence += 1
            ready.append(next_frame)
            if stream.checker.final is not None:
                if stream.waiting:
                    raise StreamInvariantError(
                        f"request {request_id}: frames {sorted(stream.waiting)} after the final frame"
                    )
                self._finish(request_id)
                break
        return ready

    def _finish(self, request_id: str) -> None:
        del self._streams[request_id]
        self._finished[request_id] = None
        if len(self._finished) > REMEMBERED_FINISHED_STREAMS:
            self._finished.popitem(last=False)
        self.finished_count += 1

    @property
    def finished(self) -> list[str]:
        """The request ids of the streams that finished last (up to ``REMEMBERED_FINISHED_STREAMS``), oldest first."""
        return list(self._finished)
