"""The A2A server's agent executor: one Chat backend turn per A2A message.

A message becomes an E2A envelope (the FromA2A adapter, with the message's parts as the prompt's
content blocks, ``protocols.parts``: text, data, raw bytes and URLs, each of which an a2a backend
forwards as it came, and the A2A contextId as the session, so a context keeps its ACP session). The
turn is Chat's (``e2a_grpc.chat.turn``: the same frames, limits and final frame).

How its frames become A2A events depends on what the backend's agent speaks:

* An E2A-native backend (echo, acp): the task is submitted and working when the turn starts, and each
  frame becomes A2A events through the project's E2A -> A2A projection (``conversion.to_a2a_stream``,
  what the ConversionService's ToA2AStream does): an ``e2a.chunk`` is an artifact update (the first
  chunk of each artifact opens it, ``append`` false, as A2A requires), the final ``e2a.complete`` /
  ``e2a.error`` the completed / failed status, ``e2a.input_required`` the input-required (or
  auth-required) status with the question as its message. So the server and ToA2AStream agree by
  construction.
* A remote A2A agent (the a2a backend's ``a2a.stream_event`` frames): its own events are the task's,
  as it sent them, re-addressed to this server's task and context ids (the only difference): its task
  snapshot is the task (created when its first event arrives), its status updates every state and
  message, its artifact updates every part, ``append`` and ``lastChunk``, its metadata; a Message
  reply stays a Message. The final frame adds a status only when the agent's events did not end the
  turn themselves (the stream broke off, a limit of this server).

With a routing table, each message reaches the agent its request's ``metadata.agent_id`` names (the
card has a skill per agent, its id the agent id), else the default agent, as Chat routes by the
envelope's ``agent_id``; a message continuing a task names its agent again, as a Chat request does.

A task that ends waiting (input-required, auth-required) stays open: the SDK keeps it, a message with
its taskId continues it (the SDK appends the message to its history) and reaches the agent's own task
(the a2a backend continues the remote task it waits in). Cancel (A2A CancelTask) stops a running
turn at its current await: the backend's cleanup tells the agent (ACP ``session/cancel``, A2A
CancelTask) before the task is marked canceled; of a waiting task it asks the backend to cancel the
agent's task.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf import json_format

from e2a_grpc import conversion
from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error
from e2a_grpc.backends.routes import AgentRoutes
from e2a_grpc.chat.events import AgentBackend, BackendError, Delta, Event, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.prompt import Prompt, read_prompt
from e2a_grpc.chat.turn import Turn, TurnLimits, run_turn
from e2a_grpc.errors import E2AValueError
from e2a_grpc.model import E2AEnvelope, E2AResponse, ErrorCode, ResponseKind, ResponseStatus, SourceProtocol
from e2a_grpc.protocols import a2a
from e2a_grpc.protocols import parts as content
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)

#: Task states in which the agent waits for the client; a message on the task continues it.
INTERRUPTED_STATES = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})

#: Task states after which nothing more happens to a task.
TERMINAL_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


def prompt_blocks(message: Message) -> list[dict[str, Any]]:
    """The ACP content blocks of an A2A message, one per part (``protocols.parts``)."""
    parts = json_format.MessageToDict(message).get("parts", [])
    blocks = [content.acp_block(part, f"message.parts[{index}]") for index, part in enumerate(parts)]
    if all(block == _EMPTY_TEXT for block in blocks):
        raise E2AValueError("message.parts", "no content: the agent needs a part that is not empty text")
    return blocks


_EMPTY_TEXT = {"type": "text", "text": ""}


def turn_envelope(
    message: Message,
    task_id: str,
    context_id: str,
    accepted_output_modes: list[str],
    metadata: dict[str, Any] | None,
    agent_task_id: str | None = None,
    blocks: list[dict[str, Any]] | None = None,
) -> E2AEnvelope:
    """The envelope of one turn: the A2A SendMessage through the FromA2A adapter, the parts as the prompt.

    The A2A task is the request (frames and their A2A projection name it), not a task of the agent:
    a remote A2A agent names its own tasks; ``agent_task_id`` is the agent's task this turn continues
    (one that waits for the client). The context is the session, so turns of one context reach the
    same backend session. ``blocks``: the message's ``prompt_blocks`` when the caller has them.
    """
    envelope = a2a.envelope_from_a2a_send_message(
        task_id=agent_task_id,
        context_id=context_id,
        message_body={},  # the message is the prompt: its parts as content blocks replace the params below
        metadata=metadata,
        configuration={"acceptedOutputModes": accepted_output_modes} if accepted_output_modes else None,
    )
    return replace(
        envelope,
        request_id=task_id,
        session_id=context_id,
        message_id=message.message_id or None,
        params={"content_blocks": prompt_blocks(message) if blocks is None else blocks},
    )


class TurnSlots:
    """The bound on backend turns running at once (``a2a_max_running_tasks``).

    A send takes a slot before the SDK creates its task (``reserve``, keyed by message id) and its
    turn claims it when it starts, so two sends cannot both pass the check for the last slot.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self._reserved: Counter[str] = Counter()

    def reserve(self, key: str) -> None:
        taken = self.running + self._reserved.total()
        if taken >= self.limit:
            raise a2a_error(
                FrontDoorError.CAPACITY_EXHAUSTED,
                f"all {self.limit} task slots of this server are busy; retry later",
                limit=self.limit,
            )
        self._reserved[key] += 1

    def release_reservation(self, key: str) -> None:
        """The send is over: a reservation its turn did not claim (it failed before) is given back."""
        if self._reserved[key] > 0:
            self._reserved[key] -= 1
        if not self._reserved[key]:
            del self._reserved[key]

    def claim(self, key: str) -> None:
        self.release_reservation(key)
        self.running += 1

    def finish(self) -> None:
        self.running -= 1


