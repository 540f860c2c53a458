"""The gateway's route to an agent's workers over the bus (``nats`` routes; docs/agent-bus.md).

``BusBackend`` is an ``AgentBackend``: a Chat turn routed to agent X publishes the request to X's
workers on JetStream and reads the frames the worker that takes it publishes, back into the events
they were made of (``chat.relay``), so the gateway's Chat servicer, limits and A2A front door work as
with a local backend. The frames are on the broker already (the worker published them), so the
gateway's frame sink does not publish them again (``publishes_frames``).

- A request of a session whose owner (``session_owners``) is live goes to that worker's own subject;
  any other to the subject every worker of X shares.
- No live worker of X in the agent registry (the gateway's ``LiveAgents`` view), or none takes the
  request (its ``taken`` notice) by Start-By: ``AgentUnavailableError`` (UNAVAILABLE) before any frame.
  A request nobody took is deleted from the requests' stream then (by the stream sequence its publish
  was stored at): one sent to a worker that died just before would otherwise wait there, taken by no
  one, until the stream's max age. A worker that takes it meanwhile drops it (past its Start-By).
  A request sent to the worker that holds its session and not taken by it is sent again, once, to
  any worker (``AGAIN_SUFFIX``): that worker may be gone while its registry entry and its claim of
  the session live on (until their TTL); the worker that takes it starts the session anew.
- After ``taken``, no notice and no frame for ``MISSED_NOTICES`` progress intervals: the worker is
  lost; the gateway writes the request's ``agent_unavailable`` final frame on the broker
  (``lost_requests``) and the turn ends with it, unless the worker stored a frame meanwhile (it was
  only silent: the turn goes on with that frame).
- The frames are read as the worker publishes them, on a plain NATS subscription to the request's
  frame subject made before the request is published: no consumer to create, and no JetStream
  delivery hop, on the way to the first frame. The turn hands frames on by ``sequence``, each once:
  one that comes early waits for those before it, one that comes again (the worker's publisher
  sends a frame again when its ack is late) is dropped.
- A plain subscription misses what is published while its connection is away, or what it drops as
  a slow consumer. So on any sign of a loss (a frame ahead of the next one, the connection back after
  a loss of it, a slow-consumer drop, or silence while the request's final frame is stored) the turn
  reads the request's frames from JetStream instead: an ordered consumer from the request's first
  frame on, dropping those it has. nats-py's ordered consumer checks its sequence only on idle
  heartbeats (nats.go checks every message), so frames pushed while the connection was away are
  skipped and the next one handed on; when the next one is still missing a progress interval later,
  the turn reads the frames again on a new consumer (``_read_frames_again``).
- A turn closed before its final frame (the client cancelled, a limit) cancels the request on
  ``e2a.cancel.<request token>``; the worker ends it with its own final frame on the broker.
- A task that waits for its client (a turn that ended ``e2a.input_required``) waits in the worker
  that ran it: ``cancel_task`` asks every worker of the agent on ``e2a.cancel.task.<agent>.<task>``;
  the one whose backend holds the task cancels it and replies. No reply within
  ``bus_task_cancel_seconds`` (or no worker listening at all): no worker holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import enum
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import NO_RESPONDERS_STATUS
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy, Header

from e2a_grpc.broker.agent_records import AgentRecord
from e2a_grpc.broker.agent_requests import (
    MISSED_NOTICES,
    TRACEPARENT_HEADER,
    BusRequest,
    TaskCancelOutcome,
    TaskCancelReply,
    any_worker_subject,
    cancel_subject,
    read_notice,
    read_task_cancel_reply,
    request_message,
    task_cancel_headers,
    task_cancel_subject,
    with_request_id,
    worker_subject,
)
from e2a_grpc.broker.connection import connect
from e2a_grpc.broker.frame_messages import frame_subject
from e2a_grpc.broker.frame_reader import FrameReader
from e2a_grpc.broker.live_agents import LiveAgents
from e2a_grpc.broker.lost_requests import end_lost_request
from e2a_grpc.broker.request_stream import ensure_requests_stream
from e2a_grpc.broker.session_owners import SessionOwners, owning_worker
from e2a_grpc.chat.call_scope import CallScope, current_call
from e2a_grpc.chat.events import AgentBackend, BackendError, BackendInfo, Event
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.chat.relay import relay_frames
from e2a_grpc.errors import AgentUnavailableError, E2AFieldError
from e2a_grpc.model import E2AEnvelope, E2AResponse, ErrorCode, SourceProtocol
from e2a_grpc.settings import ServerSettings

T = TypeVar("T")

log = logging.getLogger(__name__)

#: What the gateway waits past Start-By for a ``taken`` notice (its trip from the worker).
TAKEN_GRACE_SECONDS = 1.0
#: The longest a JetStream request of the gateway (stream set-up, publish, registry read) waits.
REQUEST_TIMEOUT_SECONDS = 5.0
#: ``BackendInfo.name`` of a bus route (its frames' provenance converter: ``e2a_grpc.chat:nats``).
BUS_BACKEND_NAME = "nats"
#: JetStream's error code for a message delete that failed, e.g. because the message is gone (acked).
_MSG_DELETE_FAILED = 10057


class AgentBus:
    """The gateway's connection to the bus and its live view of the registry, made on the first turn
    and shared by the turns of every ``nats`` route of the server (``make_bus_backends``): one
    connection and one watch of the registry, however many agents are routed to the bus. Closing it
    again does nothing; a turn after the close opens it again."""

    def __init__(self, config: ServerSettings) -> None:
        self._config = config
        self._lock = asyncio.Lock()
        self.nc: NatsClient | None = None
        self.js: JetStreamContext | None = None
        self.live: LiveAgents | None = None
        self.owners: SessionOwners | None = None
        #: The turns reading frames now: told when their connection may have lost some.
        self.turns: set[_BusTurn] = set()

    async def ready(self) -> tuple[NatsClient, JetStreamContext, LiveAgents, SessionOwners]:
        async with self._lock:
            if self.nc is None or self.js is None or self.live is None or self.owners is None:
                config = self._config
                assert config.bus_nats is not None  # BusBackend checks it
                nc = await connect(config.bus_nats, reconnected_cb=self._reconnected, error_cb=self._connection_error)
                try:
                    js = nc.jetstream(timeout=REQUEST_TIMEOUT_SECONDS)
                    await ensure_requests_stream(js, config)
                    owners = await SessionOwners.open(
                        nc,
                        bucket=config.sessions_bucket,
                        ttl=config.registry_ttl_seconds,
                        replicas=config.nats_replicas,
                    )
                    live = await LiveAgents.open(
                        config.bus_nats,
                        bucket=config.registry_bucket,
                        ttl=config.registry_ttl_seconds,
                        replicas=config.nats_replicas,
                    )
                except BaseException:
                    await nc.close()
                    raise
                self.nc, self.js, self.live, self.owners = nc, js, live, owners
            return self.nc, self.js, self.live, self.owners

    async def _reconnected(self) -> None:
        # What was published while the connection was away never reaches a plain subscription.
        for turn in self.turns:
            turn.frames_may_be_lost()

    async def _connection_error(self, error: Exception) -> None:
        if isinstance(error, nats.errors.SlowConsumerError):
            for turn in self.turns:
                if turn.reads(error.sub):
                    turn.frames_may_be_lost()

    async def close(self) -> None:
        if self.live is not None:
            await self.live.close()
        if self.nc is not None:
            with contextlib.suppress(OSError, nats.errors.Error):
                await self.nc.close()
        self.nc = self.js = self.live = self.owners = None


class BusBackend:
    """Agent ``agent_id``'s workers on the bus, as a Chat backend (see the module docstring)."""

    #: The frames of its turns are on the broker already: the gateway's frame sink skips them.
    publishes_frames = True

    def __init__(self, agent_id: str, config: ServerSettings, bus: AgentBus | None = None) -> None:
        if not config.bus_nats:
            raise ValueError(f"agent {agent_id!r} is routed to nats: the gateway needs --bus-nats")
        self.agent_id = agent_id
        self.info = BackendInfo(BUS_BACKEND_NAME, SourceProtocol.E2A, {"agent_id": agent_id})
        self._config = config
        #: The bus this route's turns use: ``bus``, shared with the server's other nats routes, or its own.
        self.bus = bus or AgentBus(config)
        self._origin = f"nats agent {agent_id!r}"

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        # The call this turn serves (Chat's): its request id (the one the client's frames carry when
        # the request had none), deadline and trace context go with the request.
        scope = current_call()
        envelope = with_request_id(envelope, None if scope is None else scope.request_id)
        try:
            nc, js, live, owners = await self.bus.ready()
        except (nats.errors.Error, OSError, TimeoutError) as exc:
            raise AgentUnavailableError(self.agent_id, f"the agent bus cannot be reached ({exc!r})") from None
        workers = live.workers(self.agent_id)
        if not workers:
            raise AgentUnavailableError(self.agent_id, "no live worker in the agent registry")
        subject = await self._subject(envelope, owners, workers)
        any_worker = any_worker_subject(self._config.bus_requests_subject_prefix, self.agent_id)
        try:
            async with contextlib.aclosing(self._turn(nc, js, envelope, subject, scope)) as events:
                async for event in events:
                    yield event
        except _NotTaken:
            if subject == any_worker:
                raise
            # The worker that holds the session did not take it: gone (its registry entry and claim
            # outlive it until their TTL), or stuck. Any worker takes it now, and starts the session anew.
            log.info(
                "request %s: the worker holding session %r did not take it; sending it to any worker of %r",
                envelope.request_id,
                envelope.session_id,
                self.agent_id,
            )
            async with contextlib.aclosing(self._turn(nc, js, envelope, any_worker, scope, sent_again=True)) as events:
                async for event in events:
                    yield event

    async def _turn(
        self,
        nc: NatsClient,
        js: JetStreamContext,
        envelope: E2AEnvelope,
        subject: str,
        scope: CallScope | None,
        *,
        sent_again: bool = False,
    ) -> AsyncGenerator[Event, None]:
        """The events of the request sent to ``subject``; ``_NotTaken`` before any when no worker takes it."""
        turn = _BusTurn(self.agent_id, self._config, self.bus, nc, js, envelope, subject, scope, sent_again)
        try:
            try:
                await turn.open()
            except (nats.errors.Error, TimeoutError) as exc:
                raise AgentUnavailableError(self.agent_id, f"the request cannot be published ({exc!r})") from None
            async for event in relay_frames(turn.frames(), envelope, self._origin):
                yield event
        finally:
            await turn.close()

    async def _subject(self, envelope: E2AEnvelope, owners: SessionOwners, workers: list[AgentRecord]) -> str:
        """Where the request goes: the worker that holds its session when that worker is live, else
        any worker (which starts the session anew and says so)."""
        prefix = self._config.bus_requests_subject_prefix
        if envelope.session_id:
            try:
                owner = await owners.owner(self.agent_id, envelope.session_id)
            except ValueError:
                owner = None  # a session id no claim can have (too long for a key): no worker holds it
            except (nats.errors.Error, TimeoutError) as exc:
                raise AgentUnavailableError(self.agent_id, f"session ownership cannot be read ({exc!r})") from None
            holder = owning_worker(owner, workers)
            if holder is not None:
                return worker_subject(prefix, self.agent_id, holder.instance_id)
        return any_worker_subject(prefix, self.agent_id)

    async def cancel_task(self, task_id: str) -> bool:
        """Ask the agent's workers to cancel ``task_id``: true once the one holding it says so. A
        failure a worker reports is raised only when no other worker cancelled the task by the timeout."""
        try:
            nc, _, _, _ = await self.bus.ready()
        except (nats.errors.Error, OSError, TimeoutError) as exc:
            raise BackendError(
                ErrorCode.AGENT_UNAVAILABLE, f"the agent bus cannot be reached to cancel task {task_id} ({exc!r})"
            ) from None
        replies: asyncio.Queue[Msg] = asyncio.Queue()

        async def replied(message: Msg) -> None:
            replies.put_nowait(message)

        inbox = nc.new_inbox()
        subject = task_cancel_subject(self._config.bus_cancel_subject_prefix, self.agent_id, task_id)
        failures: list[TaskCancelReply] = []
        try:
            subscription = await nc.subscribe(inbox, cb=replied)
            try:
                await nc.publish(subject, b"", reply=inbox, headers=task_cancel_headers(task_id))
                async with asyncio.timeout(self._config.bus_task_cancel_seconds):
                    while True:
                        message = await replies.get()
                        if (message.headers or {}).get(Header.STATUS) == NO_RESPONDERS_STATUS:
                            return False  # no worker of the agent listens: none holds the task
                        reply = read_task_cancel_reply(message.headers, message.data)
                        if reply is None:
                            continue
                        if reply.outcome is TaskCancelOutcome.CANCELLED:
                            log.debug(
                                "task %s of agent %r cancelled by worker %s", task_id, self.agent_id, reply.worker
                            )
                            return True
                        failures.append(reply)
            finally:
                with contextlib.suppress(nats.errors.Error):
                    await subscription.unsubscribe()
        except TimeoutError:
            pass  # the workers that hold no such task do not reply
        except nats.errors.Error as exc:
            raise BackendError(
                ErrorCode.AGENT_UNAVAILABLE, f"the cancel of task {task_id} cannot be sent on the bus ({exc!r})"
            ) from None
        if failures:
            failed = failures[0]
            raise BackendError(
                failed.code or ErrorCode.INTERNAL,
                f"worker {failed.worker} of agent {self.agent_id!r} could not cancel task {task_id}: {failed.message}",
                {"worker": failed.worker},
            )
        return False

    async def aclose(self) -> None:
        await self.bus.close()  # a shared bus: the server closes every route at once


