"""What a Chat backend produces: the events of one agent turn, and the interface every backend has.

A backend turns one request envelope into a stream of events; the Chat servicer turns those into
E2AResponse frames with the section 12 invariants (sequence, ids, final frame), so no backend has
to know about frames. Cancellation reaches a backend as ``asyncio.CancelledError`` at its current
``await``: its ``finally`` blocks must release what the request holds (processes, HTTP streams).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Protocol

from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.model import DeltaKind, E2AEnvelope, ErrorCode, WaitReason


@dataclass(slots=True)
class Delta:
    """Part of the answer: becomes an ``e2a.chunk`` frame."""

    delta_kind: DeltaKind
    delta: str | dict[str, Any] | list[Any]
    mime_type: str | None = None


@dataclass(frozen=True)
class Passthrough:
    """A protocol-specific record (``acp.session_update``, ``a2a.stream_event``) passed on as a frame."""

    response_kind: str  # a ResponseKind, or a kind this version does not know
    body: dict[str, Any]
    #: The agent's own message ``body`` is the JSON of (the a2a backend's SDK ``StreamResponse``), for
    #: an output that speaks the agent's protocol: it need not read the body back. Not to be changed.
    native: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Complete:
    """The answer is complete: becomes the final ``e2a.complete`` frame with ``body.result``."""

    result: dict[str, Any]


@dataclass(frozen=True)
class InputRequired:
    """The agent asks the client something and waits: becomes the final ``e2a.input_required`` frame.

    The turn is over but its task is not: a later request with the frame's ``task_id`` (and the same
    session) answers and continues it (docs/wire-json.md, "Waiting turns").
    """

    reason: WaitReason
    #: The question, for a person.
    message: str
    #: What the turn answered before it stopped to ask (as ``Complete.result``).
    result: dict[str, Any]
    #: The question as the agent's protocol put it, for a program (e.g. the A2A status message).
    request: dict[str, Any] | None = None
    #: What the client may choose from (``option_id``, ``name``, ``kind``); an answer names one.
    options: tuple[dict[str, Any], ...] = ()

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"reason": self.reason, "message": self.message, "result": self.result}
        if self.request is not None:
            body["request"] = self.request
        if self.options:
            body["options"] = list(self.options)
        return body


@dataclass(frozen=True)
class AgentIds:
    """The agent named its task or context (an A2A task id / context id): no frame of its own; the
    frames that follow carry them where the request set none (rule in ``e2a_grpc.chat.frames``)."""

    task_id: str | None
    context_id: str | None


Event = Delta | Passthrough | Complete | InputRequired | AgentIds


class BackendError(Exception):
    """The agent failed: becomes the final ``e2a.error`` frame (``code``, ``message``, ``details``).

    ``code``: one of ours, an agent's integer JSON-RPC code, or (relayed from another E2A service,
    ``chat.relay``) a code that service wrote and this version may not know.
    """

    def __init__(
        self,
        code: ErrorCode | str | int,
        message: str,
        details: dict[str, Any] | None = None,
        external: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.external = external


@dataclass
class BackendInfo:
    """What frames produced by a backend say about their origin (``provenance``)."""

    name: str
    source_protocol: str
    details: dict[str, Any] = field(default_factory=dict)


class TurnsNeverWait:
    """Mixed into a backend whose turns never end waiting for the client (no ``InputRequired``)."""

    async def cancel_task(self, task_id: str) -> bool:
        return False  # no task of its agent waits, so none is left to cancel


class AgentBackend(Protocol):
    info: BackendInfo

    def stream(self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True) -> AsyncGenerator[Event, None]:
        """Events for one request, ending with ``Complete`` or ``InputRequired`` (or raising ``BackendError``).

        ``prompt`` is the envelope's, as the caller read it (``chat.prompt.read_prompt``): the one
        every backend sends, read once per request.

        ``incremental`` false: the caller waits for the answer, not its progress (an A2A blocking
        send), so a backend that calls a remote agent may ask it for the answer alone; the events
        then say what that answer holds. Local backends stream as they always do.
        """
        ...

    async def cancel_task(self, task_id: str) -> bool:
        """Cancel a task of the agent that waits for the client (the ``task_id`` of an ``InputRequired``
        turn's frames): true once it is cancelled, false when no task waits under that id (it ended,
        was answered, timed out, or never was; a backend whose turns never wait has none). Raises
        ``BackendError`` (only) when the agent could not be asked or refused."""
        ...

    async def aclose(self) -> None:
        """Release everything the backend keeps between requests (server shutdown)."""
        ...


def publishes_its_frames(backend: AgentBackend) -> bool:
    """Whether a backend's turns' frames are on the broker already (a worker on the bus wrote them; the
    backend says so with a true ``publishes_frames`` attribute): the Chat servicer's frame sink
    (``serve --publish-nats``) does not publish them again. Read with ``getattr``: a
    runtime-checkable Protocol's ``isinstance`` costs some 10 µs on every Chat call."""
    return getattr(backend, "publishes_frames", False) is True
