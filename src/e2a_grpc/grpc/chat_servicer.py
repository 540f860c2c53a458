"""The AgentService.Chat servicer: one request envelope in, a stream of E2AResponse frames out.

Invariants (spec section 12) are the FrameBuilder's job; this module decides *when* frames are
written: invalid requests fail with INVALID_ARGUMENT before any frame, backend failures and server
shutdown end the stream with a final ``e2a.error`` frame, a client cancel or deadline stops the
backend (CancelledError at its current await) and writes nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc

from e2a.v1 import agent_service_pb2, agent_service_pb2_grpc
from e2a_grpc.chat.events import AgentBackend, BackendError, Complete, Delta, Event, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.requests import DEFAULT_CHAT_METHODS, validate_chat_request
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.grpc.status import status_for
from e2a_grpc.model import ErrorCode

log = logging.getLogger(__name__)


class _Stream:
    """One in-flight Chat call, as the shutdown sees it."""

    __slots__ = ("task", "writing")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.writing = False


class ChatServicer(agent_service_pb2_grpc.AgentServiceServicer):
    """e2a.v1.AgentService."""

    def __init__(
        self, backend: AgentBackend, *, methods: tuple[str, ...] = DEFAULT_CHAT_METHODS, log_frames: bool = False
    ) -> None:
        self.backend = backend
        self._methods = methods
        self._log_frames = log_frames
        self._streams: set[_Stream] = set()
        self._shutting_down = False
        self._clock = UtcClock()

    async def Chat(  # type: ignore[override]  # frames are written with context.write, not yielded
        self,
        request: agent_service_pb2.ChatRequest,
        context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, agent_service_pb2.ChatResponse],
    ) -> None:
        try:
            envelope = validate_chat_request(request, self._methods)
        except E2AFieldError as exc:
            await context.abort_with_status(status_for(exc))
        if self._shutting_down:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "server is shutting down")
        frames = FrameBuilder(envelope, self.backend.info, self._clock, log_frames=self._log_frames)
        task = asyncio.current_task()
        assert task is not None
        stream = _Stream(task)
        self._streams.add(stream)
        events = self.backend.stream(envelope)
        try:
            try:
                async for event in events:
                    frame = self._frame_for(frames, event)
                    # While a write is pending nothing may cancel this task: a second write (the
                    # final frame) cannot start until the first one is done.
                    stream.writing = True
                    await context.write(frame)
                    stream.writing = False
                    if frames.finished:
                        return
                    if self._shutting_down:
                        raise asyncio.CancelledError
                final = frames.error(ErrorCode.BACKEND_INCOMPLETE, "the agent ended the stream without a result")
            except BackendError as exc:
                final = frames.error(exc.code, exc.message, exc.details, exc.external)
            except asyncio.CancelledError:
                if not self._shutting_down or frames.finished or stream.writing:
                    raise  # the client cancelled or its deadline passed: nothing more to write
                final = frames.error(
                    ErrorCode.SERVER_SHUTTING_DOWN, "the server is shutting down; retry on another instance"
                )
            except E2AFieldError as exc:
                log.warning("backend produced an invalid event for request %s: %s", frames.request_id, exc)
                final = frames.error(ErrorCode.BACKEND_INVALID_OUTPUT, str(exc))
            except Exception:
                log.exception("backend %s failed on request %s", self.backend.info.name, frames.request_id)
                final = frames.error(ErrorCode.INTERNAL, "the agent backend failed; see the server log")
            await context.write(final)
        finally:
            self._streams.discard(stream)
            await events.aclose()

    @staticmethod
    def _frame_for(frames: FrameBuilder, event: Event) -> agent_service_pb2.ChatResponse:
        if isinstance(event, Delta):
            return frames.delta(event)
        if isinstance(event, Complete):
            return frames.complete(event.result)
        if isinstance(event, Passthrough):
            return frames.passthrough(event)
        raise TypeError(f"unknown backend event {event!r}")

    async def shutdown(self) -> None:
        """End every in-flight stream with a final e2a.error frame; new streams are refused."""
        self._shutting_down = True
        for stream in list(self._streams):
            # A stream waiting on its backend is interrupted there; one in the middle of a write
            # sees the flag as soon as the write is done.
            if not stream.writing:
                stream.task.cancel()
        await self.backend.aclose()
