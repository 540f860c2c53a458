"""Helpers of the A2A server tests: the server in process on loopback ports the OS picks, and the
official a2a-sdk client over each of its three transports."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
)
from a2a.utils.constants import TransportProtocol

from e2a_grpc.a2a_server.server import A2AServer
from e2a_grpc.backends.echo import EchoBackend
from e2a_grpc.chat.events import AgentBackend
from tests.conftest import server_config

#: The transports every operation is tested on, as the SDK names them.
TRANSPORTS = (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON, TransportProtocol.GRPC)


@pytest.fixture(params=TRANSPORTS, ids=["jsonrpc", "http-json", "grpc"])
def transport(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@contextlib.asynccontextmanager
async def a2a_server(backend: AgentBackend | None = None, **overrides: Any) -> AsyncIterator[A2AServer]:
    """An A2A server (all three transports) over ``backend`` (default: echo); always stopped, and the
    backend closed with it (its agent processes), as ``serve`` closes it: the A2A server alone does not
    (it shares the backend with the E2A server; closing a backend twice is harmless)."""
    settings = server_config(a2a_port=0, a2a_grpc_port=0, **overrides)
    server = A2AServer(settings, backend or EchoBackend())
    await server.start()
    try:
        yield server
    finally:
        try:
            await server.stop()
        finally:
            await server.backend.aclose()


@contextlib.asynccontextmanager
async def a2a_client(
    server: A2AServer | str, transport: str, *, streaming: bool = True, output_modes: tuple[str, ...] = ()
) -> AsyncIterator[Client]:
    """The official client, made from the server's agent card, speaking ``transport``."""
    url = server if isinstance(server, str) else f"http://127.0.0.1:{server.port}"
    async with httpx.AsyncClient(timeout=30) as http:
        config = ClientConfig(
            streaming=streaming,
            httpx_client=http,
            supported_protocol_bindings=[transport],
            grpc_channel_factory=grpc.aio.insecure_channel,
            accepted_output_modes=list(output_modes),
        )
        client = await ClientFactory(config).create_from_url(url)
        try:
            yield client
        finally:
            await client.close()


def user_message(text: str, context_id: str | None = None, **part: Any) -> Message:
    parts = [Part(**part)] if part else [Part(text=text)]
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts, context_id=context_id)


def send_request(
    message: Message, *, return_immediately: bool = False, history_length: int | None = None
) -> SendMessageRequest:
    configuration = SendMessageConfiguration(return_immediately=return_immediately)
    if history_length is not None:
        configuration.history_length = history_length
    return SendMessageRequest(message=message, configuration=configuration)


async def stream_events(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def task_of(events: list[StreamResponse]) -> Task:
    """The task a non-streaming send returned (its only event)."""
    assert len(events) == 1 and events[0].HasField("task"), events
    return events[0].task


def artifact_text(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


def streamed_text(events: list[StreamResponse]) -> str:
    return "".join(
        part.text
        for event in events
        if event.HasField("artifact_update")
        for part in event.artifact_update.artifact.parts
    )


def states(events: list[StreamResponse]) -> list[str]:
    """The task states a stream went through, by name."""
    from a2a.types.a2a_pb2 import TaskState

    found = []
    for event in events:
        if event.HasField("task"):
            found.append(TaskState.Name(event.task.status.state))
        elif event.HasField("status_update"):
            found.append(TaskState.Name(event.status_update.status.state))
    return found
