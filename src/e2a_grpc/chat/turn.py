"""One agent turn: a backend's events through the ``FrameBuilder``, one frame written at a time, under
the server's limits, ending with exactly one final frame however the turn ends.

The Chat servicer writes the frames to its gRPC call; the A2A server projects them onto its task's
event queue. Both drive the turn here, so which event makes which frame, when the stream ends and
which ``e2a.error`` ends it are decided in one place; where a frame goes is the ``FrameOutput``'s.

A limit is a policy of the server, not a fault of the request, so it ends the turn with an
``e2a.error`` frame as any agent error does: a prompt over ``max_prompt_bytes`` gets that frame alone
(``prompt_too_large``) and never reaches the backend; a turn that reaches ``max_frames`` or runs longer
than ``max_seconds`` has its backend stopped (generator closed, or cancelled at its await) and ends with
``stream_frame_limit`` / ``stream_time_limit``. Something outside the turn may end it the same way
(``Turn.interrupt``: the server shutting down).

A write cannot be interrupted by another (the final frame cannot start while a frame is being
written), so nothing cancels the turn while it writes: an interruption then takes effect once the
write is done. Only a write still pending ``stall_grace`` seconds after the time limit (the final
frame's too, when the limit came while the turn waited on its backend) is cancelled: its reader took
nothing for that long, no final frame could reach it, and the turn ends with ``TurnStalled`` instead
of a frame. Any other cancellation (the client went away) ends the turn with no further frame.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from e2a_grpc.chat.events import AgentIds, BackendError, Complete, Delta, Event, InputRequired
from e2a_grpc.chat.frames import FrameBuilder
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.chat.timers import TURN_TIMERS, OffLoopTimer
from e2a_grpc.errors import AgentUnavailableError, E2AFieldError
from e2a_grpc.model import ErrorCode
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """The bounds on the work of one turn (``ServerSettings.chat_max_*``)."""

    max_prompt_bytes: int
    max_frames: int
    max_seconds: float

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> TurnLimits:
        return cls(settings.chat_max_prompt_bytes, settings.chat_max_frames, settings.chat_max_stream_seconds)

    def time_limit_message(self) -> str:
        return f"the stream ran longer than this server's limit of {self.max_seconds:g} s; the agent was stopped"


@dataclass(frozen=True, slots=True)
class Interruption:
    """Why a turn ends early: the code, message and details of its final ``e2a.error`` frame."""

    code: ErrorCode
    message: str
    details: dict[str, Any]


class FrameOutput(Protocol):
    """Where the frames of a turn go."""

    async def write(self, frame: bytes, kind: str, event: Event | None) -> None:
        """Write one frame (a serialized ``ChatResponse``; ``kind``: its response_kind), the final one
        last; ``event``: the backend event it was made of (``None``: a final frame of this server's, an
        error or an interruption), for an output that speaks another protocol and would otherwise read
        the frame back. A write that fails because the reader is gone raises ``asyncio.CancelledError``."""


class TurnStalled(Exception):
    """The reader took no frame until ``stall_grace`` seconds after the time limit: no frame can follow."""


class Turn:
    """One running turn, as the limits and the server's shutdown see it.

    ``writing`` and the interruption are plain attributes, so the per-frame path stays a flag check:
    one timer per turn (``limit_time``), not one per event, and off the event loop's timer heap
    (``e2a_grpc.chat.timers``).
    """

    __slots__ = ("_timers", "backend_error", "final_code", "interruption", "limit_hit", "stalled", "task", "writing")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        #: The task that runs the turn: cancelled to stop the backend at its current await.
        self.task = task
        self.writing = False
        #: Set once the turn must end early; the final frame says why.
        self.interruption: Interruption | None = None
        #: The write pending since the time limit was cancelled (``TurnStalled``).
        self.stalled = False
        #: Once the final frame is written: "ok", or the code of its e2a.error.
        self.final_code: str | None = None
        #: The limit that ended the turn, if one did (for the metrics).
        self.limit_hit: ErrorCode | None = None
        #: The code of the backend's error that ended the turn, if one did (for the metrics).
        self.backend_error: ErrorCode | str | int | None = None
        self._timers: list[asyncio.TimerHandle | OffLoopTimer] = []

    def interrupt(self, interruption: Interruption, stall_grace: float | None = None) -> None:
        """End the turn with ``interruption``'s frame: at once when it waits on its backend, after the
        write in progress otherwise; a write still pending ``stall_grace`` seconds later is cancelled.
        The first interruption is the one the final frame names."""
        if self.interruption is None:
            self.interruption = interruption
        if not self.writing:
            self.task.cancel()
        # Also when the turn waits on its backend: its final frame's write may stall in turn.
        if stall_grace is not None:
            self._timers.append(asyncio.get_running_loop().call_later(stall_grace, self._on_stalled))

    def limit_time(self, limits: TurnLimits, stall_grace: float | None = None) -> None:
        """Interrupt the turn once it has run ``limits.max_seconds``."""
        interruption = Interruption(
            ErrorCode.STREAM_TIME_LIMIT, limits.time_limit_message(), {"max_stream_seconds": limits.max_seconds}
        )
        self._timers.append(TURN_TIMERS.call_later(limits.max_seconds, self.interrupt, interruption, stall_grace))

    def _on_stalled(self) -> None:
        if self.writing:
            self.stalled = True
            self.task.cancel()

    def cancel_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()


async def run_turn(
    turn: Turn,
    prompt: Prompt,
    events: AsyncIterator[Event],
    frames: FrameBuilder,
    output: FrameOutput,
    limits: TurnLimits,
    *,
    unavailable_as_status: bool = False,
) -> None:
    """Write a frame per backend event to ``output``, then the final frame however the turn ends.

    ``unavailable_as_status``: an ``AgentUnavailableError`` before the first frame is raised, for the
    caller to end its call with a status a client retries (Chat's UNAVAILABLE), not a frame; after a
    frame, and without the flag, it ends the turn with an ``agent_unavailable`` frame.

    The agent's task / context ids go on the frames where the request set none
    (``FrameBuilder.adopt_agent_ids``). The caller closes ``events``. Raises
    ``asyncio.CancelledError`` when the turn was cancelled from outside (no final frame), and
    ``TurnStalled`` (see ``Turn``).
    """
    try:
        prompt_bytes = prompt.size_bytes
        if prompt_bytes > limits.max_prompt_bytes:
            raise _LimitReached(
                ErrorCode.PROMPT_TOO_LARGE,
                f"the prompt has {prompt_bytes} bytes; this server takes at most {limits.max_prompt_bytes}",
                {"prompt_bytes": prompt_bytes, "max_prompt_bytes": limits.max_prompt_bytes},
            )
        last_sequence = limits.max_frames - 1  # the last frame the limit allows is the final one
        async for event in events:
            if type(event) is Delta:  # most frames: straight to their builder
                if frames.sequence >= last_sequence:
                    raise _frame_limit(limits)
                frame = frames.delta(event)
            elif isinstance(event, AgentIds):
                frames.adopt_agent_ids(event)
                continue
            else:
                if frames.sequence >= last_sequence and not isinstance(event, Complete | InputRequired):
                    raise _frame_limit(limits)
                frame = frames.for_event(event)
            turn.writing = True
            await output.write(frame, frames.last_kind, event)
            turn.writing = False
            if frames.finished:
                turn.final_code = frames.final_code
                return
            if turn.interruption is not None:  # it came during the write: only a wait on the backend is cancelled
                final = _interrupted(turn, frames)
                break
        else:
            final = frames.error(ErrorCode.BACKEND_INCOMPLETE, "the agent ended the stream without a result")
    except BackendError as exc:
        turn.backend_error = exc.code
        final = frames.error(exc.code, exc.message, exc.details, exc.external)
    except AgentUnavailableError as exc:
        if unavailable_as_status and frames.sequence == 0:
            raise
        turn.backend_error = ErrorCode.AGENT_UNAVAILABLE
        final = frames.error(ErrorCode.AGENT_UNAVAILABLE, str(exc), {"agent_id": exc.agent_id, "reason": exc.reason})
    except _LimitReached as hit:
        turn.limit_hit = hit.interruption.code
        final = frames.error(hit.interruption.code, hit.interruption.message, hit.interruption.details)
    except asyncio.CancelledError:
        if turn.stalled:
            raise TurnStalled from None  # no frame can follow the one it did not take
        if frames.finished or turn.writing or turn.interruption is None:
            raise  # cancelled from outside: nothing more to write
        final = _interrupted(turn, frames)
    except E2AFieldError as exc:
        log.warning("backend produced an invalid event for request %s: %s", frames.request_id, exc)
        final = frames.error(ErrorCode.BACKEND_INVALID_OUTPUT, str(exc))
    except Exception:
        log.exception("backend %s failed on request %s", frames.backend_name, frames.request_id)
        final = frames.error(ErrorCode.INTERNAL, "the agent backend failed; see the server log")
    turn.writing = True
    try:
        await output.write(final, frames.last_kind, None)
    except asyncio.CancelledError:
        if turn.stalled:
            raise TurnStalled from None
        raise
    turn.final_code = frames.final_code


def _frame_limit(limits: TurnLimits) -> _LimitReached:
    return _LimitReached(
        ErrorCode.STREAM_FRAME_LIMIT,
        f"the stream reached this server's limit of {limits.max_frames} frames; the agent was stopped",
        {"max_frames": limits.max_frames},
    )


def _interrupted(turn: Turn, frames: FrameBuilder) -> bytes:
    interruption = turn.interruption
    assert interruption is not None
    if interruption.code is ErrorCode.STREAM_TIME_LIMIT:
        turn.limit_hit = interruption.code
    return frames.error(interruption.code, interruption.message, interruption.details)


class _LimitReached(Exception):
    """A limit on the work of the turn was hit: becomes the final ``e2a.error`` frame."""

    def __init__(self, code: ErrorCode, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.interruption = Interruption(code, message, details)
