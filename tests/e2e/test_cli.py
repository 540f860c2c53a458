"""The e2a-grpc command line: offline conversion, the same through --server, exit codes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.support.processes import free_port, running_server

TRANSCRIPTS = Path(__file__).parent / "transcripts"
ACP_AGENT = REPO_ROOT / "tests" / "support" / "agents" / "acp_agent.py"


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "e2a_grpc", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
    )


ENVELOPE = {"method": "chat.send", "session_id": "s1", "jsonrpc_id": 7, "params": {"text": "hi", "n": 2**70}}


def test_help_explains_the_commands() -> None:
    result = run("--help")
    assert result.returncode == 0
    assert "serve" in result.stdout and "convert" in result.stdout
    assert result.stdout.endswith(
        "exit codes:\n"
        "  0    ok\n"
        "  1    the server or the agent failed\n"
        "  2    bad input or usage (also a missing or unreadable file)\n"
        "  3    the conversion does not apply to this record\n"
        "  4    no server could be reached (--server; NATS for subscribe, agent and agents)\n"
        "  5    the agent waits for an answer (chat: a question not answered here)\n"
        "  124  --timeout passed before the answer was complete\n"
        "  130  interrupted (Ctrl-C)\n"
    )
    assert "exit codes:" in run("chat", "--help").stdout


@pytest.mark.parametrize(
    ("kind", "description"),
    [
        ("to-acp", "Convert an E2A envelope (a request) or response"),
        ("from-acp", "Convert an ACP JSON-RPC message"),
        ("to-a2a-stream", "Convert one E2A response frame to the A2A StreamResponse"),
        ("from-a2a", "Convert the params of an A2A SendMessage"),
    ],
)
def test_each_conversion_has_its_own_description(kind: str, description: str) -> None:
    result = run("convert", kind, "--help")
    assert result.returncode == 0
    assert description in " ".join(result.stdout.split())


def test_serve_help_names_the_services_and_defaults() -> None:
    help_text = " ".join(run("serve", "--help").stdout.split())
    assert "AgentService.Chat" in help_text and "(default: 127.0.0.1) [E2A_GRPC_HOST]" in help_text


@pytest.mark.parametrize("through_server", [False, True])
def test_to_acp_from_file_and_stdin(tmp_path: Path, server_address: str, through_server: bool) -> None:
    source = tmp_path / "envelope.json"
    source.write_text(json.dumps(ENVELOPE))
    extra = ["--server", server_address] if through_server else []
    from_file = run("convert", "to-acp", str(source), "--session-prompt-method", "chat.send", "--wire", *extra)
    assert from_file.returncode == 0, from_file.stderr
    assert json.loads(from_file.stdout) == {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]},
    }
    from_stdin = run("convert", "to-acp", *extra, stdin=json.dumps(ENVELOPE))
    assert from_stdin.returncode == 0
    assert json.loads(from_stdin.stdout)["params"]["n"] == 2**70  # big integers survive the CLI too


def test_offline_and_server_agree(server_address: str) -> None:
    batch = json.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}},
        {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s9"}},
    ])  # fmt: skip
    offline = run("convert", "from-acp", "--channel", "ide", stdin=batch)
    online = run("convert", "from-acp", "--channel", "ide", "--server", server_address, stdin=batch)
    assert offline.returncode == online.returncode == 0

    def strip(records: list[dict[str, Any]]) -> list[dict[str, Any]]:  # the volatile fields differ per call
        return [{k: v for k, v in r.items() if k not in ("provenance", "response_id", "timestamp")} for r in records]

    assert strip(json.loads(offline.stdout)) == strip(json.loads(online.stdout))


def test_exit_codes(server_address: str, tmp_path: Path) -> None:
    bad = run("convert", "from-acp", stdin="{not json")
    assert bad.returncode == 2 and "json" in bad.stderr
    bad_remote = run("convert", "from-acp", "--server", server_address, stdin='{"jsonrpc":"2.0","id":1}')
    assert bad_remote.returncode == 2 and "INVALID_ARGUMENT" in bad_remote.stderr and "json.method" in bad_remote.stderr
    chunk = json.dumps({"response_kind": "e2a.chunk", "request_id": "r", "body": {"delta_kind": "text", "delta": "x"}})
    not_applicable = run("convert", "to-a2a-stream", stdin=chunk)
    assert not_applicable.returncode == 3 and "not applicable" in not_applicable.stderr
    native = run("convert", "to-a2a-stream", "--native", stdin=chunk)
    assert native.returncode == 0 and "artifactUpdate" in json.loads(native.stdout)
    missing = run("convert", "to-acp", str(tmp_path / "missing.json"))
    assert missing.returncode == 2 and "missing.json" in missing.stderr
    directory = run("convert", "to-acp", str(tmp_path))
    assert directory.returncode == 2 and "Is a directory" in directory.stderr


@pytest.mark.parametrize(
    "command", [("convert", "to-acp", "--server", "http://127.0.0.1:1"), ("chat", "--server", "127.0.0.1:1", "hi")]
)
def test_no_server_exits_4_with_a_hint(command: tuple[str, ...]) -> None:
    unreachable = run(*command, stdin=json.dumps(ENVELOPE))
    assert unreachable.returncode == 4
    status, hint = unreachable.stderr.splitlines()
    assert status.startswith("error: UNAVAILABLE: ") and status.count("UNAVAILABLE") == 1
    assert hint == "hint: is `e2a-grpc serve` running on 127.0.0.1:1?"


def test_an_unavailable_agent_behind_a_server_that_answers_gets_no_hint_to_start_one() -> None:
    """The gateway answered UNAVAILABLE with ErrorInfo AGENT_UNAVAILABLE: its agent's upstream is
    gone. The server was reached, so no hint that it is not running, and no exit 4."""
    gone = f"grpc://127.0.0.1:{free_port()}"  # nothing listens there
    with running_server("--agent", f"gone={gone}") as gateway:
        result = run("chat", "--server", gateway, "hi")
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: UNAVAILABLE: agent 'gone' is unavailable: the upstream {gone} is unavailable: ")


def test_server_forms(server_address: str) -> None:
    port = server_address.rsplit(":", 1)[1]
    for server in (f"http://127.0.0.1:{port}", f"localhost:{port}"):
        result = run("chat", "--server", server, "hi there")
        assert (result.returncode, result.stdout, result.stderr) == (0, "hi there\n", ""), server
    from_env = run("chat", "hi", env={"E2A_GRPC_SERVER": f"http://127.0.0.1:{port}"})
    assert (from_env.returncode, from_env.stdout) == (0, "hi\n")


@pytest.fixture(scope="module")
def acp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose Chat runs the scripted ACP test agent."""
    command = shlex.join([sys.executable, str(ACP_AGENT)])
    log = tmp_path_factory.mktemp("acp-server") / "server.log"
    with running_server("--backend", "acp", "--acp-command", command, log=log) as address:
        yield address