#: ``ServerCallContext.state`` key the request handler sets on a blocking send (the caller waits for
#: the task's end, and streams nothing).
BLOCKING_SEND = "e2a_blocking_send"
#: ``ServerCallContext.state`` key of the send's ``Prompt``, which the handler's prompt check read: the
#: turn takes it rather than converting the message and reading its prompt again.
PROMPT = "e2a_prompt"

#: The key of an A2A request's ``metadata`` that names the agent it is for (the envelope's ``agent_id``).
AGENT_ID_METADATA_KEY = "agent_id"


def requested_agent(metadata: dict[str, Any]) -> str | None:
    """The agent a request's metadata names; ``None``: the default agent."""
    agent_id = metadata.get(AGENT_ID_METADATA_KEY)
    if agent_id is not None and (not isinstance(agent_id, str) or not agent_id):
        raise E2AValueError(f"metadata.{AGENT_ID_METADATA_KEY}", "must be a non-empty string: an agent id")
    return agent_id


#: How many waiting tasks' agent task ids the executor remembers (the oldest is forgotten first: its
#: continuation then starts a new task of the agent).
MAX_WAITING_TASKS = 10_000


class BackendExecutor(AgentExecutor):
    """Runs a backend turn per message and publishes its frames as A2A events."""

    def __init__(
        self, backend: AgentBackend, settings: ServerSettings, slots: TurnSlots, routes: AgentRoutes | None = None
    ) -> None:
        #: Every message's backend, without a routing table.
        self.backend = backend
        #: The routing table's backends, by agent id.
        self.routes = routes
        self.slots = slots
        self._limits = TurnLimits.from_settings(settings)
        self._clock = UtcClock()
        #: The running turn of each task, for cancel.
        self._turns: dict[str, asyncio.Task[None]] = {}
        self._cancelled: set[str] = set()
        #: Tasks waiting for the client -> the backend they wait in, and the agent's own task id (None:
        #: the agent names none).
        self._waiting: OrderedDict[str, tuple[AgentBackend, str | None]] = OrderedDict()
        #: Records that this instance runs a task's turn, before it starts (``leases``; with a database).
        self.record_owner: Callable[[str], Awaitable[None]] | None = None

    def backend_for(self, metadata: dict[str, Any]) -> AgentBackend:
        """The backend of the agent a request's metadata names (``requested_agent``); raises
        ``UnknownAgentError`` for an agent the routing table does not have. Without a table the
        metadata is not read: every request reaches the one backend, as before tables."""
        if self.routes is None:
            return self.backend
        return self.routes.backend_for(requested_agent(metadata))

    def check_prompt(self, message: Message) -> Prompt:
        """The message's prompt (its ``prompt_blocks``, as the turn's envelope carries them); refuse a
        message that cannot be a prompt (``E2AFieldError``), or a prompt bigger than Chat takes
        (``chat_max_prompt_bytes``)."""
        prompt = read_prompt(E2AEnvelope(params={"content_blocks": prompt_blocks(message)}))
        size = prompt.size_bytes
        limit = self._limits.max_prompt_bytes
        if size > limit:
            raise a2a_error(
                ErrorCode.PROMPT_TOO_LARGE,
                f"the prompt has {size} bytes; this server takes at most {limit}",
                prompt_bytes=size,
                max_prompt_bytes=limit,
            )
        return prompt

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task_id, context_id = context.task_id, context.context_id
        assert message is not None and task_id and context_id  # the SDK's request handler sets them
        self.slots.claim(message.message_id)
        try:
            metadata = context.metadata  # the SDK converts the request's Struct on every read
            backend = self.backend_for(metadata)  # the handler refused an unknown agent
            if self.record_owner is not None:
                await self.record_owner(task_id)
            configuration = context.configuration
            prompt: Prompt | None = context.call_context.state.get(PROMPT)
            envelope = turn_envelope(
                message,
                task_id,
                context_id,
                list(configuration.accepted_output_modes) if configuration else [],
                metadata or None,
                agent_task_id=self._agent_task_waiting(task_id, backend),
                blocks=None if prompt is None else prompt.blocks or [],  # a new list, not NO_PROMPT's
            )
            frames = FrameBuilder(envelope, backend.info, self._clock)
            publisher = _Publisher(
                task_id, context_id, event_queue, message, frames, task_exists=context.current_task is not None
            )
            # A remote A2A agent's events are the task's own (see the module docstring).
            if backend.info.source_protocol != SourceProtocol.A2A:
                await publisher.start_work()
            # A blocking send waits for the answer alone (see AgentBackend.stream); the handler marks it.
            incremental = not context.call_context.state.get(BLOCKING_SEND, False)
            turn = asyncio.create_task(self._turn(backend, envelope, prompt, frames, publisher, incremental))
            self._turns[task_id] = turn
            try:
                await turn
            except asyncio.CancelledError:
                if task_id not in self._cancelled:
                    raise
                # Stopped by cancel, which writes the canceled status.
            if publisher.waiting:
                self._remember_waiting(task_id, backend, publisher.agent_task_id)
        finally:
            self._turns.pop(task_id, None)
            self._cancelled.discard(task_id)
            self.slots.finish()

    def _agent_task_waiting(self, task_id: str, backend: AgentBackend) -> str | None:
        """The agent's own task a message on a waiting task continues, when it reaches the backend the
        task waits in (a message for another agent starts a task of that agent)."""
        waiting = self._waiting.pop(task_id, None)
        return waiting[1] if waiting is not None and waiting[0] is backend else None

    def _remember_waiting(self, task_id: str, backend: AgentBackend, agent_task_id: str | None) -> None:
        self._waiting[task_id] = (backend, agent_task_id)
        if len(self._waiting) > MAX_WAITING_TASKS:
            forgotten, _ = self._waiting.popitem(last=False)
            log.info("forgot the agent's task of waiting task %s (over %d waiting tasks)", forgotten, MAX_WAITING_TASKS)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        assert task_id and context_id
        turn = self._turns.get(task_id)
        if turn is not None:
            self._cancelled.add(task_id)
            turn.cancel()
            # The backend's cleanup (ACP session/cancel, A2A CancelTask) is done when the turn is.
            await asyncio.wait({turn})
        elif (waiting := self._waiting.pop(task_id, None)) is not None and (agent_task_id := waiting[1]) is not None:
            backend = waiting[0]
            try:
                cancelled = await backend.cancel_task(agent_task_id)
            except BackendError as exc:  # the task is canceled here all the same
                log.warning("could not cancel the agent's task %s of task %s: %s", agent_task_id, task_id, exc.message)
            else:
                if not cancelled:
                    log.info(
                        "the agent's task %s of task %s no longer waited (answered, timed out or ended): "
                        "nothing to cancel there",
                        agent_task_id,
                        task_id,
                    )
        await TaskUpdater(event_queue, task_id, context_id).cancel()

    async def _turn(
        self,
        backend: AgentBackend,
        envelope: E2AEnvelope,
        prompt: Prompt | None,
        frames: FrameBuilder,
        publisher: _Publisher,
        incremental: bool,
    ) -> None:
        current = asyncio.current_task()
        assert current is not None
        turn = Turn(current)
        turn.limit_time(self._limits)  # no stall grace: a write is an enqueue, which a client's pace does not hold
        if prompt is None:  # an executor run without FrontDoorRequestHandler (e.g. under the SDK's own handler)
            prompt = read_prompt(envelope)
        events = backend.stream(envelope, prompt, incremental=incremental)
        try:
            # Frames carry the agent's own task id (as Chat's do), from which the publisher learns the
            # task a waiting turn continues; every event it publishes names this server's task.
            await run_turn(turn, prompt, events, frames, publisher, self._limits)
        finally:
            turn.cancel_timers()
            await events.aclose()


