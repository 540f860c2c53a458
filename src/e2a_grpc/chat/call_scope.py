"""What a turn that calls another E2A service carries on from the call it serves.

A route to an upstream (``backends.upstream``) sends the request on with the caller's deadline, its
trace context and the request id the caller's frames carry. The backend interface takes the envelope
and the prompt only, so the Chat servicer sets the scope of its call here (a context variable: the
backend's generator runs in the call's task) and the route reads it. A turn without one (the A2A
front door) has no deadline but its turn's time limit, and no trace to continue.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass

#: gRPC metadata keys of the W3C trace context, carried on to an upstream.
TRACE_METADATA_KEYS = ("traceparent", "tracestate")


@dataclass(frozen=True, slots=True)
class CallScope:
    """The call a turn serves, as an upstream call continues it."""

    #: The request id of the caller's frames (the request's, or the one the server assigned).
    request_id: str
    #: ``time.monotonic()`` when the caller's deadline passes; ``None``: the caller set none.
    deadline: float | None
    #: The trace context to send on (``traceparent``, ``tracestate``), as gRPC metadata.
    trace_metadata: tuple[tuple[str, str], ...] = ()

    def time_remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


CURRENT_CALL: ContextVar[CallScope | None] = ContextVar("e2a_call_scope", default=None)
