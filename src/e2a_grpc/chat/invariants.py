"""The invariants of an E2A stream (spec section 12), checked frame by frame as a client receives them."""

from __future__ import annotations

import re

from e2a_grpc.model import E2AEnvelope, E2AResponse, ResponseKind, ResponseStatus

_RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$")
#: Request fields every frame echoes (spec 12.4).
ECHOED_FIELDS = (
    "jsonrpc_id", "correlation_id", "task_id", "context_id", "session_id", "message_id", "is_stream",
    "channel", "user_id", "agent_ref", "source_agent_id", "method",
)  # fmt: skip
#: Echoed fields the agent may fill in when the request left them unset (rule in ``e2a_grpc.chat.frames``).
AGENT_ID_FIELDS = ("task_id", "context_id")


class StreamInvariantError(Exception):
    """A Chat stream broke an invariant of spec section 12."""


class StreamChecker:
    """Feed it each frame of one stream in order; ``finish()`` when the stream ends."""

    def __init__(self, envelope: E2AEnvelope) -> None:
        self._envelope = envelope
        self._request_id = envelope.request_id
        self._next_sequence = 0
        self._response_ids: set[str] = set()
        # The agent's ids, once a frame carried them, for the fields the request left unset.
        self._agent_ids: dict[str, str | None] = {
            name: None for name in AGENT_ID_FIELDS if getattr(envelope, name) is None
        }
        self.final: E2AResponse | None = None

    def _fail(self, frame: E2AResponse, problem: str) -> None:
        raise StreamInvariantError(f"frame {frame.sequence} ({frame.response_kind}): {problem}")

    def check(self, frame: E2AResponse) -> None:
        if self.final is not None:
            self._fail(frame, "a frame after the final frame")
        if self._request_id is None:  # the server assigns one; it must then stay the same
            self._request_id = frame.request_id
        if not frame.request_id or frame.request_id != self._request_id:
            self._fail(frame, f"request_id {frame.request_id!r}, expected {self._request_id!r}")
        if frame.sequence != self._next_sequence:
            self._fail(frame, f"sequence {frame.sequence}, expected {self._next_sequence}")
        self._next_sequence += 1
        if not frame.response_id or frame.response_id in self._response_ids:
            self._fail(frame, f"response_id {frame.response_id!r} missing or repeated")
        else:
            self._response_ids.add(frame.response_id)
        if not isinstance(frame.timestamp, str) or not _RFC3339_UTC.match(frame.timestamp):
            self._fail(frame, f"timestamp {frame.timestamp!r} is not RFC 3339 UTC")
        if not frame.provenance.source_protocol:
            self._fail(frame, "provenance.source_protocol is not set")
        for name in ECHOED_FIELDS:
            if name in self._agent_ids:
                self._check_agent_id(frame, name)
            elif getattr(frame, name) != getattr(self._envelope, name):
                self._fail(frame, f"{name} {getattr(frame, name)!r} does not echo the request's")
        if not frame.is_final:
            if frame.status != ResponseStatus.IN_PROGRESS:
                self._fail(frame, f"a non-final frame has status {frame.status!r}")
            return
        self.final = frame
        if frame.status == ResponseStatus.FAILED:
            if frame.response_kind != ResponseKind.E2A_ERROR:
                self._fail(frame, "a failed final frame must be e2a.error")
            if not {"code", "message", "details"} <= frame.body.keys():
                self._fail(frame, "an e2a.error body has code, message and details")
        elif frame.response_kind == ResponseKind.E2A_INPUT_REQUIRED:
            # The turn waits for the client; its task goes on in a later request.
            if frame.status != ResponseStatus.IN_PROGRESS:
                self._fail(frame, f"a waiting final frame has status {frame.status!r}, expected in_progress")
            if not {"reason", "message", "result"} <= frame.body.keys():
                self._fail(frame, "an e2a.input_required body has reason, message and result")
        elif frame.status != ResponseStatus.SUCCEEDED:
            self._fail(frame, f"the final frame has status {frame.status!r}")

    def _check_agent_id(self, frame: E2AResponse, name: str) -> None:
        """Unset until the agent names it; from then on, on every frame and always the same."""
        value = getattr(frame, name)
        known = self._agent_ids[name]
        if known is None:
            if value is not None and not value:
                self._fail(frame, f"{name} is empty")
            self._agent_ids[name] = value
        elif value != known:
            self._fail(frame, f"{name} {value!r}, but an earlier frame carried the agent's {known!r}")

    def finish(self) -> E2AResponse:
        if self.final is None:
            raise StreamInvariantError(f"the stream ended after {self._next_sequence} frames without a final frame")
        return self.final
