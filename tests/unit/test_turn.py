"""``run_turn``: the one turn loop of the Chat servicer and the A2A server, driven here by scripted
backends and an output that keeps the frames (the servicers' own tests drive it over the network)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.chat.events import AgentIds, BackendError, BackendInfo, Complete, Delta, Event, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.chat.prompt import read_prompt
from e2a_grpc.chat.turn import Interruption, Turn, TurnLimits, TurnStalled, run_turn
from e2a_grpc.model import DeltaKind, ErrorCode

LIMITS = TurnLimits(max_prompt_bytes=1000, max_frames=5, max_seconds=30.0)
pytestmark = pytest.mark.asyncio

ENVELOPE = E2AEnvelope(method="chat.send", params={"text": "hi"}, request_id="r1")


class Frames:
    """A ``FrameOutput`` that keeps each frame, parsed, with the kind it was written as."""

    def __init__(self) -> None:
        self.written: list[tuple[E2AResponse, str]] = []

    async def write(self, frame: bytes, kind: str, event: Event | None) -> None:
        self.written.append((E2AResponse.from_proto(pb.ChatResponse.FromString(frame).response), kind))


async def _script(*items: Event | Exception) -> AsyncGenerator[Event, None]:
    for item in items:
        if isinstance(item, Exception):
            raise item
        yield item


async def _run(
    *items: Event | Exception, envelope: E2AEnvelope = ENVELOPE, limits: TurnLimits = LIMITS
) -> tuple[Turn, list[E2AResponse]]:
    task = asyncio.current_task()
    assert task is not None
    turn, output = Turn(task), Frames()
    frames = FrameBuilder(envelope, BackendInfo("script", "e2a"), UtcClock())
    await run_turn(turn, read_prompt(envelope), _script(*items), frames, output, limits)
    checker = StreamChecker(envelope)
    for frame, kind in output.written:
        assert kind == frame.response_kind
        checker.check(frame)
    checker.finish()
    return turn, [frame for frame, _ in output.written]


def _ending(frames: list[E2AResponse]) -> tuple[str, Any]:
    final = frames[-1]
    return final.response_kind, final.body.get("code", final.body.get("result"))


async def test_a_frame_per_event_and_the_complete_frame_last() -> None:
    turn, frames = await _run(
        Delta(DeltaKind.TEXT, "a"), Passthrough("acp.session_update", {"x": 1}), Complete({"text": "a"})
    )
    assert [frame.response_kind for frame in frames] == ["e2a.chunk", "acp.session_update", "e2a.complete"]
    assert (turn.final_code, turn.limit_hit, turn.backend_error) == ("ok", None, None)


@pytest.mark.parametrize(
    ("items", "ending", "limit", "backend_error"),
    [
        ((Delta(DeltaKind.TEXT, "a"),), ("e2a.error", ErrorCode.BACKEND_INCOMPLETE), None, None),
        ((BackendError(ErrorCode.AGENT_BUSY, "busy"),), ("e2a.error", ErrorCode.AGENT_BUSY), None, "agent_busy"),
        ((RuntimeError("bug"),), ("e2a.error", ErrorCode.INTERNAL), None, None),
        ((Delta(DeltaKind.TEXT, "a"),) * 9, ("e2a.error", ErrorCode.STREAM_FRAME_LIMIT), "stream_frame_limit", None),
    ],
    ids=["incomplete", "backend-error", "backend-bug", "frame-limit"],
)
async def test_every_other_ending_is_one_final_error_frame(
    items: tuple[Event | Exception, ...], ending: tuple[str, str], limit: str | None, backend_error: str | None
) -> None:
    turn, frames = await _run(*items)
    assert _ending(frames) == ending
    assert len(frames) <= LIMITS.max_frames
    assert (turn.limit_hit, turn.backend_error) == (limit, backend_error)


async def test_a_prompt_over_the_limit_never_reaches_the_backend() -> None:
    envelope = E2AEnvelope(method="chat.send", params={"text": "x" * 2000}, request_id="r1")
    turn, frames = await _run(RuntimeError("the backend was asked"), envelope=envelope)
    assert [_ending(frames)] == [("e2a.error", ErrorCode.PROMPT_TOO_LARGE)]
    assert turn.limit_hit == ErrorCode.PROMPT_TOO_LARGE


async def test_the_agent_ids_are_adopted() -> None:
    _, frames = await _run(AgentIds("agent-task", "agent-context"), Complete({}))
    assert (frames[0].task_id, frames[0].context_id) == ("agent-task", "agent-context")


async def _turn_stuck_after(*events: Event, output: Frames | None = None) -> tuple[asyncio.Task[None], Turn, Frames]:
    """A turn running in a task, its backend waiting for ever after ``events``, once it waits."""
    waiting = asyncio.Event()

    async def stuck() -> AsyncGenerator[Event, None]:
        for event in events:
            yield event
        waiting.set()
        await asyncio.Event().wait()
        yield Complete({})  # never reached

    if output is None:
        output = Frames()

    async def turn_task() -> None:
        frames = FrameBuilder(ENVELOPE, BackendInfo("script", "e2a"), UtcClock())
        await run_turn(turn, read_prompt(ENVELOPE), stuck(), frames, output, LIMITS)

    task = asyncio.create_task(turn_task())
    turn = Turn(task)
    await waiting.wait()
    return task, turn, output


async def test_an_interruption_while_waiting_on_the_backend_ends_with_its_frame() -> None:
    task, turn, output = await _turn_stuck_after(Delta(DeltaKind.TEXT, "a"))
    turn.interrupt(Interruption(ErrorCode.SERVER_SHUTTING_DOWN, "stopping", {}))
    await task
    assert _ending([frame for frame, _ in output.written]) == ("e2a.error", ErrorCode.SERVER_SHUTTING_DOWN)
    assert turn.final_code == ErrorCode.SERVER_SHUTTING_DOWN and turn.limit_hit is None


async def test_a_cancel_from_outside_writes_nothing_more() -> None:
    task, _, output = await _turn_stuck_after()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert output.written == []


class NeverTakesTheSecond(Frames):
    """A ``FrameOutput`` whose reader takes the first frame and then nothing more."""

    async def write(self, frame: bytes, kind: str, event: Event | None) -> None:
        if self.written:
            await asyncio.Event().wait()
        await super().write(frame, kind, event)


async def test_a_final_frame_its_reader_never_takes_is_cancelled_after_the_stall_grace() -> None:
    output = NeverTakesTheSecond()
    task, turn, _ = await _turn_stuck_after(Delta(DeltaKind.TEXT, "a"), output=output)
    # The time limit comes while the turn waits on its backend, not while it writes.
    turn.interrupt(Interruption(ErrorCode.STREAM_TIME_LIMIT, "too long", {}), stall_grace=0.01)
    with pytest.raises(TurnStalled):
        await task
    assert len(output.written) == 1 and turn.stalled
