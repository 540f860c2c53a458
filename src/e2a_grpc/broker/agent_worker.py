"""An agent worker on the bus (``e2a-grpc agent``; nats-py, the ``nats`` extra; docs/agent-bus.md).

The worker takes request CloudEvents of its agent id from the JetStream work-queue consumer that
every worker of the agent shares, and runs each as a Chat turn with the Chat servicer's machinery
(``chat.turn.run_turn``, ``FrameBuilder``, ``TurnLimits``), so its frames and final frames are those
a direct Chat call gets. The frames go to the broker path's frame subjects through a
``FramePublisher``; a request is acked once its final frame is stored.

- Bounded: it pulls only as many requests as it has free turn slots (``bus_max_turns``); the rest
  wait in the stream.
- At most once: a request delivered again (someone took it and never acked) is never run; its
  ``agent_unavailable`` final frame is written unless its stream has a final frame
  (``lost_requests``), and it is terminated. A request taken after its Start-By is acked, unrun.
- The gateway hears ``taken`` when a turn starts and ``working`` every ``bus_progress_seconds`` while
  it runs (JetStream gets an in-progress ack then too, so the ack wait never runs out on a live turn).
- A frame that comes more than a progress interval after the turn's previous one is published only if
  the request has no final frame yet: a worker stopped long enough for its gateway to take it for lost
  (which wrote the request's final frame) stops the turn there, writing nothing more (``_BrokerOutput``).
- Cancel (``e2a.cancel.<request token>``) and the request's deadline end the turn as Chat's client
  cancel and deadline do: final ``client_cancelled`` / ``deadline_exceeded`` frames on the broker.
- A task cancel (``e2a.cancel.task.<agent token>.<task token>``) names a task that waits for its
  client (a turn of this agent that ended ``e2a.input_required``): the backend cancels it if it holds
  it, and the worker replies; a worker whose backend holds no such task stays silent.
- ``stop`` drains: leave the registry, stop pulling, let running turns finish within the grace, then
  end the rest with ``server_shutting_down``; every request taken is acked, none is nacked.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig

from e2a_grpc.broker.agent_records import new_instance_id, now, server_record
from e2a_grpc.broker.agent_registry import Registration
from e2a_grpc.broker.agent_requests import (
    BusRequest,
    Notice,
    TaskCancelOutcome,
    TaskCancelReply,
    any_worker_subject,
    notice_headers,
    read_request,
    read_task_cancel,
    shared_consumer,
    task_cancel_filter,
    task_cancel_reply_headers,
    worker_consumer,
    worker_subject,
)
from e2a_grpc.broker.connection import connect
from e2a_grpc.broker.frame_messages import frame_subject, subject_token
from e2a_grpc.broker.frame_publisher import FramePublisher
from e2a_grpc.broker.held_sessions import HeldSessions
from e2a_grpc.broker.lost_requests import end_lost_request, last_stored
from e2a_grpc.broker.request_stream import ensure_requests_stream
from e2a_grpc.broker.session_owners import ClaimContendedError, SessionOwners
from e2a_grpc.chat.events import AgentBackend, BackendError, Event, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.requests import DEFAULT_CHAT_METHODS, checked_prompt
from e2a_grpc.chat.turn import Interruption, Turn, TurnLimits, run_turn
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import ErrorCode, ResponseKind
from e2a_grpc.settings import AgentWorkerSettings, BackendName

log = logging.getLogger(__name__)

#: How long one pull waits for requests: also how long a stop waits for the pull in flight, whose
#: requests it then runs (a request delivered to a worker that no longer pulls would be delivered
#: again later, and answered agent_unavailable).
PULL_SECONDS = 1.0
#: Pause after a pull failed on the connection (the client reconnects meanwhile).
PULL_RETRY_SECONDS = 0.5
#: How long after the grace the turns ended with server_shutting_down may take to store that frame.
FINAL_FRAME_SECONDS = 5.0
#: The backends that keep sessions in the worker's process: their workers claim them.
SESSION_BACKENDS = frozenset({BackendName.ACP})
#: ``body.event`` of the ``ext`` frame a turn starts with when its session's worker was lost.
SESSION_RESTARTED = "session_restarted"
#: The JetStream requests of the worker (stream and consumer set-up, last-frame look-ups).
REQUEST_TIMEOUT_SECONDS = 5.0


@dataclass
class _Running:
    """A request being run: its message (acked once the final frame is stored) and its turn."""

    request: BusRequest
    message: Msg
    turn: Turn | None = None
    timers: list[asyncio.TimerHandle] = field(default_factory=list)


class _BrokerOutput:
    """Where a worker's turn writes its frames: the publisher; the final frame is watched until stored.

    A frame that comes more than ``silence`` seconds after the turn's previous one (or its start) is
    written only if the request has not ended meanwhile (``ended_elsewhere``, one look at the broker): a
    worker stopped that long (SIGSTOP, a frozen VM) was taken for lost by its gateway, which wrote the
    request's final frame; a frame written after it would share its sequence number. The turn then
    stops without another frame: ``write`` raises ``CancelledError``, as when a reader is gone. Frames
    that come back to back are handed over without a look, so that they go out pipelined."""

    __slots__ = (
        "_ended_elsewhere",
        "_frames",
        "_last_write",
        "_loop",
        "_publisher",
        "_silence",
        "ended",
        "final_stored",
    )

    def __init__(
        self,
        publisher: FramePublisher,
        frames: FrameBuilder,
        *,
        silence: float,
        ended_elsewhere: Callable[[], Awaitable[bool]],
    ) -> None:
        self._publisher = publisher
        self._frames = frames
        self._silence = silence
        self._ended_elsewhere = ended_elsewhere
        self._loop = asyncio.get_running_loop()
        self._last_write = self._loop.time()
        self.final_stored: asyncio.Future[bool] | None = None
        #: The request had ended when the turn came to write a frame after a silence.
        self.ended = False

    async def write(self, frame: bytes, kind: str, event: Event | None) -> None:
        silent_for = self._loop.time() - self._last_write
        if silent_for > self._silence and await self._ended_elsewhere():
            log.warning(
                "request %s ended while this worker was silent for %.1f s (stopped, or its loop blocked): taken "
                "for lost, it has its final frame; its turn stops here, writing nothing more",
                self._frames.request_id,
                silent_for,
            )
            self.ended = True
            raise asyncio.CancelledError
        self._last_write = self._loop.time()
        # The builder marks the final frame finished as it builds it, so only that one is watched.
        if self._frames.finished:
            self.final_stored = self._publisher.when_stored(frame)
        await self._publisher.put(frame)


def _request_consumer(config: AgentWorkerSettings, *, inactive_threshold: float | None = None) -> ConsumerConfig:
    """A pull consumer of requests: each acked by its worker (redelivered after the ack wait if not),
    delivered without limit (a redelivery is answered agent_unavailable, never dropped), and as many
    unacked as the workers' turn slots allow (the workers bound them, not the broker)."""
    return ConsumerConfig(
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=config.bus_ack_wait_seconds,
        max_deliver=-1,
        max_ack_pending=-1,
        inactive_threshold=inactive_threshold,
    )