def stream_event(payload: dict[str, Any]) -> StreamResponse:
    """The ``StreamResponse`` of a ``to_a2a_stream`` projection (its JSON).

    A chunk's artifact update with a text part (most frames) is built field by field, as
    ``json_format.ParseDict`` would build it at several times the cost; anything else goes through
    ``ParseDict`` (tests/a2a_server/test_stream_event.py checks both give the same message).
    """
    update = payload.get("artifactUpdate")
    if len(payload) == 1 and _is_object(update, _ARTIFACT_UPDATE):
        artifact = update["artifact"]
        parts = artifact.get("parts") if _is_object(artifact, _ARTIFACT) else None
        if isinstance(parts, list) and len(parts) == 1 and _is_object(parts[0], _TEXT_PART):
            part = parts[0]
            built = Part(text=part["text"], media_type=part.get("mediaType", ""))
            metadata = part.get("metadata")
            if metadata is not None:
                built.metadata.update(metadata)
            return StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(
                    task_id=update.get("taskId", ""),
                    context_id=update.get("contextId", ""),
                    artifact=Artifact(artifact_id=artifact.get("artifactId", ""), parts=[built]),
                    append=update.get("append", False),
                    last_chunk=update.get("lastChunk", False),
                )
            )
    return json_format.ParseDict(payload, StreamResponse(), ignore_unknown_fields=True)


