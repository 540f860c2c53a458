"""The A2A server's agent executor: one Chat backend turn per A2A message.

A message becomes an E2A envelope (the FromA2A adapter, with the message's parts as the prompt's
content blocks and the A2A contextId as the session, so a context keeps its ACP session). The turn
is Chat's (``e2a_grpc.chat.turn``: the same frames, limits and final frame), and each frame becomes A2A
events through the project's E2A -> A2A projection (``conversion.to_a2a_stream``, what the
ConversionService's ToA2AStream does): an ``e2a.chunk`` is an artifact update, the final
``e2a.complete`` / ``e2a.error`` the completed / failed status. So the server and ToA2AStream agree by
construction. Two things a per-frame projection cannot know are added here: the first chunk of each
artifact opens it (``append`` false, as A2A requires), and the events of a remote A2A agent (the a2a
backend's ``a2a.stream_event`` frames) are re-addressed to this server's task, without the agent's own
task snapshot, message or final status (this task's final status comes from the final frame).

Cancel (A2A CancelTask) stops the turn at its current await: the backend's cleanup tells the agent
(ACP ``session/cancel``, A2A CancelTask) before the task is marked canceled.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
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

from e2a_grpc import conversion, jsontext
from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error
from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.chat.requests import prompt_size_bytes
from e2a_grpc.chat.turn import Turn, TurnLimits, run_turn
from e2a_grpc.errors import E2AValueError
from e2a_grpc.model import E2AEnvelope, ErrorCode, ResponseKind
from e2a_grpc.protocols import a2a
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)

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
    """The ACP content blocks of an A2A message: text as text, data as its JSON text, a URL as a resource link."""
    blocks: list[dict[str, Any]] = []
    for index, part in enumerate(message.parts):
        content = part.WhichOneof("content")
        if content == "text":
            blocks.append({"type": "text", "text": part.text})
        elif content == "data":
            data = json_format.MessageToDict(part.data)
            blocks.append({"type": "text", "text": jsontext.dumps(data, f"message.parts[{index}].data")})
        elif content == "url":
            link: dict[str, Any] = {"type": "resource_link", "uri": part.url, "name": part.filename or part.url}
            if part.media_type:
                link["mimeType"] = part.media_type
            blocks.append(link)
        else:
            raise E2AValueError(f"message.parts[{index}]", f"a {content or 'empty'} part cannot reach the agent")
    if not any(block["type"] == "text" and block["text"] for block in blocks):
        raise E2AValueError("message.parts", "no text: the agent needs a text or data part")
    return blocks


def turn_envelope(
    message: Message,
    task_id: str,
    context_id: str,
    accepted_output_modes: list[str],
    metadata: dict[str, Any] | None,
) -> E2AEnvelope:
    """The envelope of one turn: the A2A SendMessage through the FromA2A adapter, the parts as the prompt.

    The A2A task is the request (frames and their A2A projection name it), not a task of the agent:
    a remote A2A agent names its own tasks. The context is the session, so turns of one context reach
    the same backend session.
    """
    envelope = a2a.envelope_from_a2a_send_message(
        task_id=None,
        context_id=context_id,
        message_body=json_format.MessageToDict(message),
        metadata=metadata,
        configuration={"acceptedOutputModes": accepted_output_modes} if accepted_output_modes else None,
    )
    return replace(
        envelope,
        request_id=task_id,
        session_id=context_id,
        message_id=message.message_id or None,
        params={"content_blocks": prompt_blocks(message)},
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


class BackendExecutor(AgentExecutor):
    """Runs a backend turn per message and publishes its frames' A2A projection."""

    def __init__(self, backend: AgentBackend, settings: ServerSettings, slots: TurnSlots) -> None:
        self.backend = backend
        self.slots = slots
        self._limits = TurnLimits.from_settings(settings)
        self._clock = UtcClock()
        #: The running turn of each task, for cancel.
        self._turns: dict[str, asyncio.Task[None]] = {}
        self._cancelled: set[str] = set()

    def check_prompt(self, envelope: E2AEnvelope) -> None:
        """Refuse a prompt bigger than Chat takes (``chat_max_prompt_bytes``)."""
        size = prompt_size_bytes(envelope)
        limit = self._limits.max_prompt_bytes
        if size > limit:
            raise a2a_error(
                ErrorCode.PROMPT_TOO_LARGE,
                f"the prompt has {size} bytes; this server takes at most {limit}",
                prompt_bytes=size,
                max_prompt_bytes=limit,
            )

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task_id, context_id = context.task_id, context.context_id
        assert message is not None and task_id and context_id  # the SDK's request handler sets them
        self.slots.claim(message.message_id)
        try:
            configuration = context.configuration
            envelope = turn_envelope(
                message,
                task_id,
                context_id,
                list(configuration.accepted_output_modes) if configuration else [],
                context.metadata or None,
            )
            if context.current_task is None:
                submitted = Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
                await event_queue.enqueue_event(submitted)
            await TaskUpdater(event_queue, task_id, context_id).start_work()
            turn = asyncio.create_task(self._turn(envelope, task_id, context_id, event_queue))
            self._turns[task_id] = turn
            try:
                await turn
            except asyncio.CancelledError:
                if task_id not in self._cancelled:
                    raise
                # Stopped by cancel, which writes the canceled status.
        finally:
            self._turns.pop(task_id, None)
            self._cancelled.discard(task_id)
            self.slots.finish()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        assert task_id and context_id
        turn = self._turns.get(task_id)
        if turn is not None:
            self._cancelled.add(task_id)
            turn.cancel()
            # The backend's cleanup (ACP session/cancel, A2A CancelTask) is done when the turn is.
            await asyncio.wait({turn})
        await TaskUpdater(event_queue, task_id, context_id).cancel()

    async def _turn(self, envelope: E2AEnvelope, task_id: str, context_id: str, queue: EventQueue) -> None:
        frames = FrameBuilder(envelope, self.backend.info, self._clock)
        current = asyncio.current_task()
        assert current is not None
        turn = Turn(current)
        turn.limit_time(self._limits)  # no stall grace: a write is an enqueue, which a client's pace does not hold
        events = self.backend.stream(envelope)
        try:
            # The A2A task is this server's: the agent's own task and context ids are not adopted.
            await run_turn(
                turn, envelope, events, frames, _Publisher(task_id, context_id, queue), self._limits,
                adopt_agent_ids=False,
            )  # fmt: skip
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


