"""The A2A front door of a routing table: one card with a skill per agent, each message reaching the agent
its request's ``metadata.agent_id`` names (else the default agent), an unknown agent refused before any
task exists, on every transport."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from a2a.utils.errors import InvalidParamsError
from google.protobuf import struct_pb2

from e2a_grpc.a2a_server.errors import FrontDoorError
from e2a_grpc.a2a_server.server import A2AServer
from e2a_grpc.backends import make_routes
from tests.a2a_server.conftest import a2a_client, artifact_text, send_request, stream_events, task_of, user_message
from tests.a2a_server.test_errors import jsonrpc_error, reason_of, text_message
from tests.conftest import server_config
from tests.support.a2a_errors import json_rpc_code
from tests.support.fakes import ControlledBackend

TABLE = """
default_agent = "writer"

[agents.writer]
target = "local:echo"
name = "Writer"
description = "Writes back what it is told"
skills = ["echo: Says it back"]

[agents.reviewer]
target = "local:echo"
"""


@contextlib.asynccontextmanager
async def _routed_server(tmp_path: Path) -> AsyncIterator[tuple[A2AServer, ControlledBackend]]:
    """The A2A server of a table with ``writer`` (echo, the default) and ``reviewer`` (a fake that
    answers "reviewed" at once)."""
    table = tmp_path / "agents.toml"
    table.write_text(TABLE, encoding="utf-8")
    settings = server_config(agents=table, a2a_port=0, a2a_grpc_port=0, a2a_agent_name="gateway")
    routes = make_routes(settings)
    assert routes is not None
    reviewer = ControlledBackend(before=(), after=("reviewed",))
    reviewer.release.set()
    routes.backends["reviewer"] = reviewer
    server = A2AServer(settings, routes.default_backend, routes=routes)
    await server.start()
    try:
        yield server, reviewer
    finally:
        await server.stop()
        await routes.aclose()


def _for_agent(text: str, agent_id: str | None) -> Any:
    request = send_request(user_message(text))
    if agent_id is not None:
        request.metadata.CopyFrom(struct_pb2.Struct(fields={"agent_id": struct_pb2.Value(string_value=agent_id)}))
    return request


@pytest.mark.asyncio
async def test_the_card_has_a_skill_per_agent(tmp_path: Path) -> None:
    async with _routed_server(tmp_path) as (server, _):
        card = server.card
    assert card.name == "gateway"
    skills = [(skill.id, skill.name, skill.description, list(skill.tags)) for skill in card.skills]
    assert skills == [
        ("writer", "Writer", "Writes back what it is told", ["echo", "echo"]),
        ("reviewer", "gateway", "An agent served through e2a-grpc", ["fake", "chat"]),  # the server's card text
    ]


@pytest.mark.asyncio
async def test_a_message_reaches_the_agent_its_metadata_names(tmp_path: Path, transport: str) -> None:
    async with _routed_server(tmp_path) as (server, reviewer), a2a_client(server, transport, streaming=False) as client:
        reviewed = task_of(await stream_events(client, _for_agent("please review", "reviewer")))
        written = task_of(await stream_events(client, _for_agent("please write", "writer")))
        default = task_of(await stream_events(client, _for_agent("no agent named", None)))
    assert artifact_text(reviewed) == "reviewed"
    assert artifact_text(written) == "please write"
    assert artifact_text(default) == "no agent named"
    assert [turn.envelope.params["content_blocks"][0]["text"] for turn in reviewer.turns] == ["please review"]


@pytest.mark.asyncio
async def test_an_unknown_agent_is_refused_before_any_task(tmp_path: Path, transport: str) -> None:
    async with _routed_server(tmp_path) as (server, reviewer), a2a_client(server, transport) as client:
        with pytest.raises(InvalidParamsError, match="'critic'"):
            await stream_events(client, _for_agent("hello", "critic"))
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "SendMessage",
            "params": {"message": text_message("hello"), "metadata": {"agent_id": "critic"}},
        }
        error = await jsonrpc_error(server.port, body)
    assert error["code"] == json_rpc_code(FrontDoorError.UNKNOWN_AGENT) == -32602
    assert reason_of(error) == FrontDoorError.UNKNOWN_AGENT
    (info,) = error["data"]
    assert info["metadata"]["agentId"] == "critic"
    assert info["metadata"]["knownAgentIds"] == ["writer", "reviewer"]
    assert not reviewer.turns
