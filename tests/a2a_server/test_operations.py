"""The A2A server's operations through the official a2a-sdk client, on JSON-RPC, HTTP+JSON and gRPC.

The echo backend answers at once; the controlled fake backend (tests/support/fakes.py) holds a turn
until the test releases it, so a task is known to be running when it is read, followed or cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.constants import TransportProtocol

from e2a_grpc.a2a_server.executor import TERMINAL_STATES
from e2a_grpc.settings import A2A_CARD_PATH
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
from tests.support.fakes import ControlledBackend

TIMEOUT = 20.0


async def drain(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in stream]


TEXT = "the quick brown fox jumps"


@pytest.mark.asyncio
async def test_streaming_send_goes_submitted_working_completed_with_the_text(transport: str) -> None:
    async with a2a_server() as server, a2a_client(server, transport) as client:
        events = await stream_events(client, send_request(user_message(TEXT)))
    assert states(events) == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert streamed_text(events) == TEXT
    task_ids = {event.artifact_update.task_id for event in events if event.HasField("artifact_update")}
    assert task_ids == {events[0].task.id}


@pytest.mark.asyncio
async def test_blocking_send_returns_the_completed_task_and_get_reads_it(transport: str) -> None:
    async with a2a_server() as server, a2a_client(server, transport, streaming=False) as client:
        task = task_of(await stream_events(client, send_request(user_message(TEXT))))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert artifact_text(task) == TEXT
        read = await client.get_task(GetTaskRequest(id=task.id))
        assert read.status.state == TaskState.TASK_STATE_COMPLETED and artifact_text(read) == TEXT
        assert [message.parts[0].text for message in read.history] == [TEXT]
        trimmed = await client.get_task(GetTaskRequest(id=task.id, history_length=0))
        assert len(trimmed.history) == 0


@pytest.mark.asyncio
async def test_non_blocking_send_returns_at_once_and_the_task_is_then_read(transport: str) -> None:
    backend = ControlledBackend(before=("first ",), after=("last",))
    async with a2a_server(backend) as server, a2a_client(server, transport, streaming=False) as client:
        task = task_of(await stream_events(client, send_request(user_message(TEXT), return_immediately=True)))
        assert task.status.state not in TERMINAL_STATES
        await asyncio.wait_for(backend.waiting_turns(1), TIMEOUT)
        running = await client.get_task(GetTaskRequest(id=task.id))
        assert running.status.state == TaskState.TASK_STATE_WORKING
        assert artifact_text(running) == "first "
        # Follow the task to its end instead of polling.
        async with a2a_client(server, transport) as follower:
            subscription = follower.subscribe(SubscribeToTaskRequest(id=task.id))
            first = await anext(subscription)
            assert first.task.id == task.id
            backend.release.set()
            rest = [event async for event in subscription]
        assert states(rest)[-1] == "TASK_STATE_COMPLETED"
        done = await client.get_task(GetTaskRequest(id=task.id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert artifact_text(done) == "first last"


@pytest.mark.asyncio
async def test_resubscribe_continues_a_running_stream(transport: str) -> None:
    backend = ControlledBackend(before=("one ",), after=("two ", "three"))
    async with a2a_server(backend) as server, a2a_client(server, transport) as client:
        stream = client.send_message(send_request(user_message("x")))
        first = await anext(stream)
        task_id = first.task.id
        await asyncio.wait_for(backend.waiting_turns(1), TIMEOUT)
        async with a2a_client(server, transport) as other:
            subscription = other.subscribe(SubscribeToTaskRequest(id=task_id))
            snapshot = await anext(subscription)
            assert snapshot.task.id == task_id and artifact_text(snapshot.task) == "one "
            backend.release.set()
            followed = [event async for event in subscription]
        original = [event async for event in stream]
    assert streamed_text(followed) == "two three"
    assert states(followed)[-1] == states(original)[-1] == "TASK_STATE_COMPLETED"


@pytest.mark.asyncio
async def test_cancel_mid_stream_stops_the_backend_and_is_terminal(transport: str) -> None:
    backend = ControlledBackend()
    async with a2a_server(backend) as server, a2a_client(server, transport) as client:
        stream = client.send_message(send_request(user_message("x")))
        task_id = (await anext(stream)).task.id
        turns = await asyncio.wait_for(backend.waiting_turns(1), TIMEOUT)
        cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        assert turns[0].cancelled.is_set() and turns[0].finished.is_set()
        # The sender's stream ends without the rest of the answer; it may see the canceled state
        # (the SDK may close it before).
        rest = await asyncio.wait_for(drain(stream), TIMEOUT)
        assert streamed_text(rest) == "first "
        assert states(rest)[-1] in ("TASK_STATE_WORKING", "TASK_STATE_CANCELED")
        read = await client.get_task(GetTaskRequest(id=task_id))
        assert read.status.state == TaskState.TASK_STATE_CANCELED
        assert server.executor.slots.running == 0


@pytest.mark.asyncio
async def test_list_tasks_by_context(transport: str) -> None:
    async with a2a_server() as server, a2a_client(server, transport, streaming=False) as client:
        first = task_of(await stream_events(client, send_request(user_message("one"))))
        second = task_of(await stream_events(client, send_request(user_message("two", first.context_id))))
        await stream_events(client, send_request(user_message("elsewhere")))
        page = await client.list_tasks(ListTasksRequest(context_id=first.context_id))
    assert {task.id for task in page.tasks} == {first.id, second.id}


@pytest.mark.asyncio
async def test_turns_of_one_context_share_the_backend_session(transport: str) -> None:
    backend = ControlledBackend(before=(), after=("ok",))
    backend.release.set()
    async with a2a_server(backend) as server, a2a_client(server, transport, streaming=False) as client:
        first = task_of(await stream_events(client, send_request(user_message("one"))))
        task_of(await stream_events(client, send_request(user_message("two", first.context_id))))
        task_of(await stream_events(client, send_request(user_message("three"))))
    sessions = [turn.envelope.session_id for turn in backend.turns]
    assert sessions[0] == sessions[1] == first.context_id != sessions[2]
    assert [turn.envelope.params["content_blocks"] for turn in backend.turns][1] == [{"type": "text", "text": "two"}]


@pytest.mark.asyncio
async def test_agent_card_comes_from_the_settings_and_names_every_transport() -> None:
    async with (
        a2a_server(
            a2a_agent_name="front",
            a2a_skills="summarize: Summaries; translate: Translations",
            a2a_output_modes="text/plain",
        ) as server,
        httpx.AsyncClient() as http,
    ):
        card = await A2ACardResolver(http, f"http://127.0.0.1:{server.port}").get_agent_card(A2A_CARD_PATH)
    assert card.name == "front" and card.capabilities.streaming
    assert [(skill.id, skill.description) for skill in card.skills] == [
        ("summarize", "Summaries"),
        ("translate", "Translations"),
    ]
    assert list(card.default_output_modes) == ["text/plain"]
    assert list(card.default_input_modes) == ["text/plain", "application/json"]
    bindings = {interface.protocol_binding: interface.url for interface in card.supported_interfaces}
    assert bindings == {
        TransportProtocol.JSONRPC: f"http://127.0.0.1:{server.port}/",
        TransportProtocol.HTTP_JSON: f"http://127.0.0.1:{server.port}/rest",
        TransportProtocol.GRPC: f"127.0.0.1:{server.grpc_port}",
    }


@pytest.mark.asyncio
async def test_data_parts_reach_the_agent_as_json_text(transport: str) -> None:
    from google.protobuf.struct_pb2 import Value

    data = Value()
    data.struct_value.update({"question": "why"})
    async with a2a_server() as server, a2a_client(server, transport, streaming=False) as client:
        message = user_message("", data=data, media_type="application/json")
        task = task_of(await stream_events(client, send_request(message)))
    assert artifact_text(task) == '{"question":"why"}'
