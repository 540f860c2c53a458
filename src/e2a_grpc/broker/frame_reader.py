"""The frame messages of one request read back in order: the fast form of ``frame_messages.read_frame``.

``read_frame`` is the general mapping: the CloudEvent read from the message's ``ce-*`` headers (each
percent-decoded, the event's attributes checked), its data read into an ``E2AResponse``, and the record
checked against the event's ``a2amethod``, ``collaborationid`` and ``seq``. A gateway reads every frame of a
request that way, yet the frames of one stream differ in a few headers only: those of a frame's own
fields (``ce-id``, ``ce-time``, ``ce-seq``) and ``Nats-Msg-Id``, which the mapping does not read.

``FrameReader`` reads a stream's frames with the general mapping until one succeeds, and keeps that
message's headers. A later message whose other headers are exactly those, whose own ones need no
decoding, and whose data is a record in canonical form (``E2AResponse.from_canonical_json``) that
names the same method and request, is read from those alone: what the general mapping checks of the
headers it kept is already checked, and what it would check of the rest is checked here. Anything else
takes the general mapping, which also says what is wrong, and whose headers are kept from then on.
tests/unit/test_frame_reader.py checks the two agree on generated frames and their corruptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from e2a_grpc.broker.frame_messages import MSG_ID_HEADER, read_frame
from e2a_grpc.model import E2AResponse
from e2a_grpc.protocols.cloudevents import Extension, is_time

_ID_HEADER: Final = "ce-id"
_TIME_HEADER: Final = "ce-time"
_SEQ_HEADER: Final = "ce-" + Extension.SEQ
#: The headers each frame of a stream has its own values of: its own fields', and its message id.
FRAME_HEADERS: Final = frozenset({_ID_HEADER, _TIME_HEADER, _SEQ_HEADER, MSG_ID_HEADER})


class FrameReader:
    """Reads the frame messages of one stream (``read``), keeping what its frames share."""

    __slots__ = ("_own_headers", "_record", "_shared_headers", "_size")

    def __init__(self) -> None:
        #: The last frame the general mapping read; of its message's headers, those the frames of its
        #: stream share (all but ``FRAME_HEADERS``), and which of ``FRAME_HEADERS`` it has.
        self._record: E2AResponse | None = None
        self._shared_headers: tuple[tuple[str, str], ...] = ()
        self._own_headers: frozenset[str] = frozenset()
        self._size = 0

    def read(self, headers: Mapping[str, str], payload: bytes) -> E2AResponse:
        """The frame a message carries; raises as ``read_frame`` does."""
        record = self._record
        if record is not None and len(headers) == self._size:
            frame = self._read_kept(record, headers, payload)
            if frame is not None:
                return frame
        frame = read_frame(headers, payload)
        self._keep(frame, headers)
        return frame

    def _read_kept(self, kept: E2AResponse, headers: Mapping[str, str], payload: bytes) -> E2AResponse | None:
        """The frame, when its message differs from the kept one's in its own headers alone (see
        the module docstring); None for any other."""
        for name, value in self._shared_headers:
            if headers.get(name) != value:
                return None
        # With as many headers in all, the same own ones leave room for no other.
        if not all(name in headers for name in self._own_headers):
            return None
        event_id = headers.get(_ID_HEADER)
        if not event_id or "%" in event_id:
            return None  # no id (an error the general mapping names), or one to decode
        time = headers.get(_TIME_HEADER)
        if time is not None and ("%" in time or not is_time(time)):
            return None
        try:
            text = payload.decode()
        except UnicodeDecodeError:
            return None
        frame = E2AResponse.from_canonical_json(text)
        if frame is None or frame.method != kept.method or frame.request_id != kept.request_id:
            return None
        sequence = headers.get(_SEQ_HEADER)
        if sequence is not None and sequence != str(frame.sequence):
            return None
        return frame

    def _keep(self, frame: E2AResponse, headers: Mapping[str, str]) -> None:
        self._record = frame
        self._size = len(headers)
        self._own_headers = FRAME_HEADERS.intersection(headers)
        # Every other header, those the general mapping does not read included: then a message with
        # these, the same own ones, and as many in all, has the same headers.
        self._shared_headers = tuple((name, value) for name, value in headers.items() if name not in FRAME_HEADERS)
