"""The AgentService.Chat servicer: one request envelope in, a stream of E2AResponse frames out.

Invariants (spec section 12) are the FrameBuilder's job, and one backend turn (a frame per event,
the limits, the final frame however it ends) is ``e2a_grpc.chat.turn``'s; this module runs a turn per
call and writes its frames: invalid requests fail with INVALID_ARGUMENT before any frame, backend
failures, limits and server shutdown end the stream with a final ``e2a.error`` frame, a client cancel
or deadline stops the backend (CancelledError at its current await) and writes nothing more to the
client.

The frame sink (``serve --publish-nats``) gets every frame built, the one being written when the call
ended included, and its copy of every stream ends with exactly one final frame: when the call ends
without one (the client cancelled, its deadline passed, a stalled client got a status, the grace
period ran out, a bug), a final ``e2a.error`` frame naming why (``client_cancelled``,
``deadline_exceeded``, ``stream_time_limit``, ``server_shutting_down``, ``internal``) is built for the
sink alone, so that a subscriber of the stream sees it end. ``server_shutting_down`` names only the
server's own cancel, once the shutdown's grace period is over: a client that cancels during the
shutdown, before that, gets ``client_cancelled``. These closing frames reach the sink even if the call
is cancelled again while it waits for room in the sink (grpc's stop after the client's cancel): their
hand-off goes on without the call.

The work of one request is bounded (``ServerSettings.chat_max_*``, see ``e2a_grpc.chat.turn``).
Frames are written one at a time, each write awaited, so a client that stops reading holds the
backend back (HTTP/2 flow control) and its stream holds one frame; if it still takes none
``STALLED_WRITE_GRACE_SECONDS`` after the time limit, no final frame could reach it, so the call ends
with RESOURCE_EXHAUSTED. An agent that pushes its events (ACP) is not held back: what it sends
meanwhile waits in the backend's ``EventInbox``, and text deltas that waited there come out merged
(``e2a_grpc.chat.coalesce``).

Frames are written as the bytes ``FrameBuilder`` serialized them (``add_chat_service`` registers the
RPC without a response serializer).

``CancelTask`` routes by agent id as Chat does and hands the task to its backend's ``cancel_task``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from e2a.v1 import agent_service_pb2, agent_service_pb2_grpc
from e2a_grpc.backends.routes import AgentRoutes
from e2a_grpc.chat.call_scope import CURRENT_CALL, TRACE_METADATA_KEYS, CallScope
from e2a_grpc.chat.events import AgentBackend, BackendError, Event, publishes_its_frames
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.requests import DEFAULT_CHAT_METHODS, validate_chat_request
from e2a_grpc.chat.turn import Interruption, Turn, TurnLimits, TurnStalled, run_turn
from e2a_grpc.errors import AgentUnavailableError, E2AFieldError, E2AValueError, NoWaitingTaskError, UnknownAgentError
from e2a_grpc.grpc.observability import ServerMetrics
from e2a_grpc.grpc.status import SHUTTING_DOWN_CODE, SHUTTING_DOWN_MESSAGE, status_for
from e2a_grpc.model import ErrorCode
from e2a_grpc.settings import ServerSettings

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

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
    """Takes a copy of every frame of a Chat stream (``serve --publish-nats``), in sequence order,
    ending with exactly one final frame (see the module docstring)."""

    async def put(self, frame: bytes) -> None:
        """``frame``: a serialized ChatResponse, as written (or being written) to the client."""


class _CallOutput:
    """Where a Chat turn's frames go: the call, then the metrics and the frame sink."""

    __slots__ = ("_context", "_frame_sink", "_metrics", "_request_id", "unpublished")

    def __init__(
        self,
        context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes],
        metrics: ServerMetrics | None,
        frame_sink: FrameSink | None,
        request_id: str | None,
    ) -> None:
        self._context = context
        self._metrics = metrics
        self._frame_sink = frame_sink
        self._request_id = request_id
        #: The last frame written, until the frame sink has it (a call may end while it is written).
        self.unpublished: bytes | None = None

    async def write(self, frame: bytes, kind: str, event: Event | None) -> None:
        self.unpublished = frame
        try:
            await self._context.write(frame)
        except asyncio.CancelledError:
            raise
        except Exception:  # grpc's ExecuteBatchError: the call is over (the client cancelled, or its deadline passed)
            # As a cancel: grpc then sends no status of its own over the failed write (which it
            # would log as an error), and the caller's finally blocks stop the backend.
            log.debug("Chat call %s ended while a frame was being written", self._request_id)
            raise asyncio.CancelledError from None
        if self._metrics is not None:
            self._metrics.chat_frame_sent(kind)
        if self._frame_sink is not None:
            await self._frame_sink.put(frame)
        self.unpublished = None


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
        routes: AgentRoutes | None = None,
    ) -> None:
        #: Every request's backend, without a routing table (whatever its agent_id: as before tables).
        self.backend = backend
        #: The routing table's backends: a request's agent_id picks one, an unknown one gets NOT_FOUND.
        self.routes = routes
        self._frame_sink = frame_sink
        self._metrics = metrics
        self._tracer = tracer
        self._methods = methods
        self._log_frames = settings.log_frames
        self._limits = TurnLimits.from_settings(settings)
        self._turns: set[Turn] = set()
        self._shutting_down = False
        #: The shutdown's grace period is over: grpc's stop cancels the calls still running.
        self._grace_over = False
        #: The hand-offs of closing frames to the frame sink still running (``_end_published_stream``).
        self._closing_hand_offs: set[asyncio.Task[None]] = set()
        self._clock = UtcClock()

    async def Chat(  # type: ignore[override]  # frames are written with context.write, not yielded
        self,
        request: agent_service_pb2.ChatRequest,
        context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes],
    ) -> None:
        try:
            envelope, prompt = validate_chat_request(request, self._methods)
        except E2AFieldError as exc:
            await context.abort_with_status(status_for(exc))
        if self._shutting_down:
            await context.abort(SHUTTING_DOWN_CODE, SHUTTING_DOWN_MESSAGE)
        try:
            backend = self.backend if self.routes is None else self.routes.backend_for(envelope.agent_id)
        except UnknownAgentError as exc:
            await context.abort_with_status(status_for(exc))
        frames = FrameBuilder(envelope, backend.info, self._clock, log_frames=self._log_frames)
        task = asyncio.current_task()
        assert task is not None
        turn = Turn(task)
        self._turns.add(turn)
        turn.limit_time(self._limits, STALLED_WRITE_GRACE_SECONDS)
        # A backend whose frames are on the broker already (a worker on the bus wrote them): the sink
        # would store them twice.
        sink = None if publishes_its_frames(backend) else self._frame_sink
        output = _CallOutput(context, self._metrics, sink, frames.request_id)
        # Not started yet: the backend runs no code before the first event is asked for.
        events = backend.stream(envelope, prompt)
        if self._metrics is not None:
            self._metrics.chat_streams_in_flight.inc()
        try:
            try:
                with self._backend_turn(backend, frames, turn):
                    scope = CURRENT_CALL.set(functools.partial(self._call_scope, context, frames))
                    try:
                        await run_turn(turn, prompt, events, frames, output, self._limits, unavailable_as_status=True)
                    finally:
                        CURRENT_CALL.reset(scope)
            finally:
                if self._metrics is not None:
                    self._metrics.chat_streams_in_flight.dec()
                    if turn.backend_error is not None:
                        self._metrics.chat_backend_error(turn.backend_error)
                    if turn.limit_hit is not None:
                        self._metrics.chat_limits_hit.labels(turn.limit_hit).inc()
                turn.cancel_timers()
                self._turns.discard(turn)
                await events.aclose()
        except TurnStalled:
            if sink is not None:
                await self._end_published_stream(sink, frames, output, self._stalled_ending())
            await self._abort_stalled(context)  # the backend is stopped by now
        except AgentUnavailableError as exc:  # before any frame (run_turn): a status a client may retry on
            # The frame sink has no frame of the call, so no stream of it to end.
            await context.abort_with_status(status_for(exc))
        except BaseException as exc:
            if sink is not None:
                await self._end_published_stream(sink, frames, output, self._call_ending(context, exc))
            raise

    async def CancelTask(
        self,
        request: agent_service_pb2.CancelTaskRequest,
        context: grpc.aio.ServicerContext[agent_service_pb2.CancelTaskRequest, agent_service_pb2.CancelTaskResponse],
    ) -> agent_service_pb2.CancelTaskResponse:
        if not request.task_id:
            await context.abort_with_status(
                status_for(E2AValueError("task_id", "name the waiting task: the task_id of its frames"))
            )
        if self._shutting_down:
            await context.abort(SHUTTING_DOWN_CODE, SHUTTING_DOWN_MESSAGE)
        agent_id = request.agent_id or None  # none: the default agent, as a Chat envelope without agent_id
        try:
            backend = self.backend if self.routes is None else self.routes.backend_for(agent_id)
            if not await backend.cancel_task(request.task_id):
                raise NoWaitingTaskError(agent_id, request.task_id)
        except (UnknownAgentError, NoWaitingTaskError, BackendError, AgentUnavailableError) as exc:
            await context.abort_with_status(status_for(exc))
        except Exception as exc:
            log.exception("CancelTask of task %s failed", request.task_id)
            await context.abort_with_status(status_for(exc))
        return agent_service_pb2.CancelTaskResponse()

    def _call_scope(
        self, context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes], frames: FrameBuilder
    ) -> CallScope:
        """The call as a route to an upstream carries it on, now: request id, deadline left, trace context
        (this server's current span when tracing, else the caller's context as it came)."""
        remaining = context.time_remaining()
        trace: tuple[tuple[str, str], ...]
        if self._tracer is not None:
            from opentelemetry import propagate

            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            trace = tuple((key, carrier[key]) for key in TRACE_METADATA_KEYS if key in carrier)
        else:
            received = context.invocation_metadata() or ()
            trace = tuple((key, str(value)) for key, value in received if key in TRACE_METADATA_KEYS)
        assert frames.request_id is not None  # the FrameBuilder assigns one when the request has none
        deadline = None if remaining is None else time.monotonic() + remaining
        return CallScope(frames.request_id, deadline, trace)

    async def _end_published_stream(
        self, sink: FrameSink, frames: FrameBuilder, output: _CallOutput, ending: Interruption
    ) -> None:
        """End the frame sink's copy of a stream whose call ended without its final frame: the frame
        written last, if the sink does not have it yet, then (unless that was the final one) a final
        ``e2a.error`` frame for the sink alone. The client, gone or getting a status, gets neither.

        The hand-off is shielded: a call cancelled again while the sink's queue is full (grpc's stop
        after the client's cancel) ends at once, and its closing frames still reach the sink."""
        closing = [] if output.unpublished is None else [output.unpublished]
        output.unpublished = None
        if not frames.finished:
            closing.append(frames.error(ending.code, ending.message, ending.details))
        if not closing:
            return
        hand_off = asyncio.create_task(_hand_over(sink, closing), name="e2a-chat-closing-frames")
        self._closing_hand_offs.add(hand_off)
        hand_off.add_done_callback(self._closing_hand_offs.discard)
        await asyncio.shield(hand_off)

    def _call_ending(
        self, context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes], exc: BaseException
    ) -> Interruption:
        """Why a call ended without a final frame (``exc``), as the final frame the sink gets says it."""
        cancelled = isinstance(exc, asyncio.CancelledError)
        if cancelled and self._grace_over:  # grpc's stop cancelled it: the grace period ran out under a write
            return _SHUTTING_DOWN
        if not cancelled:  # a bug, which grpc logs
            return Interruption(ErrorCode.INTERNAL, "the Chat call failed; see the server log", {})
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            return Interruption(ErrorCode.DEADLINE_EXCEEDED, "the call's deadline passed; the agent was stopped", {})
        return Interruption(ErrorCode.CLIENT_CANCELLED, "the client cancelled the call; the agent was stopped", {})

    def _stalled_ending(self) -> Interruption:
        """The final frame the sink gets for a client that took no frame until the time limit (the
        client itself gets RESOURCE_EXHAUSTED)."""
        details = {"max_stream_seconds": self._limits.max_seconds, "client_stalled": True}
        return Interruption(ErrorCode.STREAM_TIME_LIMIT, self._limits.time_limit_message(), details)

    @contextlib.contextmanager
    def _backend_turn(self, backend: AgentBackend, frames: FrameBuilder, turn: Turn) -> Iterator[None]:
        """Around one backend turn: its span (a child of the call's) when tracing is on, and a call log
        line (DEBUG) when it ends."""
        request_id = frames.request_id
        try:
            if self._tracer is None:
                yield
            else:
                attributes = {"e2a.backend": backend.info.name}
                if request_id is not None:  # the FrameBuilder assigns one when the request has none
                    attributes["e2a.request_id"] = request_id
                with self._tracer.start_as_current_span(BACKEND_TURN_SPAN, attributes=attributes) as span:
                    yield
                    span.set_attribute("e2a.frames", frames.sequence)
                    if turn.final_code is not None:
                        span.set_attribute("e2a.final_code", turn.final_code)
        finally:
            status = turn.final_code or "cancelled"  # no final frame: the client went away, or a stalled one
            log.debug(
                "Chat turn ended: %s after %d frames",
                status,
                frames.sequence,
                extra={"request_id": request_id, "method": CHAT_METHOD, "status": status},
            )

    async def _abort_stalled(self, context: grpc.aio.ServicerContext[agent_service_pb2.ChatRequest, bytes]) -> None:
        """End a call whose client stopped reading, with RESOURCE_EXHAUSTED: a final frame would queue
        behind the frame it did not take. The client gets the status once it reads the frames gRPC
        holds for it; until then (or until it goes away) this waits, holding no backend."""
        message = self._limits.time_limit_message()
        if self._metrics is not None:
            self._metrics.chat_limits_hit.labels(ErrorCode.STREAM_TIME_LIMIT).inc()
        log.warning("Chat stream ended: its client took no frame within the time limit (%s)", message)
        # abort sends a status, not a second message: it may start while the cancelled write is pending.
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{ErrorCode.STREAM_TIME_LIMIT}: {message}")

    async def shutdown(self) -> None:
        """End every in-flight stream with a final e2a.error frame; new streams are refused."""
        self._shutting_down = True
        for turn in list(self._turns):
            # A turn waiting on its backend is interrupted there; one in the middle of a write
            # sees it as soon as the write is done.
            turn.interrupt(_SHUTTING_DOWN)
        await (self.backend.aclose() if self.routes is None else self.routes.aclose())

    def end_grace(self) -> None:
        """The shutdown's grace period is over: the calls still running are cancelled by the server
        (their published streams end with ``server_shutting_down``), not by their clients."""
        self._grace_over = True

    async def closing_frames_handed_over(self) -> None:
        """Return once the closing frames of every ended call are with the frame sink (the hand-off of
        a call cancelled twice goes on after the call)."""
        if self._closing_hand_offs:
            await asyncio.wait(set(self._closing_hand_offs))


async def _hand_over(sink: FrameSink, frames: list[bytes]) -> None:
    for frame in frames:
        await sink.put(frame)


#: How every in-flight Chat stream ends when the server stops.
_SHUTTING_DOWN = Interruption(ErrorCode.SERVER_SHUTTING_DOWN, SHUTTING_DOWN_MESSAGE, {})


def add_chat_service(servicer: ChatServicer, server: grpc.aio.Server) -> None:
    """Register ``servicer`` as e2a.v1.AgentService, as the generated ``add_AgentServiceServicer_to_server``
    does, except that Chat writes its frames already serialized (``FrameBuilder``): no response serializer."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "Chat": grpc.unary_stream_rpc_method_handler(
            servicer.Chat, request_deserializer=agent_service_pb2.ChatRequest.FromString, response_serializer=None
        ),
        "CancelTask": grpc.unary_unary_rpc_method_handler(
            servicer.CancelTask,
            request_deserializer=agent_service_pb2.CancelTaskRequest.FromString,
            response_serializer=agent_service_pb2.CancelTaskResponse.SerializeToString,
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(AGENT_SERVICE, handlers),))
    server.add_registered_method_handlers(AGENT_SERVICE, handlers)