class _BusTurn:
    """One request on the bus: its subscriptions, its publication, and its frames as they come."""

    def __init__(
        self,
        agent_id: str,
        config: ServerSettings,
        bus: AgentBus,
        nc: NatsClient,
        js: JetStreamContext,
        envelope: E2AEnvelope,
        subject: str,
        scope: CallScope | None,
        sent_again: bool,
    ) -> None:
        self._agent_id = agent_id
        self._subject = subject
        self._sent_again = sent_again
        self._scope = scope
        self._config = config
        self._bus = bus
        self._nc = nc
        self._js = js
        self.envelope = envelope
        assert envelope.request_id is not None
        self.request_id = envelope.request_id
        self._frame_subject = frame_subject(config.nats_subject_prefix, envelope.session_id, self.request_id)
        #: Notices and frames as they come; ``_MAY_BE_LOST`` when the plain subscription may have missed some.
        self._arrivals: asyncio.Queue[Msg | _Signal] = asyncio.Queue()
        #: The plain subscription to the request's frames, until the turn reads them from JetStream.
        self._live_frames: Subscription | None = None
        #: The JetStream consumer of the request's frames, once the turn reads them from there.
        self._stored_frames: JetStreamContext.PushSubscription | None = None
        #: Reading the frames from JetStream (``_read_frames_again``), and whether the last reading started.
        self._reading_again: asyncio.Task[None] | None = None
        self._read_again = False
        self._reader = FrameReader()
        #: The sequence of the next frame to hand on.
        self._next_sequence = 0
        self._notices: Subscription | None = None
        self._published = False
        #: Where the requests' stream stored the request (its publish's ack).
        self._request_sequence = 0
        self._ended = False

    def reads(self, subscription: Subscription) -> bool:
        """Whether ``subscription`` is one this turn reads its frames from."""
        return subscription is self._live_frames or subscription is self._stored_frames

    def frames_may_be_lost(self) -> None:
        """The connection may have missed frames of this request: read them from JetStream."""
        self._arrivals.put_nowait(_MAY_BE_LOST)

    async def open(self) -> None:
        """Subscribe to the request's notices and frames, then publish it."""
        config = self._config
        inbox = self._nc.new_inbox()
        # Both sent on the connection ahead of the request, so the server has them before any worker
        # can notify or publish a frame.
        self._notices = await self._nc.subscribe(inbox, cb=self._arrived)
        self._live_frames = await self._nc.subscribe(self._frame_subject, cb=self._arrived)
        self._bus.turns.add(self)
        now = datetime.datetime.now(datetime.UTC)
        scope = self._scope
        remaining = None if scope is None else scope.time_remaining()
        request = BusRequest(
            envelope=self.envelope,
            reply_to=inbox,
            start_by=now + datetime.timedelta(seconds=config.bus_start_by_seconds),
            deadline=None if remaining is None else now + datetime.timedelta(seconds=remaining),
            traceparent=None if scope is None else dict(scope.trace_metadata).get(TRACEPARENT_HEADER),
        )
        message = request_message(
            request,
            self._subject,
            type_prefix=config.cloudevents_type_prefix,
            source=config.cloudevents_source,
            sent_again=self._sent_again,
        )
        stored = await _until_start_by(
            config.bus_start_by_seconds,
            lambda: self._js.publish(
                message.subject, message.payload, stream=config.bus_requests_stream, headers=message.headers
            ),
        )
        self._request_sequence = stored.seq
        self._published = True

    async def _arrived(self, message: Msg) -> None:
        self._arrivals.put_nowait(message)

    def _suspect_loss(self) -> float:
        """Read the request's frames from JetStream, in the background unless that is under way;
        returns when, to look again a progress interval later."""
        if self._reading_again is None or self._reading_again.done():
            self._reading_again = asyncio.create_task(self._read_frames_again(), name="e2a-bus-frames-again")
        return asyncio.get_running_loop().time()

    async def _read_frames_again(self) -> None:
        """A new ordered consumer of the request's frames from its first on (see the module docstring),
        then the subscriptions it replaces dropped; the frames the turn has are dropped as they come
        again. JetStream may not answer now (a cluster electing leaders): the subscriptions stay, and
        the turn tries again a progress interval later."""
        log.debug("request %s: a frame may be missing; reading its frames from JetStream", self.request_id)
        self._read_again = False
        config = self._config
        try:
            stored = await self._js.subscribe(
                self._frame_subject,
                stream=config.nats_stream,
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.ALL,
                # nats-py replaces an ordered consumer after two missed heartbeats (5 s each by default):
                # one on a NATS node that is gone must be replaced well within the silence that means a
                # lost worker (MISSED_NOTICES progress intervals), or a node's loss reads as the worker's.
                idle_heartbeat=config.bus_progress_seconds / 2,
                cb=self._arrived,
            )
        except (nats.errors.Error, TimeoutError) as exc:
            log.debug("request %s: its frames cannot be read from JetStream now (%r)", self.request_id, exc)
            return
        replaced = (self._stored_frames, self._live_frames)
        self._stored_frames, self._live_frames = stored, None
        self._read_again = True
        for subscription in replaced:
            if subscription is not None:
                with contextlib.suppress(nats.errors.Error):
                    await subscription.unsubscribe()

    def _look_again(self, ahead: dict[int, E2AResponse]) -> float | None:
        """A progress interval after a frame seemed missing: read the frames again while one still is
        (or the last reading could not start); else stop looking."""
        if ahead or not self._read_again:
            return self._suspect_loss()
        return None

    async def frames(self) -> AsyncIterator[E2AResponse]:
        """The request's frames as the worker publishes them, up to its final frame; raises
        ``AgentUnavailableError`` when no worker takes it, and ends with the lost-request frame when
        its worker goes silent."""
        config = self._config
        loop = asyncio.get_running_loop()
        take_by = loop.time() + config.bus_start_by_seconds + TAKEN_GRACE_SECONDS
        silence = MISSED_NOTICES * config.bus_progress_seconds
        taken = False
        #: Frames ahead of the next one, by sequence, and since when a frame may be missing.
        ahead: dict[int, E2AResponse] = {}
        missing_since: float | None = None
        heard_at = loop.time()  # the last notice or frame (any message of the request)
        while True:
            timeout = (heard_at + silence if taken else take_by) - loop.time()
            if missing_since is not None:
                timeout = min(timeout, missing_since + config.bus_progress_seconds - loop.time())
            try:
                arrival = await self._next_arrival(timeout)
            except TimeoutError:
                if missing_since is not None and loop.time() - missing_since >= config.bus_progress_seconds:
                    missing_since = self._look_again(ahead)
                    continue
                if not taken:
                    await self._withdraw()
                    raise _NotTaken(
                        self._agent_id,
                        f"no live worker took the request within {config.bus_start_by_seconds:g} s",
                    ) from None
                lost = await end_lost_request(self._js, self.envelope, config, noticed_by="gateway")
                if lost is not None:
                    self._ended = True
                    yield lost
                    return
                # A final frame, or the silent worker's next frame, is stored: on its way here, or
                # missed by the plain subscription.
                heard_at = loop.time()
                if self._stored_frames is None:
                    missing_since = self._suspect_loss()
                continue
            if arrival is _MAY_BE_LOST:
                missing_since = self._suspect_loss()
                continue
            assert isinstance(arrival, Msg)
            taken = True
            heard_at = loop.time()
            if missing_since is not None and loop.time() - missing_since >= config.bus_progress_seconds:
                missing_since = self._look_again(ahead)
            if read_notice(arrival.headers) is not None:
                continue
            frame = _frame(self._reader, arrival)
            if frame is None or frame.sequence < self._next_sequence:
                continue  # no frame, or one handed on already (sent again, or read again)
            ahead[frame.sequence] = frame
            while (ready := ahead.pop(self._next_sequence, None)) is not None:
                self._next_sequence += 1
                if ready.is_final:
                    self._ended = True
                yield ready
                if ready.is_final:
                    return
            if not ahead:
                missing_since = None
            elif missing_since is None:
                # On the plain subscription the next frame was lost (or is late, sent again after a late
                # ack): the stream's copy is read at once. An ordered consumer's is waited for first.
                missing_since = self._suspect_loss() if self._stored_frames is None else loop.time()

    async def _withdraw(self) -> None:
        """Nobody took the request by its Start-By: delete it from the requests' stream (see the module
        docstring). It is gone already when a worker took it just then and dropped it."""
        stream = self._config.bus_requests_stream
        try:
            await self._js.delete_msg(stream, self._request_sequence)
        except (nats.errors.Error, TimeoutError) as exc:
            if not (isinstance(exc, nats.js.errors.APIError) and exc.err_code == _MSG_DELETE_FAILED):
                log.warning(
                    "request %s, which nobody took, was not deleted from %s (%r): it stays until the stream's max age",
                    self.request_id,
                    stream,
                    exc,
                )

    async def _next_arrival(self, timeout: float) -> Msg | _Signal:
        """The next notice or frame; TimeoutError when none comes within ``timeout`` seconds."""
        if not self._arrivals.empty():
            # No timer to arm and cancel for a message already here (most frames of a busy stream).
            return self._arrivals.get_nowait()
        async with asyncio.timeout(max(timeout, 0)):
            return await self._arrivals.get()

    async def close(self) -> None:
        """Cancel the request if it has not ended, and drop the subscriptions."""
        self._bus.turns.discard(self)
        if self._reading_again is not None:
            self._reading_again.cancel()
            await asyncio.wait((self._reading_again,))
        if self._published and not self._ended:
            with contextlib.suppress(nats.errors.Error):
                await self._nc.publish(cancel_subject(self._config.bus_cancel_subject_prefix, self.request_id))
        for subscription in (self._live_frames, self._stored_frames, self._notices):
            if subscription is not None:
                with contextlib.suppress(nats.errors.Error):
                    await subscription.unsubscribe()


