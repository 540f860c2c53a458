"""The AgentService.Chat servicer: one request envelope in, a stream of E2AResponse frames out.

Invariants (spec section 12) are the FrameBuilder's job; this module decides *when* frames are
written: invalid requests fail with INVALID_ARGUMENT before any frame, backend failures and server
shutdown end the stream with a final ``e2a.error`` frame, a client cancel or deadline stops the
backend (CancelledError at its current await) and writes nothing more.

The work of one request is bounded (``ServerSettings.chat_max_*``). A limit is a policy of this
server, not a fault of the request, so it is reported in E2A terms, as a final ``e2a.error`` frame a
gateway relays like any agent error: a prompt over ``chat_max_prompt_bytes`` gets that frame alone
(``prompt_too_large``) and never reaches the backend; a stream that reaches ``chat_max_frames`` or
runs longer than ``chat_max_stream_seconds`` has its backend stopped (generator closed, or cancelled
at its await) and ends with ``stream_frame_limit`` / ``stream_time_limit``. Frames are written one
at a time, each write awaited, so a client that stops reading holds the backend back (HTTP/2 flow
control) and its stream holds one frame; if it still takes none ``STALLED_WRITE_GRACE_SECONDS``
after the time limit, no final frame could reach it, so the call ends with RESOURCE_EXHAUSTED. An
agent that pushes its events (ACP) is not held back: what it sends meanwhile waits in the backend's
``EventInbox``, and text deltas that waited there come out merged (``e2a_grpc.chat.coalesce``).

Frames are written as the bytes ``FrameBuilder`` serialized them (``add_chat_service`` registers the
RPC without a response serializer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from e2a.v1 import agent_service_pb2, agent_service_pb2_grpc
from e2a_grpc.chat.events import AgentBackend, AgentIds, BackendError, Complete, Delta, Event, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.requests import DEFAULT_CHAT_METHODS, prompt_size_bytes, validate_chat_request
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.grpc.observability import ServerMetrics
from e2a_grpc.grpc.status import status_for
from e2a_grpc.model import E2AEnvelope, ErrorCode, ResponseKind
from e2a_grpc.settings import ServerSettings

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

log = logging.getLogger(__name__)
#: The name of the span around one Chat request's backend stream (grpc/tracing.py).
BACKEND_TURN_SPAN = "e2a.chat.backend_turn"
#: The ``method`` of a Chat call's log line.
AGENT_SERVICE = "e2a.v1.AgentService"
CHAT_METHOD = f"/{AGENT_SERVICE}/Chat"

#: How long after the stream's time limit a write may still wait for the client to take its frame:
#: a client that reads gets the final frame, one that read nothing for this long gets a status.
STALLED_WRITE_GRACE_SECONDS = 5.0


class FrameSink(Protocol):
    """Takes a copy of every frame written to a Chat client (``serve --publish-nats``)."""

    async def put(self, frame: bytes) -> None:
        """``frame``: a serialized ChatResponse, as written to the client."""


class _LimitReached(Exception):
    """A limit on the work of one request was hit: becomes the final ``e2a.error`` frame."""

    def __init__(self, code: ErrorCode, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


class _ClientStalled(Exception):
    """The client took no frame until the stream's time (and its grace) was up."""


class _CallEnded(Exception):
    """A write failed: the call ended under it (the client cancelled, or its deadline passed while
    the write waited for a client that did not read). No frame can follow."""


class _Stream:
    """One in-flight Chat call, as the shutdown and the stream's time limit see it."""

    __slots__ = ("_timers", "final_code", "span", "stalled", "task", "time_up", "writing")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.writing = False
        #: The stream's time limit passed: no further event is taken from the backend.
        self.time_up = False
        #: The client still took no frame STALLED_WRITE_GRACE_SECONDS after the time limit.
        self.stalled = False
        #: The backend turn's span, when tracing is on.
        self.span: Span | None = None
        #: Once the final frame is written: "ok", or the code of its e2a.error (for the span and the call log).
        self.final_code: str | None = None
        self._timers: list[asyncio.TimerHandle] = []

    def limit_time(self, seconds: float) -> None:
        """One timer per stream, not one per event: the per-frame path stays a flag check."""
        self._timers.append(asyncio.get_running_loop().call_later(seconds, self._on_time_up))

    def _on_time_up(self) -> None:
        self.time_up = True
        if self.writing:  # a write cannot be interrupted by another; the client gets a grace to take it
            self._timers.append(asyncio.get_running_loop().call_later(STALLED_WRITE_GRACE_SECONDS, self._on_stalled))
        else:
            self.task.cancel()  # the task waits on its backend: stop it there

    def _on_stalled(self) -> None:
        if self.writing:
            self.stalled = True
            self.task.cancel()

    def cancel_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()