@dataclass(frozen=True)
class _Shape:
    """A JSON object the fast path builds: the keys it may have, each with its JSON type, and those it must."""

    types: dict[str, type]
    required: str
    #: Its object values are objects of strings (a part's metadata, which a ``Struct`` takes as it is).
    flat_objects: bool = False


_ARTIFACT_UPDATE = _Shape(
    {"taskId": str, "contextId": str, "artifact": dict, "append": bool, "lastChunk": bool}, "artifact"
)
_ARTIFACT = _Shape({"artifactId": str, "parts": list}, "parts")
_TEXT_PART = _Shape({"text": str, "mediaType": str, "metadata": dict}, "text", flat_objects=True)


def _is_object(value: object, shape: _Shape) -> TypeGuard[dict[str, Any]]:
    if type(value) is not dict or shape.required not in value:
        return False
    for key, item in value.items():
        expected = shape.types.get(key)
        if expected is None or type(item) is not expected:
            return False
        if isinstance(item, dict) and shape.flat_objects and not all(type(inner) is str for inner in item.values()):
            return False
    return True


def _question_still_open(final: E2AResponse) -> E2AResponse | None:
    """The waiting frame to publish for an ``invalid_answer`` error: the answer named no option, the
    agent's question still waits (the error's ``details.question``), so the task stays input-required
    and A2A asks again, saying why; ``None`` for any other frame. (Chat's client gets the error as it
    is: its stream ends, the question stays open.)"""
    body = final.body
    details = body.get("details") if final.response_kind == ResponseKind.E2A_ERROR else None
    question = details.get("question") if isinstance(details, dict) else None
    if body.get("code") != ErrorCode.INVALID_ANSWER or not isinstance(question, dict):
        return None
    asked = {**question, "message": f"{body.get('message')}. {question.get('message', '')}", "result": {}}
    return replace(final, response_kind=ResponseKind.E2A_INPUT_REQUIRED, status=ResponseStatus.IN_PROGRESS, body=asked)


