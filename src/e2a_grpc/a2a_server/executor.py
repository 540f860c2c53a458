"""The A2A server's agent executor: one Chat backend turn per A2A message.

A message becomes an E2A envelope (the FromA2A adapter, with the message's parts as the prompt's
content blocks and the A2A contextId as the session, so a context keeps its ACP session). The
backend's events become the same frames Chat streams (``FrameBuilder``), and each frame becomes A2A
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
from dataclasses import replace
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import (
    Message,
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
from e2a_grpc.chat.events import AgentBackend, AgentIds, BackendError, Complete
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.chat.requests import prompt_size_bytes
from e2a_grpc.errors import E2AFieldError, E2AValueError
from e2a_grpc.model import E2AEnvelope, E2AResponse, ErrorCode, ResponseKind
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
        self._max_frames = settings.chat_max_frames
        self._max_seconds = settings.chat_max_stream_seconds
        self._max_prompt_bytes = settings.chat_max_prompt_bytes
        self._clock = UtcClock()
        #: The running turn of each task, for cancel.
        self._turns: dict[str, asyncio.Task[None]] = {}
        self._cancelled: set[str] = set()

    def check_prompt(self, envelope: E2AEnvelope) -> None:
        """Refuse a prompt bigger than Chat takes (``chat_max_prompt_bytes``)."""
        size = prompt_size_bytes(envelope)
        if size > self._max_prompt_bytes:
            raise a2a_error(
                ErrorCode.PROMPT_TOO_LARGE,
                f"the prompt has {size} bytes; this server takes at most {self._max_prompt_bytes}",
                prompt_bytes=size,
                max_prompt_bytes=self._max_prompt_bytes,
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
        publisher = _Publisher(task_id, context_id, queue)
        events = self.backend.stream(envelope)
        try:
            async with asyncio.timeout(self._max_seconds):
                async for event in events:
                    if isinstance(event, AgentIds):
                        continue  # the A2A task is this server's; the agent's ids are not adopted
                    if frames.sequence >= self._max_frames - 1 and not isinstance(event, Complete):
                        final = frames.error(
                            ErrorCode.STREAM_FRAME_LIMIT,
                            f"the turn reached this server's limit of {self._max_frames} frames; the agent was stopped",
                            {"max_frames": self._max_frames},
                        )
                        break
                    frame = frames.for_event(event)
                    await publisher.publish(frame_record(frame))
                    if frames.finished:
                        return
                else:
                    final = frames.error(ErrorCode.BACKEND_INCOMPLETE, "the agent ended the stream without a result")
        except TimeoutError:
            final = frames.error(
                ErrorCode.STREAM_TIME_LIMIT,
                f"the turn ran longer than this server's limit of {self._max_seconds:g} s; the agent was stopped",
                {"max_stream_seconds": self._max_seconds},
            )
        except BackendError as exc:
            final = frames.error(exc.code, exc.message, exc.details, exc.external)
        except E2AFieldError as exc:
            log.warning("backend produced an invalid event for task %s: %s", task_id, exc)
            final = frames.error(ErrorCode.BACKEND_INVALID_OUTPUT, str(exc))
        except Exception:
            log.exception("backend %s failed on task %s", self.backend.info.name, task_id)
            final = frames.error(ErrorCode.INTERNAL, "the agent backend failed; see the server log")
        finally:
            await events.aclose()
        await publisher.publish(frame_record(final))


class _Publisher:
    """The A2A events of one turn's frames, onto the task's event queue."""

    def __init__(self, task_id: str, context_id: str, queue: EventQueue) -> None:
        self._task_id = task_id
        self._context_id = context_id
        self._queue = queue
        self._open_artifacts: set[str] = set()

    async def publish(self, response: E2AResponse) -> None:
        payload = conversion.to_a2a_stream(response, project_native_kinds=True)
        if isinstance(payload, conversion.NotApplicable):
            return  # e.g. an ACP plan or mode update: A2A has no event for it
        stream_response = json_format.ParseDict(payload, StreamResponse(), ignore_unknown_fields=True)
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
            if response.response_kind == ResponseKind.A2A_STREAM_EVENT and event.status.state in TERMINAL_STATES:
                return  # the remote agent's end: this task ends with the turn's final frame
        else:
            return  # a remote agent's own task snapshot or message
        event.task_id = self._task_id
        event.context_id = self._context_id
        await self._queue.enqueue_event(event)
