"""ACP permission questions through the A2A server (issue "agents that ask", section 2), with the
official a2a-sdk client on all three transports and the test ACP agent, whose ``write`` turn writes a
file only when allowed: the question puts the task in input-required (its text, and a data part with
the options), a message on the task answers it (a data part with the option id, or text naming the
option), the task goes back to working and ends, and its history holds the whole exchange."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, Task, TaskState
from google.protobuf import json_format, struct_pb2

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
from tests.a2a_server.test_acp_and_projection import acp_backend, agent_events
from tests.support.agents.a2a_agent import json_struct

pytestmark = pytest.mark.subprocess  # the ACP test agent is a real subprocess


def _question(task: Task) -> tuple[str, dict[str, Any]]:
    message = task.status.message
    return message.parts[0].text, json_format.MessageToDict(message.parts[1].data)


def _answer(task: Task, part: Part) -> Message:
    return Message(message_id=f"answer-{task.id}", role=Role.ROLE_USER, parts=[part], task_id=task.id)


def _option_id(option_id: str) -> Part:
    return Part(data=struct_pb2.Value(struct_value=json_struct({"option_id": option_id})))


@pytest.mark.parametrize(
    ("answer", "written", "outcome"),
    [
        (_option_id("allow"), True, {"outcome": "selected", "optionId": "allow"}),
        (Part(text="Reject"), False, {"outcome": "selected", "optionId": "reject"}),
        (Part(text="cancel"), False, {"outcome": "cancelled"}),
    ],
    ids=["data-part-allow", "text-reject", "text-cancel"],
)
@pytest.mark.asyncio
async def test_a_permission_question_is_an_input_required_task_that_the_answer_continues(
    transport: str, tmp_path: Path, answer: Part, written: bool, outcome: dict[str, Any]
) -> None:
    events = tmp_path / "events.jsonl"
    async with (
        a2a_server(acp_backend(events)) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        waiting = task_of(await stream_events(client, send_request(user_message("write"))))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        text, question = _question(waiting)
        assert text == "Write notes.txt: allow?"
        assert question["reason"] == "permission"
        assert [option["option_id"] for option in question["options"]] == ["allow", "always", "reject"]
        assert question["request"]["tool_call"]["title"] == "Write notes.txt"
        done = task_of(await stream_events(client, send_request(_answer(waiting, answer))))
        stored = await client.get_task(GetTaskRequest(id=waiting.id))
    assert done.id == waiting.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    (permission,) = agent_events(events, "permission")
    assert permission["outcome"] == outcome  # what the agent received
    assert (tmp_path / "notes.txt").exists() is written  # and what it then did
    assert ("wrote notes.txt" in artifact_text(done)) is written
    # The whole exchange is in the task's history: the prompt, the question, the answer.
    roles = [(Role.Name(message.role), message.parts[0].WhichOneof("content")) for message in stored.history]
    assert roles[0] == ("ROLE_USER", "text") and roles[-1][0] == "ROLE_USER"
    assert any(message.parts[0].text == "Write notes.txt: allow?" for message in stored.history)


@pytest.mark.asyncio
async def test_an_answer_naming_no_option_leaves_the_task_waiting_on_the_question(
    transport: str, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    async with (
        a2a_server(acp_backend(events)) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        waiting = task_of(await stream_events(client, send_request(user_message("write"))))
        asked_again = task_of(await stream_events(client, send_request(_answer(waiting, Part(text="maybe")))))
        assert asked_again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        text, question = _question(asked_again)
        assert "names none of the question's options" in text and text.endswith("Write notes.txt: allow?")
        assert question == _question(waiting)[1]
        done = task_of(await stream_events(client, send_request(_answer(waiting, _option_id("always")))))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert [event["outcome"] for event in agent_events(events, "permission")] == [
        {"outcome": "selected", "optionId": "always"}
    ]


@pytest.mark.asyncio
async def test_a_streamed_question_and_a_streamed_answer(transport: str, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    async with a2a_server(acp_backend(events)) as server, a2a_client(server, transport) as client:
        asked = await stream_events(client, send_request(user_message("write")))
        assert states(asked)[-1] == "TASK_STATE_INPUT_REQUIRED"
        task_id = asked[0].task.id
        waiting = Task(id=task_id)
        answered = await stream_events(client, send_request(_answer(waiting, _option_id("allow"))))
    assert states(answered)[-1] == "TASK_STATE_COMPLETED" and "wrote notes.txt" in streamed_text(answered)
    assert (tmp_path / "notes.txt").exists()