class _Publisher:
    """The A2A events of one turn's frames, onto the task's event queue (the turn's ``FrameOutput``).

    Each event is made from what its frame was made of: the backend's event, else the frame's record
    as its ``FrameBuilder`` keeps it; no frame is read back from its bytes.
    """

    def __init__(
        self,
        task_id: str,
        context_id: str,
        queue: EventQueue,
        message: Message,
        frames: FrameBuilder,
        *,
        task_exists: bool,
    ) -> None:
        self._task_id = task_id
        self._context_id = context_id
        self._ids = {"taskId": task_id, "contextId": context_id}
        self._queue = queue
        self._message = message
        self._frames = frames
        #: The SDK has the task (this turn continues it, or an event of the turn created it).
        self._task_open = task_exists
        #: The agent's own events ended the turn (an ending or waiting state, a Message): no final status.
        self._ended = False
        self._state: TaskState = TaskState.TASK_STATE_SUBMITTED
        self._open_artifacts: set[str] = set()
        #: The turn ended with the task waiting for the client.
        self.waiting = False
        #: The agent's own task id, once one of its events named it.
        self.agent_task_id: str | None = None

    async def start_work(self) -> None:
        """The task submitted (unless it exists) and working, as a turn of an E2A-native backend starts."""
        await self._open_task()
        await self._publish(TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.TASK_STATE_WORKING)))

    async def _open_task(self) -> None:
        if not self._task_open:
            self._task_open = True
            task = Task(status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[self._message])
            await self._publish(task)

    async def _publish(self, event: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message) -> None:
        """Enqueue an event, addressed to this server's task and context."""
        if isinstance(event, Task):
            event.id = self._task_id
            for message in event.history:
                self._address(message)
            self._address(event.status.message)
        elif isinstance(event, Message):
            event.task_id = ""  # a Message reply is not part of a task
        else:
            event.task_id = self._task_id
            if isinstance(event, TaskStatusUpdateEvent):
                self._address(event.status.message)
                self._observe(event.status.state)
        event.context_id = self._context_id
        await self._queue.enqueue_event(event)

    def _address(self, message: Message) -> None:
        """A message of the task (history, status) names this server's task and context."""
        if message.task_id:
            message.task_id = self._task_id
        if message.context_id:
            message.context_id = self._context_id

    def _observe(self, state: TaskState) -> None:
        self._state = state
        if state in TERMINAL_STATES or state in INTERRUPTED_STATES:
            self._ended = True
            self.waiting = state in INTERRUPTED_STATES

    async def write(self, frame: bytes, kind: str, event: Event | None) -> None:
        # Built from the backend's event where it says all (most frames); else from the frame's record.
        del frame  # the frame's bytes are Chat's; this output speaks A2A
        if kind == ResponseKind.A2A_STREAM_EVENT:
            native = event.native if isinstance(event, Passthrough) else None
            if isinstance(native, StreamResponse):
                agent_event = StreamResponse()
                agent_event.CopyFrom(native)  # the backend's: not to be changed
                await self._agent_event(agent_event)
            elif (sent := a2a.e2a_response_to_a2a_stream_payload(self._frames.last_record())) is not None:
                await self._agent_event(json_format.ParseDict(sent, StreamResponse(), ignore_unknown_fields=True))
            return
        if self._ended:
            return  # the final frame of a turn the agent's own events ended
        if type(event) is Delta:
            await self._open_task()
            await self._artifact_chunk(self._chunk_update(event))
            return
        record = self._frames.last_record()
        record = _question_still_open(record) or record
        if record.response_kind == ResponseKind.E2A_INPUT_REQUIRED:
            self.agent_task_id = record.task_id or self.agent_task_id  # what the answer continues
        payload = conversion.to_a2a_stream(record, project_native_kinds=True)
        if isinstance(payload, conversion.NotApplicable):
            return  # e.g. an ACP plan or mode update: A2A has no event for it
        stream_response = stream_event(payload)
        branch = stream_response.WhichOneof("payload")
        await self._open_task()
        if branch == "artifact_update":
            await self._artifact_chunk(stream_response.artifact_update)
        elif branch == "status_update":
            await self._publish(stream_response.status_update)

    def _chunk_update(self, delta: Delta) -> TaskArtifactUpdateEvent:
        """The artifact update of a chunk (``a2a.delta_artifact_update``). A text delta's (most chunks)
        is built as that projection's JSON parses, without the JSON (tests/a2a_server/test_lossless.py
        holds both equal)."""
        if type(delta.delta) is str:
            update = TaskArtifactUpdateEvent(task_id=self._task_id, context_id=self._context_id, append=True)
            artifact = update.artifact
            artifact.artifact_id = a2a.delta_artifact_id(delta.delta_kind)
            artifact.parts.add(text=delta.delta, media_type=delta.mime_type or "")
            return update
        payload = a2a.delta_artifact_update(delta.delta_kind, delta.delta, delta.mime_type, self._ids, True)
        return stream_event(payload).artifact_update

    async def _artifact_chunk(self, update: TaskArtifactUpdateEvent) -> None:
        """A chunk of one of this turn's artifacts: the first opens it (``append`` false, as A2A requires)."""
        artifact_id = update.artifact.artifact_id
        if artifact_id not in self._open_artifacts:
            update.append = False
            self._open_artifacts.add(artifact_id)
        await self._publish(update)

    async def _agent_event(self, payload: StreamResponse) -> None:
        """One event of a remote A2A agent, as it sent it, but for the ids (see the module docstring)."""
        branch = payload.WhichOneof("payload")
        if branch == "message":
            message = payload.message
            self.agent_task_id = message.task_id or self.agent_task_id
            if not self._task_open:  # a Message reply: no task
                self._ended = True
                await self._publish(message)
                return
            # In a task, A2A carries an agent's message as the status message (the SDK refuses a Message).
            await self._publish(TaskStatusUpdateEvent(status=TaskStatus(state=self._state, message=message)))
        elif branch == "task":
            await self._agent_task(payload.task)
        elif branch == "status_update":
            update = payload.status_update
            self.agent_task_id = update.task_id or self.agent_task_id
            await self._open_task()
            await self._publish(update)
        elif branch == "artifact_update":
            artifact_update = payload.artifact_update
            self.agent_task_id = artifact_update.task_id or self.agent_task_id
            await self._open_task()
            self._open_artifacts.add(artifact_update.artifact.artifact_id)
            await self._publish(artifact_update)

    async def _agent_task(self, task: Task) -> None:
        """The agent's task snapshot: the task itself when it comes first, else what it adds."""
        self.agent_task_id = task.id or self.agent_task_id
        if not self._task_open:
            self._task_open = True
            if not any(message.message_id == self._message.message_id for message in task.history):
                task.history.insert(0, self._message)
            self._observe(task.status.state)
            await self._publish(task)
            return
        for artifact in task.artifacts:
            if artifact.artifact_id not in self._open_artifacts:
                self._open_artifacts.add(artifact.artifact_id)
                await self._publish(TaskArtifactUpdateEvent(artifact=artifact, last_chunk=True))
        if task.status.state != self._state or task.status.HasField("message"):
            await self._publish(TaskStatusUpdateEvent(status=task.status, metadata=task.metadata))
