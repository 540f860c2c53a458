"""A turn that ends waiting for the client (``e2a.input_required``) through the A2A server on an
E2A-native backend: the task stays input-required with the question as its status message, a message
on the task continues it, and CancelTask of the waiting task cancels it, on all three transports."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, Role, SubscribeToTaskRequest, TaskState
from google.protobuf import json_format

from e2a_grpc.chat.events import AgentIds, BackendInfo, Complete, Delta, Event, InputRequired
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.model import DeltaKind, E2AEnvelope, WaitReason
from tests.a2a_server.conftest import (
    a2a_client,
    a2a_server,
    artifact_text,
    send_request,
    states,
    stream_events,
    streamed_text,
    task_of,
    user_message,
)

OPTIONS = (
    {"option_id": "yes", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "no", "name": "Reject", "kind": "reject_once"},
)


class AskingBackend:
    """Asks before it answers: a prompt other than an option id waits for one (the question named
    ``question-N``, as an agent names what it waits on); an option id completes."""

    def __init__(self) -> None:
        self.info = BackendInfo("asking", "e2a")
        self.prompts: list[str] = []
        self.sessions: list[str | None] = []
        #: The task id of each request: the question an answer continues.
        self.task_ids: list[str | None] = []
        self.cancelled: list[str] = []

    async def cancel_task(self, task_id: str) -> bool:
        self.cancelled.append(task_id)
        return True

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        text = prompt.text
        self.prompts.append(text)
        self.sessions.append(envelope.session_id)
        self.task_ids.append(envelope.task_id)
        if text in {option["option_id"] for option in OPTIONS}:
            yield Delta(DeltaKind.TEXT, f"chosen: {text}")
            yield Complete({"content": f"chosen: {text}"})
            return
        yield AgentIds(f"question-{len(self.prompts)}", None)
        yield InputRequired(WaitReason.PERMISSION, "may I write the file?", {"content": ""}, options=OPTIONS)

    async def aclose(self) -> None:
        return None


def _question(task: Any) -> tuple[str, dict[str, Any]]:
    message = task.status.message
    return message.parts[0].text, json_format.MessageToDict(message.parts[1].data)


@pytest.mark.asyncio
async def test_a_question_leaves_the_task_input_required_and_the_answer_continues_it(transport: str) -> None:
    backend = AskingBackend()
    async with a2a_server(backend) as server, a2a_client(server, transport, streaming=False) as client:
        waiting = task_of(await stream_events(client, send_request(user_message("write it"))))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert _question(waiting) == (
            "may I write the file?",
            {"reason": "permission", "options": [dict(option) for option in OPTIONS]},
        )
        assert waiting.status.message.role == Role.ROLE_AGENT
        answer = user_message("yes", waiting.context_id)
        answer.task_id = waiting.id
        done = task_of(await stream_events(client, send_request(answer)))
        stored = await client.get_task(GetTaskRequest(id=waiting.id))
    assert done.id == waiting.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_text(done) == "chosen: yes"
    assert [message.parts[0].text for message in stored.history if message.role == Role.ROLE_USER] == [
        "write it",
        "yes",
    ]
    assert backend.prompts == ["write it", "yes"]
    assert backend.task_ids == [None, "question-1"]  # the answer continues the agent's question


@pytest.mark.asyncio
async def test_a_streamed_question_ends_the_stream_input_required(transport: str) -> None:
    async with a2a_server(AskingBackend()) as server, a2a_client(server, transport) as client:
        events = await stream_events(client, send_request(user_message("write it")))
    last = events[-1].status_update
    assert last.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert (last.status.message.task_id, last.status.message.parts[0].text) == (last.task_id, "may I write the file?")


@pytest.mark.asyncio
async def test_cancel_of_a_waiting_task_cancels_it_and_a_later_answer_is_refused(transport: str) -> None:
    backend = AskingBackend()
    async with a2a_server(backend) as server, a2a_client(server, transport, streaming=False) as client:
        waiting = task_of(await stream_events(client, send_request(user_message("write it"))))
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        answer = user_message("yes", waiting.context_id)
        answer.task_id = waiting.id
        with pytest.raises(Exception, match="terminal state"):
            await stream_events(client, send_request(answer))
    assert backend.cancelled == ["question-1"]  # the agent's waiting question is cancelled too


@pytest.mark.asyncio
async def test_an_answer_naming_only_the_task_goes_on_in_the_tasks_context(transport: str) -> None:
    backend = AskingBackend()
    async with a2a_server(backend) as server, a2a_client(server, transport, streaming=False) as client:
        waiting = task_of(await stream_events(client, send_request(user_message("write it"))))
        answer = user_message("no")  # no contextId: the SDK alone would give it a new one
        answer.task_id = waiting.id
        done = task_of(await stream_events(client, send_request(answer)))
    assert (done.id, done.context_id, done.status.state) == (
        waiting.id,
        waiting.context_id,
        TaskState.TASK_STATE_COMPLETED,
    )
    assert artifact_text(done) == "chosen: no"
    assert backend.sessions == [waiting.context_id, waiting.context_id]  # so an ACP agent keeps its session


@pytest.mark.asyncio
async def test_streams_on_a_waiting_task_follow_its_answer_in_the_same_order(transport: str) -> None:
    async with (
        a2a_server(AskingBackend()) as server,
        a2a_client(server, transport, streaming=False) as client,
        a2a_client(server, transport) as first,
        a2a_client(server, transport) as second,
    ):
        waiting = task_of(await stream_events(client, send_request(user_message("write it"))))
        followers = [each.subscribe(SubscribeToTaskRequest(id=waiting.id)) for each in (first, second)]
        snapshots = [await anext(follower) for follower in followers]
        assert [snapshot.task.status.state for snapshot in snapshots] == [TaskState.TASK_STATE_INPUT_REQUIRED] * 2
        answer = user_message("yes", waiting.context_id)
        answer.task_id = waiting.id
        await stream_events(client, send_request(answer))
        followed = [[event async for event in follower] for follower in followers]
    assert followed[0] == followed[1]
    assert states(followed[0])[-1] == "TASK_STATE_COMPLETED" and streamed_text(followed[0]) == "chosen: yes"