def transcript(args: tuple[str, ...], result: subprocess.CompletedProcess[str]) -> str:
    """A terminal session as a file records it: the command, its stdout, its stderr, its exit code."""
    return (
        f"$ e2a-grpc {shlex.join(args)}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
        f"--- exit {result.returncode}\n"
    )


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("chat_acp_turn", ("chat", "what is up")),  # thinking, tool calls, then the answer
        ("chat_acp_crash", ("chat", "crash please")),  # the error, its reason and the agent's stderr
    ],
)
def test_chat_transcripts(acp_server: str, name: str, args: tuple[str, ...]) -> None:
    result = run(*args, env={"E2A_GRPC_SERVER": acp_server})
    assert transcript(args, result) == (TRANSCRIPTS / f"{name}.txt").read_text(encoding="utf-8")


def test_a_client_timeout_exits_124_after_ending_the_partial_answer(acp_server: str) -> None:
    result = run("chat", "--server", acp_server, "--timeout", "3", "slow")  # the agent says its pid at once
    assert result.returncode == 124
    assert result.stdout.strip() and result.stdout.endswith("\n")
    assert result.stderr == "error: no complete answer within --timeout 3 s (DEADLINE_EXCEEDED)\n"


def test_a_bad_environment_setting_only_stops_the_command_that_uses_it() -> None:
    bad_port = {"E2A_GRPC_PORT": "abc"}
    converted = run("convert", "to-acp", stdin=json.dumps(ENVELOPE), env=bad_port)
    assert converted.returncode == 0, converted.stderr
    refused = run("serve", env=bad_port)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "error: E2A_GRPC_PORT: Input should be a valid integer, unable to parse string as an integer"
    ]


def test_serve_refuses_a_bad_routing_table_with_a_line_per_entry(tmp_path: Path) -> None:
    table = tmp_path / "agents.toml"
    table.write_text('[agents.a]\ntarget = "bogus"\n[agents.b]\ntarget = "grpc://h:1"\ntoken = "s3cret"\n')
    result = run("serve", "--port", "0", "--agents", str(table), "--agent", "c")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"error: --agents {table}: agent 'a': target: unknown target 'bogus'")
    assert (
        lines[1]
        == f"--agents {table}: agent 'b': a token never goes in the file; name its environment variable with token_env"
    )
    assert lines[2] == "--agent 'c': write ID=TARGET, e.g. writer=local:echo"
    assert "s3cret" not in result.stderr


def test_chat_reaches_the_agent_it_names_through_a_routing_table(server_address: str) -> None:
    """A gateway process with a local agent and an upstream (the session's server): ``chat --agent-id``."""
    with running_server("--agent", "here=local:echo", "--agent", f"far=grpc://{server_address}") as gateway:
        far = run("chat", "--server", gateway, "--agent-id", "far", "--json", "over there")
        here = run("chat", "--server", gateway, "--json", "right here")  # the default agent: the first
        nobody = run("chat", "--server", gateway, "--agent-id", "nobody", "hello")
    far_frames = [json.loads(line) for line in far.stdout.splitlines()]
    assert far.returncode == 0 and far_frames[-1]["body"] == {"result": {"content": "over there"}}
    assert all(frame["provenance"]["details"] == {"upstream": f"grpc://{server_address}"} for frame in far_frames)
    here_frames = [json.loads(line) for line in here.stdout.splitlines()]
    assert here.returncode == 0 and here_frames[-1]["provenance"]["converter"] == "e2a_grpc.chat:echo"
    assert nobody.returncode == 1
    assert "NOT_FOUND" in nobody.stderr and "no agent 'nobody' here; the agents are: here, far" in nobody.stderr
