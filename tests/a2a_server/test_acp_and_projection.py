"""The A2A server in front of the ACP test agent (tests/support/agents/acp_agent.py, a real stdio
subprocess), and the agreement of what it streams with the project's ToA2AStream of the Chat frames
of the same turn, both served by one process over one backend."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Part,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf import json_format

from e2a.v1 import agent_service_pb2, agent_service_pb2_grpc
from e2a_grpc import conversion
from e2a_grpc.a2a_server.server import A2AServer
from e2a_grpc.backends.acp import AcpBackend
from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.model import E2AEnvelope, E2AResponse
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
from tests.conftest import InProcessServer, in_process_server

pytestmark = pytest.mark.subprocess  # the ACP test agent is a real subprocess

AGENT = Path(__file__).resolve().parents[1] / "support" / "agents" / "acp_agent.py"


def acp_backend(events: Path) -> AcpBackend:
    # No merging of deltas that pile up (e2a_grpc.chat.coalesce): how many merge depends on timing, and
    # the projection test compares the A2A server's turn with Chat's event by event.
    return AcpBackend(
        (sys.executable, str(AGENT), "--events", str(events)), default_cwd=events.parent, max_coalesced_bytes=0
    )


def agent_events(events: Path, event: str) -> list[dict[str, Any]]:
    lines = events.read_text(encoding="utf-8").splitlines() if events.exists() else []
    return [record for record in map(json.loads, lines) if record["event"] == event]


@contextlib.asynccontextmanager
async def both_servers(backend: AgentBackend | None = None) -> AsyncIterator[tuple[InProcessServer, A2AServer]]:
    """The E2A server (Chat) and the A2A server over the same backend, as ``serve --a2a-port`` runs them."""
    async with in_process_server() as e2a:
        if backend is not None:
            e2a.server.chat.backend = backend
        async with a2a_server(e2a.server.chat.backend) as a2a:
            yield e2a, a2a


async def chat_projection(address: str, text: str, task_id: str, context_id: str) -> list[dict[str, Any]]:
    """ToA2AStream of the Chat frames of the turn the A2A server ran: the same request, task and session."""
    envelope = E2AEnvelope.from_dict(
        {
            "method": "session/prompt",
            "request_id": task_id,
            "context_id": context_id,
            "session_id": context_id,
            "params": {"content_blocks": [{"type": "text", "text": text}]},
        }
    )
    projected = []
    async with grpc.aio.insecure_channel(address) as channel:
        call = agent_service_pb2_grpc.AgentServiceStub(channel).Chat(
            agent_service_pb2.ChatRequest(envelope=envelope.to_proto())
        )
        async for reply in call:
            payload = conversion.to_a2a_stream(E2AResponse.from_proto(reply.response), project_native_kinds=True)
            if not isinstance(payload, conversion.NotApplicable):
                projected.append(payload)
    return projected


def comparable(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without what differs between two turns by nature (times, message ids), and with ``append`` as A2A
    needs it: false on the first chunk of each artifact (the one thing a per-frame projection cannot know)."""
    opened: set[str] = set()
    out = []
    for payload in payloads:
        payload = json.loads(json.dumps(payload))
        if "artifactUpdate" in payload:
            update = payload["artifactUpdate"]
            artifact_id = update["artifact"]["artifactId"]
            # False values are proto3 defaults: absent from MessageToDict, so absent here too.
            update["append"] = artifact_id in opened or None
            update["lastChunk"] = update.get("lastChunk") or None
            opened.add(artifact_id)
        if "statusUpdate" in payload:
            status = payload["statusUpdate"]["status"]
            status.pop("timestamp", None)
            if "message" in status:
                status["message"].pop("messageId", None)
        out.append({key: {k: v for k, v in value.items() if v is not None} for key, value in payload.items()})
    return out


def served_payloads(events: list[StreamResponse]) -> list[dict[str, Any]]:
    """What the A2A server streamed from the first artifact on (before: the SDK's submitted / working)."""
    wire = [json_format.MessageToDict(event) for event in events]
    first = next(index for index, payload in enumerate(wire) if "artifactUpdate" in payload)
    return wire[first:]


@pytest.mark.parametrize("backend_name", ["echo", "acp"])
@pytest.mark.asyncio
async def test_the_server_streams_what_to_a2a_stream_projects_for_the_same_turn(
    backend_name: str, transport: str, tmp_path: Path
) -> None:
    text = "tell me a story"
    backend = acp_backend(tmp_path / "events.jsonl") if backend_name == "acp" else None
    async with both_servers(backend) as (e2a, a2a), a2a_client(a2a, transport) as client:
        events = await stream_events(client, send_request(user_message(text)))
        task_id, context_id = events[0].task.id, events[0].task.context_id
        projected = await chat_projection(e2a.address, text, task_id, context_id)
    served = served_payloads(events)
    assert states(events)[-1] == "TASK_STATE_COMPLETED"
    assert len(served) == len(projected) > 1
    assert comparable(served) == comparable(projected)