class _Publisher:
    """The A2A events of one turn's frames, onto the task's event queue (the turn's ``FrameOutput``)."""

    def __init__(self, task_id: str, context_id: str, queue: EventQueue) -> None:
        self._task_id = task_id
        self._context_id = context_id
        self._queue = queue
        self._open_artifacts: set[str] = set()

    async def write(self, frame: bytes, kind: str) -> None:
        payload = conversion.to_a2a_stream(frame_record(frame), project_native_kinds=True)
        if isinstance(payload, conversion.NotApplicable):
            return  # e.g. an ACP plan or mode update: A2A has no event for it
        stream_response = stream_event(payload)
        branch = stream_response.WhichOneof("payload")
        event: TaskArtifactUpdateEvent | TaskStatusUpdateEvent
        if branch == "artifact_update":
            event = stream_response.artifact_update
            artifact_id = event.artifact.artifact_id
            if artifact_id not in self._open_artifacts:
                event.append = False
                self._open_artifacts.add(artifact_id)
        elif branch == "status_update":
            event = stream_response.status_update
            if kind == ResponseKind.A2A_STREAM_EVENT and event.status.state in TERMINAL_STATES:
                return  # the remote agent's end: this task ends with the turn's final frame
        else:
            return  # a remote agent's own task snapshot or message
        event.task_id = self._task_id
        event.context_id = self._context_id
        await self._queue.enqueue_event(event)