class AgentWorker:
    """Runs requests of ``config.agent_id`` from the bus with ``backend`` until ``stop``."""

    def __init__(self, config: AgentWorkerSettings, backend: AgentBackend) -> None:
        assert config.bus_nats is not None  # AgentWorkerSettings requires it
        self._config = config
        self._url = config.bus_nats
        self._backend = backend
        self._limits = TurnLimits.from_settings(config)
        self._clock = UtcClock()
        self.instance_id = new_instance_id()
        started = now()
        record = server_record(config, instance_id=self.instance_id, started_at=started, heartbeat_at=started)
        self.registration = Registration.for_record(self._url, record, config)
        self.publisher = FramePublisher.from_settings(config, self._url)
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None
        #: Requests being run, by their request id's subject token (what a cancel names).
        self._running: dict[str, _Running] = {}
        #: Set when a turn slot is freed (a turn ended, a pull returned its reservation).
        self._slot_freed = asyncio.Event()
        self._stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        #: Turn slots promised to a pull in flight (its requests start once it returns).
        self._reserved = 0
        self._pulls: list[asyncio.Task[None]] = []
        self._progress: asyncio.Task[None] | None = None
        self._keeping_sessions: asyncio.Task[None] | None = None
        #: The sessions this worker holds, when its backend keeps them in its process (acp).
        self.sessions: HeldSessions | None = None
        #: Requests run to their final frame, and requests answered agent_unavailable unrun (redelivered).
        self.turns_run = 0
        self.lost_answered = 0

    @property
    def running(self) -> int:
        return len(self._running)

    async def start(self) -> None:
        """Connect, make the streams and the shared consumer, register, and start pulling; raises if
        the broker cannot be reached now."""
        config = self._config
        self._nc = await connect(self._url)
        self._js = self._nc.jetstream(timeout=REQUEST_TIMEOUT_SECONDS)
        try:
            await ensure_requests_stream(self._js, config)
            await self.publisher.start()
            subscription = await self._js.pull_subscribe(
                any_worker_subject(config.bus_requests_subject_prefix, config.agent_id),
                durable=shared_consumer(config.agent_id),
                stream=config.bus_requests_stream,
                config=_request_consumer(config),
            )
            subscriptions = [subscription]
            if config.backend in SESSION_BACKENDS:
                subscriptions.append(await self._own_subscription())
            await self._nc.subscribe(f"{config.bus_cancel_subject_prefix}.*", cb=self._on_cancel)
            await self._nc.subscribe(
                task_cancel_filter(config.bus_cancel_subject_prefix, config.agent_id), cb=self._on_task_cancel
            )
            await self.registration.start()
        except BaseException:
            await self.publisher.close(0)
            await self._nc.close()
            raise
        # The shared consumer's quota first: it gets what an even split leaves over.
        quotas = [config.bus_max_turns - (config.bus_max_turns // len(subscriptions)) * (len(subscriptions) - 1)]
        quotas += [max(1, config.bus_max_turns // len(subscriptions))] * (len(subscriptions) - 1)
        self._pulls = [
            asyncio.create_task(self._pull(each, quota), name="e2a-agent-pull")
            for each, quota in zip(subscriptions, quotas, strict=True)
        ]
        self._progress = asyncio.create_task(self._tell_progress(), name="e2a-agent-progress")
        if self.sessions is not None:
            self._keeping_sessions = asyncio.create_task(self._keep_sessions(), name="e2a-agent-sessions")
        log.info(
            "agent worker %s of agent %r takes requests from %s (%d turns at a time)",
            self.instance_id,
            config.agent_id,
            self._url,
            config.bus_max_turns,
        )

    async def _own_subscription(self) -> JetStreamContext.PullSubscription:
        """Claims on sessions, and this instance's own consumer: the requests of the sessions it holds.
        A killed worker's consumer goes away once inactive for the registry's TTL."""
        assert self._nc is not None and self._js is not None
        config = self._config
        owners = await SessionOwners.open(
            self._nc, bucket=config.sessions_bucket, ttl=config.registry_ttl_seconds, replicas=config.nats_replicas
        )
        self.sessions = HeldSessions(
            owners, agent_id=config.agent_id, instance_id=self.instance_id, max_sessions=config.acp_max_sessions
        )
        return await self._js.pull_subscribe(
            worker_subject(config.bus_requests_subject_prefix, config.agent_id, self.instance_id),
            durable=worker_consumer(config.agent_id, self.instance_id),
            stream=config.bus_requests_stream,
            config=_request_consumer(config, inactive_threshold=config.registry_ttl_seconds),
        )

    async def stop(self, grace: float) -> None:
        """Drain (see the module docstring): returns once every request taken is acked and the
        connections are closed."""
        self._stopping = True
        await self.registration.close()
        if self._pulls:
            await asyncio.wait(self._pulls)  # their requests, if any, are running now
        if self._tasks:
            _, late = await asyncio.wait(set(self._tasks), timeout=grace)
            for running in list(self._running.values()):
                if running.turn is not None:
                    running.turn.interrupt(_SHUTTING_DOWN)
            if late:
                await asyncio.wait(late, timeout=FINAL_FRAME_SECONDS)
        for task in (self._progress, self._keeping_sessions):
            if task is not None:
                task.cancel()
                await asyncio.wait((task,))
        await self._leave_sessions()
        await self._delete_own_consumer()
        await self.publisher.close(FINAL_FRAME_SECONDS)
        await self._backend.aclose()
        if self._nc is not None:
            with contextlib.suppress(OSError, nats.errors.Error):
                await self._nc.close()
        log.info("agent worker %s stopped", self.instance_id)

    async def _pull(self, subscription: JetStreamContext.PullSubscription, quota: int) -> None:
        """Fetch as many requests as there are free turn slots (at most ``quota``: the pulls of the
        shared consumer and of this worker's own share the slots), until the stop. The slots a fetch
        may fill are reserved while it waits, so that the pulls never take more requests than there
        are slots; a pull that had its turn lets a waiting one go first."""
        limit = self._config.bus_max_turns
        while not self._stopping:
            free = min(quota, limit - len(self._running) - self._reserved)
            if free <= 0:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            self._reserved += free
            try:
                messages = await subscription.fetch(free, timeout=PULL_SECONDS)
            except (nats.errors.TimeoutError, TimeoutError):
                messages = []
            except nats.errors.Error as exc:
                log.debug("pulling requests failed (%r); pulling again", exc)
                messages = []
                await asyncio.sleep(PULL_RETRY_SECONDS)
            finally:
                self._reserved -= free
            for message in messages:
                self._start(message)
            self._slot_freed.set()
            await asyncio.sleep(0)  # a pull waiting for the slots runs before this one takes them again

    def _start(self, message: Msg) -> None:
        task = asyncio.create_task(self._handle(message), name="e2a-agent-request")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, message: Msg) -> None:
        try:
            request = read_request(message.headers or {}, message.data)
        except E2AFieldError as exc:
            log.warning("a message on %s is no request of the bus (%s): terminated, unrun", message.subject, exc)
            await message.term()
            return
        if message.metadata.num_delivered > 1:
            await self._answer_lost(request, message)
            return
        if datetime.datetime.now(datetime.UTC) > request.start_by:
            log.info("request %s taken after its Start-By: dropped unrun (the gateway gave up)", request.request_id)
            await message.ack()
            return
        running = _Running(request, message)
        token = subject_token(request.request_id)
        self._running[token] = running  # the slot its pull reserved
        try:
            await self._notify(request, Notice.TAKEN)
            stored = await self._run(running)
            if stored:
                await message.ack()
            else:
                # Not stored: the broker's copy has no end. Delivered again, the request gets its
                # agent_unavailable final frame from whoever takes it (never a second run).
                log.error("request %s: its final frame was not stored; released for its lost-request answer", token)
                await message.nak()
        except nats.errors.Error as exc:
            log.warning("request %s: the broker failed while it ran (%r)", request.request_id, exc)
        except Exception:
            # Unacked: delivered again, it is answered agent_unavailable, not run twice.
            log.exception("request %s: the agent worker failed on it", request.request_id)
        finally:
            del self._running[token]
            for timer in running.timers:
                timer.cancel()
            self._slot_freed.set()

    async def _run(self, running: _Running) -> bool:
        """Run the request's turn; return whether its final frame was stored."""
        request = running.request
        envelope = request.envelope
        frames = FrameBuilder(envelope, self._backend.info, self._clock, log_frames=self._config.log_frames)
        output = _BrokerOutput(
            self.publisher,
            frames,
            silence=self._config.bus_progress_seconds,
            ended_elsewhere=lambda: self._ended_elsewhere(request),
        )
        try:
            prompt = checked_prompt(envelope, DEFAULT_CHAT_METHODS)
        except E2AFieldError as exc:
            invalid = frames.error(ErrorCode.INVALID_REQUEST, str(exc), {"field": exc.field})
            await output.write(invalid, frames.last_kind, None)
            assert output.final_stored is not None
            return await output.final_stored
        task = asyncio.current_task()
        assert task is not None
        turn = running.turn = Turn(task)
        turn.limit_time(self._limits)
        if request.deadline is not None:
            remaining = (request.deadline - datetime.datetime.now(datetime.UTC)).total_seconds()
            running.timers.append(asyncio.get_running_loop().call_later(max(remaining, 0), turn.interrupt, _DEADLINE))
        events = self._backend.stream(envelope, prompt)
        if self.sessions is not None and envelope.session_id:
            events = await self._in_session(envelope.session_id, events)
        # The stop interrupts a turn, it does not cancel it; a turn cancelled all the same (the event
        # loop torn down) leaves its request unacked: delivered again, it is answered agent_unavailable.
        try:
            await run_turn(turn, prompt, events, frames, output, self._limits)
        except asyncio.CancelledError:
            if not output.ended or task.cancelling():
                raise
            return True  # its final frame is the one that ended it: the request is done
        finally:
            turn.cancel_timers()
            await events.aclose()
        self.turns_run += 1
        assert output.final_stored is not None
        return await output.final_stored

    async def _in_session(self, session_id: str, events: AsyncGenerator[Event, None]) -> AsyncGenerator[Event, None]:
        """The turn's events in the session this worker now holds, after a ``session_restarted``
        frame when another instance held it: its backend has not got the session, it starts anew."""
        assert self.sessions is not None
        try:
            previous = await self.sessions.take(session_id)
        except (nats.errors.Error, TimeoutError, ClaimContendedError) as exc:
            # The turn runs all the same: only the gateways' choice of worker for the next one suffers.
            log.warning(
                "session %r could not be claimed (%r): its next request may reach another worker", session_id, exc
            )
            return events
        if previous is None:
            return events
        log.info("session %r was held by lost instance %s: it starts anew here", session_id, previous.instance_id)
        notice = Passthrough(
            ResponseKind.EXT,
            {
                "event": SESSION_RESTARTED,
                "session_id": session_id,
                "previous_instance": previous.instance_id,
                "instance": self.instance_id,
            },
        )
        return _after(notice, events)

    async def _keep_sessions(self) -> None:
        """Refresh the session claims with the registry heartbeat."""
        assert self.sessions is not None
        while True:
            await asyncio.sleep(self._config.registry_heartbeat_seconds)
            try:
                await self.sessions.refresh()
            except (nats.errors.Error, TimeoutError, ClaimContendedError) as exc:
                log.debug("session claims not refreshed (%r)", exc)

    async def _leave_sessions(self) -> None:
        if self.sessions is None or not len(self.sessions):
            return
        try:
            await self.sessions.release_all()
        except (nats.errors.Error, TimeoutError, ClaimContendedError) as exc:
            log.warning("session claims not released (%r): they expire with the registry's TTL", exc)

    async def _delete_own_consumer(self) -> None:
        """A clean stop deletes this instance's own consumer (a killed worker's goes when inactive)."""
        if self.sessions is None or self._js is None:
            return
        config = self._config
        try:
            await self._js.delete_consumer(
                config.bus_requests_stream, worker_consumer(config.agent_id, self.instance_id)
            )
        except (nats.errors.Error, TimeoutError) as exc:
            log.debug("own consumer not deleted (%r): it goes once inactive", exc)

    async def _ended_elsewhere(self, request: BusRequest) -> bool:
        """Whether the request's frame subject has a final frame (see ``_BrokerOutput``); False when
        the broker cannot say now (the frame is written then: the broker is failing it as well)."""
        assert self._js is not None
        config = self._config
        subject = frame_subject(config.nats_subject_prefix, request.envelope.session_id, request.request_id)
        try:
            last = await last_stored(self._js, config.nats_stream, subject)
        except (nats.errors.Error, TimeoutError) as exc:
            log.debug("request %s: its last stored frame cannot be read (%r)", request.request_id, exc)
            return False
        return last is not None and last.is_final

    async def _answer_lost(self, request: BusRequest, message: Msg) -> None:
        """A request delivered again: its worker was lost. Never run; answered agent_unavailable."""
        assert self._js is not None
        try:
            await end_lost_request(self._js, request.envelope, self._config, noticed_by="worker")
        except nats.errors.Error as exc:
            # Left unacked: delivered again after the ack wait, and answered then.
            log.warning("request %s: cannot answer it agent_unavailable now (%r)", request.request_id, exc)
            return
        self.lost_answered += 1
        await message.term()

    async def _notify(self, request: BusRequest, notice: Notice) -> None:
        assert self._nc is not None
        await self._nc.publish(request.reply_to, b"", headers=notice_headers(notice, self.instance_id))

    async def _tell_progress(self) -> None:
        """Every ``bus_progress_seconds``: a ``working`` notice and an in-progress ack per running turn."""
        while True:
            await asyncio.sleep(self._config.bus_progress_seconds)
            for running in list(self._running.values()):
                try:
                    await self._notify(running.request, Notice.WORKING)
                    await running.message.in_progress()
                except nats.errors.Error as exc:
                    log.debug("progress of request %s not sent (%r)", running.request.request_id, exc)

    async def _on_cancel(self, message: Msg) -> None:
        token = message.subject.rsplit(".", 1)[-1]
        running = self._running.get(token)
        if running is not None and running.turn is not None:
            log.debug("request %s cancelled by its gateway", running.request.request_id)
            running.turn.interrupt(_CANCELLED)

    async def _on_task_cancel(self, message: Msg) -> None:
        """Cancel the waiting task a gateway names, when this worker's backend holds it, and say so.
        Handled one at a time (nats-py runs a subscription's callbacks in turn): a backend's cancel
        is bounded (an ACP agent gets ``CANCEL_GRACE_SECONDS``), and cancels are rare."""
        try:
            task_id = read_task_cancel(message.subject, message.headers)
        except E2AFieldError as exc:
            log.warning("a message on %s is no task cancel (%s): ignored", message.subject, exc)
            return
        try:
            cancelled = await self._backend.cancel_task(task_id)
        except BackendError as exc:
            log.warning("waiting task %s could not be cancelled: %s", task_id, exc.message)
            reply = TaskCancelReply(TaskCancelOutcome.FAILED, self.instance_id, str(exc.code), exc.message)
        except Exception:
            log.exception("waiting task %s: the agent worker failed to cancel it", task_id)
            reply = TaskCancelReply(
                TaskCancelOutcome.FAILED, self.instance_id, ErrorCode.INTERNAL, "the agent worker failed; see its log"
            )
        else:
            if not cancelled:
                return  # held by another worker, or by none: their silence says so
            log.info("waiting task %s cancelled by its gateway", task_id)
            reply = TaskCancelReply(TaskCancelOutcome.CANCELLED, self.instance_id)
        if not message.reply:
            return
        with contextlib.suppress(nats.errors.Error):
            assert self._nc is not None
            await self._nc.publish(message.reply, reply.message.encode(), headers=task_cancel_reply_headers(reply))


async def _after(first: Event, events: AsyncGenerator[Event, None]) -> AsyncGenerator[Event, None]:
    """``first``, then ``events`` (closed with this generator)."""
    try:
        yield first
        async for event in events:
            yield event
    finally:
        await events.aclose()


_SHUTTING_DOWN = Interruption(
    ErrorCode.SERVER_SHUTTING_DOWN, "the agent worker stopped before the turn ended; the agent was stopped", {}
)
_CANCELLED = Interruption(ErrorCode.CLIENT_CANCELLED, "the client cancelled the call; the agent was stopped", {})
_DEADLINE = Interruption(ErrorCode.DEADLINE_EXCEEDED, "the call's deadline passed; the agent was stopped", {})