@pytest.mark.asyncio
async def test_acp_turns_of_one_context_share_the_agent_and_its_session(transport: str, tmp_path: Path) -> None:
    async with (
        a2a_server(acp_backend(tmp_path / "events.jsonl")) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        first = task_of(await stream_events(client, send_request(user_message("whoami"))))
        second = task_of(await stream_events(client, send_request(user_message("whoami", first.context_id))))
        other = task_of(await stream_events(client, send_request(user_message("whoami"))))
    pattern = r"pid (\d+) session (\S+) turn (\d+)"
    (pid1, session1, turn1), (pid2, session2, turn2), (pid3, session3, _) = (
        re.fullmatch(pattern, artifact_text(task)).groups()  # type: ignore[union-attr]
        for task in (first, second, other)
    )
    assert (pid1, session1) == (pid2, session2) and (turn1, turn2) == ("1", "2")
    assert pid3 != pid1 and session3 != session1


@pytest.mark.asyncio
async def test_cancel_mid_stream_sends_session_cancel_to_the_acp_agent(transport: str, tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    async with a2a_server(acp_backend(events_file)) as server, a2a_client(server, transport) as client:
        stream = client.send_message(send_request(user_message("slow", str(uuid.uuid4()))))
        received: list[StreamResponse] = []
        async for event in stream:
            received.append(event)
            if streamed_text(received).count("tick") >= 2:
                break
        task_id = received[0].task.id
        cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
        # The turn is over when cancel answers: the agent got session/cancel and ended its turn.
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        assert len(agent_events(events_file, "cancel")) == 1
        assert [record["stop_reason"] for record in agent_events(events_file, "turn_end")] == ["cancelled"]
        read = await client.get_task(GetTaskRequest(id=task_id))
    assert read.status.state == TaskState.TASK_STATE_CANCELED


@pytest.mark.asyncio
async def test_acp_non_blocking_send_then_get(transport: str, tmp_path: Path) -> None:
    async with (
        a2a_server(acp_backend(tmp_path / "events.jsonl")) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        task = task_of(await stream_events(client, send_request(user_message("hello agent"), return_immediately=True)))
        assert task.status.state not in (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED)
        async with a2a_client(server, transport) as follower:
            # Follow the task to its end; a task that ended already cannot be followed.
            with contextlib.suppress(UnsupportedOperationError):
                async for _ in follower.subscribe(SubscribeToTaskRequest(id=task.id)):
                    pass
        done = await client.get_task(GetTaskRequest(id=task.id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert "hello agent" in artifact_text(done)


FILE_MODES = "text/plain,application/json,image/png,audio/wav,application/pdf"


@pytest.mark.asyncio
async def test_raw_parts_reach_an_acp_agent_as_image_and_resource_blocks(transport: str, tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    message = user_message("look")
    message.parts.extend(
        [
            Part(raw=b"\x89PNG", media_type="image/png", filename="dot.png"),
            Part(raw=b"%PDF-", media_type="application/pdf", filename="spec.pdf"),
            Part(url="https://example.com/a.md", filename="a.md"),
        ]
    )
    async with (
        a2a_server(acp_backend(events_file), a2a_input_modes=FILE_MODES) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        task = task_of(await stream_events(client, send_request(message)))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    (prompt,) = agent_events(events_file, "prompt")
    assert prompt["blocks"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "data": "iVBORw==", "mimeType": "image/png", "_meta": {"a2a": {"filename": "dot.png"}}},
        {"type": "resource", "resource": {"uri": "spec.pdf", "blob": "JVBERi0=", "mimeType": "application/pdf"}},
        {"type": "resource_link", "uri": "https://example.com/a.md", "name": "a.md"},
    ]


@pytest.mark.asyncio
async def test_content_the_acp_agent_does_not_take_never_reaches_it(transport: str, tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    message = user_message("hear this")
    message.parts.append(Part(raw=b"RIFF", media_type="audio/wav"))
    async with (
        a2a_server(acp_backend(events_file), a2a_input_modes=FILE_MODES) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        task = task_of(await stream_events(client, send_request(message)))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "promptCapabilities.audio" in task.status.message.parts[0].text
    assert agent_events(events_file, "prompt") == []


@pytest.mark.asyncio
async def test_an_acp_agents_images_and_resources_come_out_as_file_artifacts(transport: str, tmp_path: Path) -> None:
    async with (
        a2a_server(acp_backend(tmp_path / "events.jsonl")) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        task = task_of(await stream_events(client, send_request(user_message("files"))))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    files = [
        json_format.MessageToDict(part)
        for artifact in task.artifacts
        for part in artifact.parts
        if part.WhichOneof("content") in ("raw", "url")
    ]
    assert files == [
        {"raw": "iVBORw0KGgo=", "mediaType": "image/png"},
        {"raw": "JVBERi0=", "mediaType": "application/pdf", "filename": "report.pdf"},
        {"url": "file:///work/notes.md", "mediaType": "text/markdown", "filename": "notes.md"},
    ]
