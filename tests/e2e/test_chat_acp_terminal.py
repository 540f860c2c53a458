"""A person answers an ACP agent's permission question in the terminal, end to end: ``e2a-grpc serve
--backend acp`` running the test ACP agent, and ``e2a-grpc chat`` on a pseudo-terminal. The agent's
``write`` turn asks before it writes notes.txt; the person picks an option by number, and what the
agent received and then did follows from that choice."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_servers import acp_server
from tests.support.terminal import Terminal

PROMPT = "answer (1-3, an option's id or name, or cancel): "


@pytest.mark.parametrize(
    ("typed", "written"), [("1", True), ("reject", False)], ids=["allow-by-number", "reject-by-id"]
)
@pytest.mark.asyncio
async def test_the_person_at_the_terminal_answers_and_the_agent_acts_on_it(
    tmp_path: Path, typed: str, written: bool
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with acp_server(tmp_path, "--acp-cwd", str(workspace)) as server:
        command = [sys.executable, "-m", "e2a_grpc", "chat", "write"]
        async with Terminal.run(command, {**os.environ, "E2A_GRPC_SERVER": server.address}) as terminal:
            await terminal.expect(PROMPT)
            assert "[permission] Write notes.txt: allow?" in terminal.screen
            assert "1. Allow once (allow_once)" in terminal.screen
            terminal.type(f"{typed}\n")
            code = await terminal.exit_code()
        (agent,) = {record["pid"] for record in map(_json, server.events.read_text().splitlines())}
        (permission,) = server.agent_events(agent, "permission")
    assert code == 0, terminal.screen
    assert permission["outcome"] == {"outcome": "selected", "optionId": "allow" if written else "reject"}
    assert (workspace / "notes.txt").exists() is written
    assert ("wrote notes.txt" if written else "did not write notes.txt (reject)") in terminal.screen


def _json(line: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(line)
    return value