class ChatServicer(agent_service_pb2_grpc.AgentServiceServicer):
    """e2a.v1.AgentService."""

    def __init__(
        self,
        backend: AgentBackend,
        settings: ServerSettings,
        *,
        methods: tuple[str, ...] = DEFAULT_CHAT_METHODS,
        metrics: ServerMetrics | None = None,
        tracer: Tracer | None = None,
        frame_sink: FrameSink | None = None,
    ) -> None:
        self.backend = backend
        self._frame_sink = frame_sink
        self._metrics = metrics
        self._tracer = tracer
        self._methods = methods
        self._log_frames = settings.log_frames
        self._max_prompt_bytes = settings.chat_max_prompt_bytes
        self._max_frames = settings.chat_max_frames
        self._max_stream_seconds = settings.chat_max_stream_seconds
        self._streams: set[_Stream] = set()
        self._shutting_down = False
        self._clock = UtcClock()

    async def Chat(  # type: ignore[override]  # frames are written with context.write, not yielded
        self,
        request: agent_service_pb2.ChatRequest,
        context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes],
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
        stream.limit_time(self._max_stream_seconds)
        # Not started yet: the backend runs no code before the first event is asked for.
        events = self.backend.stream(envelope)
        if self._metrics is not None:
            self._metrics.chat_streams_in_flight.inc()
        try:
            try:
                with self._backend_turn(frames, stream):
                    await self._stream_frames(context, envelope, events, frames, stream)
            finally:
                if self._metrics is not None:
                    self._metrics.chat_streams_in_flight.dec()
                stream.cancel_timers()
                self._streams.discard(stream)
                await events.aclose()
        except _ClientStalled:
            await self._abort_stalled(context)  # the backend is stopped by now

    async def _stream_frames(
        self,
        context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes],
        envelope: E2AEnvelope,
        events: AsyncGenerator[Event, None],
        frames: FrameBuilder,
        stream: _Stream,
    ) -> None:
        """Write a frame per backend event, then the final frame however the stream ends."""
        try:
            prompt_bytes = prompt_size_bytes(envelope)
            if prompt_bytes > self._max_prompt_bytes:
                raise _LimitReached(
                    ErrorCode.PROMPT_TOO_LARGE,
                    f"the prompt has {prompt_bytes} bytes; this server takes at most {self._max_prompt_bytes}",
                    {"prompt_bytes": prompt_bytes, "max_prompt_bytes": self._max_prompt_bytes},
                )
            last_sequence = self._max_frames - 1  # the last frame the limit allows is the final one
            metrics = self._metrics
            frame_sink = self._frame_sink
            async for event in events:
                if type(event) is Delta:  # most frames: straight to their builder
                    if frames.sequence >= last_sequence:
                        raise self._frame_limit()
                    frame = frames.delta(event)
                elif isinstance(event, AgentIds):
                    frames.adopt_agent_ids(event)
                    continue
                else:
                    if frames.sequence >= last_sequence and not isinstance(event, Complete):
                        raise self._frame_limit()
                    frame = frames.for_event(event)
                # While a write is pending nothing may cancel this task (a second write, the final
                # frame, cannot start until the first one is done), short of a stalled client.
                stream.writing = True
                try:
                    await context.write(frame)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # grpc's ExecuteBatchError: the call is over, not the backend
                    raise _CallEnded from exc
                stream.writing = False
                if metrics is not None:
                    metrics.chat_frame_sent(_kind_of(event))
                if frame_sink is not None:
                    await frame_sink.put(frame)
                if frames.finished:
                    stream.final_code = frames.final_code
                    return
                if self._shutting_down:
                    raise asyncio.CancelledError
                if stream.time_up:  # it passed during the write: the timer interrupts only a wait on the backend
                    final = self._time_limit_error(frames)
                    break
            else:
                final = frames.error(ErrorCode.BACKEND_INCOMPLETE, "the agent ended the stream without a result")
        except BackendError as exc:
            if self._metrics is not None:
                self._metrics.chat_backend_errors.labels(str(exc.code)).inc()
            final = frames.error(exc.code, exc.message, exc.details, exc.external)
        except _LimitReached as hit:
            if self._metrics is not None:
                self._metrics.chat_limits_hit.labels(hit.code).inc()
            final = frames.error(hit.code, hit.message, hit.details)
        except asyncio.CancelledError:
            if stream.stalled:
                raise _ClientStalled from None  # no frame can follow the one it did not take
            if frames.finished or stream.writing or not (self._shutting_down or stream.time_up):
                raise  # the client cancelled or its deadline passed: nothing more to write
            if self._shutting_down:
                final = frames.error(
                    ErrorCode.SERVER_SHUTTING_DOWN, "the server is shutting down; retry on another instance"
                )
            else:
                final = self._time_limit_error(frames)
        except _CallEnded:
            # As a cancel: grpc then sends no status of its own over the failed write (which it
            # would log as an error), and the caller's finally blocks stop the backend.
            log.debug("Chat call %s ended while a frame was being written", frames.request_id)
            raise asyncio.CancelledError from None
        except E2AFieldError as exc:
            log.warning("backend produced an invalid event for request %s: %s", frames.request_id, exc)
            final = frames.error(ErrorCode.BACKEND_INVALID_OUTPUT, str(exc))
        except Exception:
            log.exception("backend %s failed on request %s", self.backend.info.name, frames.request_id)
            final = frames.error(ErrorCode.INTERNAL, "the agent backend failed; see the server log")
        stream.writing = True
        try:
            await context.write(final)
            if self._metrics is not None:
                self._metrics.chat_frame_sent(ResponseKind.E2A_ERROR)
            if self._frame_sink is not None:
                await self._frame_sink.put(final)
            stream.final_code = frames.final_code
        except asyncio.CancelledError:
            if stream.stalled:
                raise _ClientStalled from None
            raise

    @contextlib.contextmanager
    def _backend_turn(self, frames: FrameBuilder, stream: _Stream) -> Iterator[None]:
        """Around one backend turn: its span (a child of the call's) when tracing is on, and a call log
        line (DEBUG) when it ends."""
        request_id = frames.request_id
        try:
            if self._tracer is None:
                yield
            else:
                attributes = {"e2a.backend": self.backend.info.name}
                if request_id is not None:  # the FrameBuilder assigns one when the request has none
                    attributes["e2a.request_id"] = request_id
                with self._tracer.start_as_current_span(BACKEND_TURN_SPAN, attributes=attributes) as span:
                    stream.span = span
                    yield
                    span.set_attribute("e2a.frames", frames.sequence)
                    if stream.final_code is not None:
                        span.set_attribute("e2a.final_code", stream.final_code)
        finally:
            status = stream.final_code or "cancelled"  # no final frame: the client went away, or a stalled one
            log.debug(
                "Chat turn ended: %s after %d frames",
                status,
                frames.sequence,
                extra={"request_id": request_id, "method": CHAT_METHOD, "status": status},
            )

    def _frame_limit(self) -> _LimitReached:
        return _LimitReached(
            ErrorCode.STREAM_FRAME_LIMIT,
            f"the stream reached this server's limit of {self._max_frames} frames; the agent was stopped",
            {"max_frames": self._max_frames},
        )

    def _time_limit_message(self) -> str:
        return (
            f"the stream ran longer than this server's limit of {self._max_stream_seconds:g} s; the agent was stopped"
        )

    def _time_limit_error(self, frames: FrameBuilder) -> bytes:
        if self._metrics is not None:
            self._metrics.chat_limits_hit.labels(ErrorCode.STREAM_TIME_LIMIT).inc()
        return frames.error(
            ErrorCode.STREAM_TIME_LIMIT, self._time_limit_message(), {"max_stream_seconds": self._max_stream_seconds}
        )

    async def _abort_stalled(self, context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes]) -> None:
        """End a call whose client stopped reading, with RESOURCE_EXHAUSTED: a final frame would queue
        behind the frame it did not take. The client gets the status once it reads the frames gRPC
        holds for it; until then (or until it goes away) this waits, holding no backend."""
        message = self._time_limit_message()
        if self._metrics is not None:
            self._metrics.chat_limits_hit.labels(ErrorCode.STREAM_TIME_LIMIT).inc()
        log.warning("Chat stream ended: its client took no frame within the time limit (%s)", message)
        # abort sends a status, not a second message: it may start while the cancelled write is pending.
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{ErrorCode.STREAM_TIME_LIMIT}: {message}")

    async def shutdown(self) -> None:
        """End every in-flight stream with a final e2a.error frame; new streams are refused."""
        self._shutting_down = True
        for stream in list(self._streams):
            # A stream waiting on its backend is interrupted there; one in the middle of a write
            # sees the flag as soon as the write is done.
            if not stream.writing:
                stream.task.cancel()
        await self.backend.aclose()


def _kind_of(event: Event) -> str:
    """The response_kind of the frame an event becomes (for the metrics)."""
    if isinstance(event, Passthrough):
        return event.response_kind
    return ResponseKind.E2A_COMPLETE if isinstance(event, Complete) else ResponseKind.E2A_CHUNK


def add_chat_service(servicer: ChatServicer, server: grpc.aio.Server) -> None:
    """Register ``servicer`` as e2a.v1.AgentService, as the generated ``add_AgentServiceServicer_to_server``
    does, except that Chat writes its frames already serialized (``FrameBuilder``): no response serializer."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "Chat": grpc.unary_stream_rpc_method_handler(
            servicer.Chat, request_deserializer=agent_service_pb2.ChatRequest.FromString, response_serializer=None
        )
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(AGENT_SERVICE, handlers),))
    server.add_registered_method_handlers(AGENT_SERVICE, handlers)
