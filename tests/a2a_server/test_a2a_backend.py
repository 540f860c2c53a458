"""The A2A server in front of the a2a backend, which calls a real a2a-sdk agent
(tests/support/agents/a2a_agent.py): A2A to E2A and back. The agent's events reach the client as
events of this server's task, and a cancel reaches the agent as A2A CancelTask."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, StreamResponse, TaskState

from e2a_grpc.backends.a2a import A2ABackend
from tests.a2a_server.conftest import (
    a2a_client,
    a2a_server,
    send_request,
    states,
    stream_events,
    streamed_text,
    user_message,
)
from tests.servicer.test_chat_a2a import Agent, running_agent
from tests.support.processes import free_port


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    with running_agent(free_port(), tmp_path_factory.mktemp("a2a-agent") / "agent.jsonl") as running:
        yield running


@pytest.mark.asyncio
async def test_the_agents_events_become_events_of_this_servers_task(agent: Agent, transport: str) -> None:
    context_id = str(uuid.uuid4())
    async with a2a_server(A2ABackend(agent.url, timeout_seconds=30)) as server, a2a_client(server, transport) as client:
        events = await stream_events(client, send_request(user_message("hello", context_id)))
    task_id = events[0].task.id
    assert states(events)[0] == "TASK_STATE_SUBMITTED" and states(events)[-1] == "TASK_STATE_COMPLETED"
    assert streamed_text(events) == "Hello, hello"
    updates = [getattr(event, event.WhichOneof("payload") or "") for event in events[1:]]
    assert {(update.task_id, update.context_id) for update in updates} == {(task_id, context_id)}
    # The agent's own working status (with its "thinking" message) is passed on; its final status is
    # not: this task ends with the turn's final frame.
    working = [event.status_update for event in events if event.status_update.status.message.parts]
    assert working[0].status.message.parts[0].text == "thinking"
    assert len(agent.records("request", context_id)) == 1


@pytest.mark.asyncio
async def test_cancel_reaches_the_agent_as_cancel_task(agent: Agent, transport: str) -> None:
    context_id = str(uuid.uuid4())
    async with a2a_server(A2ABackend(agent.url, timeout_seconds=30)) as server, a2a_client(server, transport) as client:
        received: list[StreamResponse] = []
        async for event in client.send_message(send_request(user_message("slow", context_id))):
            received.append(event)
            if len(streamed_text(received).split()) >= 2:
                break
        cancelled = await client.cancel_task(CancelTaskRequest(id=received[0].task.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert agent.wait_for("cancel_called", context_id), "the agent got no CancelTask"
