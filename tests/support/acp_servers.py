"""acp-backend servers for the tests: ``e2a-grpc serve --backend acp`` running the test ACP agent
(tests/support/agents/acp_agent.py), Chat calls to them, and process checks (read from /proc: the
agents are children of the server process)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc

from e2a_grpc.client.chat import chat
from e2a_grpc.model import E2AEnvelope, E2AResponse
from tests.conftest import ServerAddress, open_fds, running_server

AGENT = Path(__file__).parent / "agents" / "acp_agent.py"
TIMEOUT = 30.0


def ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])  # the fields after "(comm)": state, ppid, ...


def children(pid: int) -> set[int]:
    return {int(entry) for entry in os.listdir("/proc") if entry.isdigit() and ppid(int(entry)) == pid}


def exited(pid: int) -> bool:
    return not alive(pid)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


class Server:
    """A running acp-backend server: address, pid, a channel, and the agents' event log."""

    def __init__(self, address: ServerAddress, events: Path) -> None:
        self.address = address
        self.pid = address.pid
        self.events = events
        self.channel = grpc.insecure_channel(address)

    def agents(self) -> set[int]:
        return children(self.pid)

    def fd_count(self) -> int:
        return open_fds(self.pid)

    def agent_events(self, pid: int, event: str) -> list[dict[str, Any]]:
        lines = self.events.read_text(encoding="utf-8").splitlines() if self.events.exists() else []
        return [record for record in map(json.loads, lines) if record["pid"] == pid and record["event"] == event]


@contextlib.contextmanager
def acp_server(
    directory: Path, *args: str, agent_args: tuple[str, ...] = (), in_shell: bool = False
) -> Iterator[Server]:
    """A server running the test agent; ``in_shell``: as a child of a shell (not exec'd), as wrapper scripts do."""
    events = directory / "agent-events.jsonl"
    command = shlex.join([sys.executable, str(AGENT), "--events", str(events), *agent_args])
    if in_shell:
        command = shlex.join(["sh", "-c", f"{command}; exit $?"])
    with running_server("--backend", "acp", "--acp-command", command, *args, log=directory / "server.log") as address:
        server = Server(address, events)
        try:
            yield server
        finally:
            server.channel.close()


def envelope(text: str, session_id: str | None = None, *, task_id: str | None = None, **params: Any) -> E2AEnvelope:
    """A Chat request; ``task_id``: that of a waiting turn's frames, to answer its question."""
    return E2AEnvelope(
        method="chat.send",
        request_id=str(uuid.uuid4()),
        session_id=session_id,
        task_id=task_id,
        is_stream=True,
        params={"text": text, **params},
    )


def frames_of(
    server: Server, text: str, session_id: str | None = None, *, task_id: str | None = None, **params: Any
) -> list[E2AResponse]:
    return list(chat(server.channel, envelope(text, session_id, task_id=task_id, **params), timeout=TIMEOUT))


def question(frames: list[E2AResponse]) -> E2AResponse:
    """The final frame of a turn that ends asking the client (checked)."""
    final = frames[-1]
    assert (final.response_kind, final.status, final.is_final) == ("e2a.input_required", "in_progress", True), (
        final.body
    )
    assert final.task_id, "a question's frame names the task that waits"
    return final


def content(frames: list[E2AResponse]) -> str:
    final = frames[-1]
    assert final.response_kind == "e2a.complete", final.body
    text: str = final.body["result"]["content"]
    return text
