"""The A2A server's request handler: the SDK's, with the checks that come before a task exists.

A send is refused with an A2A error (``errors.A2A_ERRORS``), before the SDK creates a task, when its
``metadata.agent_id`` names an agent the routing table does not have, when its
``acceptedOutputModes`` names none of the card's output modes, when its parts cannot be a prompt or
the prompt is too big, or when every turn slot is taken. Input modes are the SDK's own check. With
push notifications offered, the handler keeps their configs and sends them (``push_delivery``); a
send that asks for them from a server that does not offer them is refused, not served without them.
The tasks it runs are in ``active_tasks.ActiveTasks`` (the SDK's registry, cleaned up after store
failures), which says which tasks this server holds.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from a2a.server.cluster import TaskEventStream, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import AgentCard, GetTaskRequest, Message, SendMessageRequest, Task
from a2a.utils.errors import PushNotificationNotSupportedError, TaskNotFoundError
from google.protobuf import json_format

from e2a_grpc.a2a_server.active_tasks import ActiveTasks
from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error
from e2a_grpc.a2a_server.executor import BLOCKING_SEND, PROMPT, BackendExecutor
from e2a_grpc.a2a_server.push_delivery import PushNotifications
from e2a_grpc.errors import E2AFieldError, UnknownAgentError
from e2a_grpc.model import ErrorCode


def accepts_output(accepted: list[str], offered: list[str]) -> bool:
    """Whether a client that accepts ``accepted`` media types can read an agent offering ``offered``
    (no accepted modes: anything; ``*/*`` and ``type/*`` match as in HTTP)."""
    if not accepted:
        return True
    for mode in accepted:
        kind, _, subtype = mode.strip().lower().partition("/")
        for offer in offered:
            offer_kind, _, offer_subtype = offer.lower().partition("/")
            if kind == "*" or (kind == offer_kind and subtype in ("*", offer_subtype)):
                return True
    return False


class FrontDoorRequestHandler(DefaultRequestHandlerV2):
    """``DefaultRequestHandlerV2`` with output-mode negotiation, prompt checks, the turn bound and push
    notifications (when ``push`` is given)."""

    def __init__(
        self,
        executor: BackendExecutor,
        card: AgentCard,
        *,
        task_store: TaskStore | VersionedTaskStore,
        event_stream: TaskEventStream | None = None,
        push: PushNotifications | None = None,
    ) -> None:
        super().__init__(
            agent_executor=executor,
            agent_card=card,
            task_store=task_store,
            event_stream=event_stream,
            validate_input_modes=True,
            push_config_store=push.configs if push is not None else None,
            push_sender=push.sender if push is not None else None,
            push_url_validator=push.targets.check if push is not None else None,
        )
        self._executor = executor
        self._output_modes = list(card.default_output_modes)
        self._push = push
        # The SDK's handler makes its registry itself: replaced by ours, made with the same arguments.
        self.active_tasks = ActiveTasks(
            agent_executor=executor,
            task_store=self._versioned_store,
            push_sender=push.sender if push is not None else None,
            event_stream=event_stream,
        )
        self._active_task_registry = self.active_tasks

    def _admit(self, params: SendMessageRequest, context: ServerCallContext) -> str:
        """Check a send and reserve its turn slot; the key to release the reservation with. The prompt
        read goes to the turn in ``context`` (``PROMPT``)."""
        if self._push is None and params.configuration.HasField("task_push_notification_config"):
            # The SDK would run the task and drop the config: the client would wait for notifications.
            raise PushNotificationNotSupportedError(message="this agent does not offer push notifications")
        accepted = list(params.configuration.accepted_output_modes)
        if not accepts_output(accepted, self._output_modes):
            raise a2a_error(
                FrontDoorError.OUTPUT_MODE_UNSUPPORTED,
                f"this agent answers in {', '.join(self._output_modes)}; "
                f"the request accepts only {', '.join(accepted)}",
                accepted_output_modes=accepted,
                output_modes=self._output_modes,
            )
        if self._executor.routes is not None:  # without a table no metadata names an agent: not converted
            try:
                self._executor.backend_for(json_format.MessageToDict(params.metadata))
            except UnknownAgentError as exc:
                raise a2a_error(
                    FrontDoorError.UNKNOWN_AGENT, str(exc), agent_id=exc.agent_id, known_agent_ids=list(exc.known)
                ) from None
            except E2AFieldError as exc:
                raise a2a_error(ErrorCode.INVALID_REQUEST, str(exc), field=exc.field) from None
        message = params.message
        try:
            context.state[PROMPT] = self._executor.check_prompt(message)
        except E2AFieldError as exc:
            raise a2a_error(ErrorCode.INVALID_REQUEST, str(exc), field=exc.field) from None
        self._executor.slots.reserve(message.message_id)
        return message.message_id

    async def _continue_in_the_tasks_context(self, params: SendMessageRequest, context: ServerCallContext) -> None:
        """A message that names a task but no context goes on in the task's context.

        The SDK's request context builder gives it a new contextId instead, which the task's own then
        contradicts: the agent (a remote A2A one) refuses the mismatch and the task fails.
        """
        message = params.message
        if not message.task_id or message.context_id:
            return
        try:
            task = await self.on_get_task(GetTaskRequest(id=message.task_id, history_length=0), context)
        except TaskNotFoundError:
            return  # the SDK refuses the message with this error itself
        if task is not None:
            message.context_id = task.context_id

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Message | Task:
        await self._continue_in_the_tasks_context(params, context)
        key = self._admit(params, context)
        # The caller waits for the end: a backend may ask its agent for the answer alone. Not with
        # returnImmediately, whose caller may follow the task's progress.
        context.state[BLOCKING_SEND] = not params.configuration.return_immediately
        try:
            result: Message | Task = await super().on_message_send(params, context)
            return result
        finally:
            self._executor.slots.release_reservation(key)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        await self._continue_in_the_tasks_context(params, context)
        key = self._admit(params, context)
        try:
            async for event in super().on_message_send_stream(params, context):
                yield event
        finally:
            self._executor.slots.release_reservation(key)

    async def aclose(self) -> None:
        """Stop the running tasks, then deliver what they notified (within the grace period)."""
        await super().aclose()
        if self._push is not None:
            await self._push.sender.aclose()