class _NotTaken(AgentUnavailableError):
    """No worker took the request by its Start-By (it is withdrawn from the stream)."""


class _Signal(enum.Enum):
    """What a turn's arrivals carry besides messages."""

    MAY_BE_LOST = "frames may be lost"


_MAY_BE_LOST = _Signal.MAY_BE_LOST


#: What a JetStream publish or request raises while the stream has no leader to answer now (a
#: cluster electing one: a new stream, a node lost); tried again, it may work.
_NOT_ANSWERED_NOW = (
    nats.errors.TimeoutError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
)


async def _until_start_by(start_by_seconds: float, attempt: Callable[[], Awaitable[T]]) -> T:
    """``attempt()``, made again while JetStream does not answer, until the request's Start-By. Safe
    for the request's publish: its ``Nats-Msg-Id`` stores a publish made twice once."""
    give_up = time.monotonic() + start_by_seconds
    while True:
        try:
            return await attempt()
        except _NOT_ANSWERED_NOW:
            if time.monotonic() >= give_up:
                raise
            log.debug("JetStream did not answer the request's publish; trying again until its Start-By")


def _frame(reader: FrameReader, message: Msg) -> E2AResponse | None:
    """A frame message's record (None, logged: a message on the subject that is no frame)."""
    try:
        return reader.read(message.headers or {}, message.data)
    except E2AFieldError as exc:
        log.warning("a message on %s is no E2A frame (%s): skipped", message.subject, exc)
        return None


def make_bus_backends(agent_ids: Iterable[str], settings: ServerSettings) -> dict[str, AgentBackend]:
    """The routes of ``agent_ids`` to their workers on the bus (the routing table's ``nats`` targets),
    sharing one ``AgentBus``."""
    bus = AgentBus(settings)
    return {agent_id: BusBackend(agent_id, settings, bus) for agent_id in agent_ids}
