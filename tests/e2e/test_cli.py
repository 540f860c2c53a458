"""The e2a-grpc command line: offline conversion, the same through --server, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT


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
    assert "serve" in result.stdout and "convert" in result.stdout and "Exit codes" in result.stdout
    assert run("convert", "to-acp", "--help").returncode == 0


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
    unreachable = run("convert", "to-acp", "--server", "127.0.0.1:1", stdin=json.dumps(ENVELOPE))
    assert unreachable.returncode == 1 and "UNAVAILABLE" in unreachable.stderr


def test_a_bad_environment_setting_only_stops_the_command_that_uses_it() -> None:
    bad_port = {"E2A_GRPC_PORT": "abc"}
    converted = run("convert", "to-acp", stdin=json.dumps(ENVELOPE), env=bad_port)
    assert converted.returncode == 0, converted.stderr
    refused = run("serve", env=bad_port)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "error: E2A_GRPC_PORT: Input should be a valid integer, unable to parse string as an integer"
    ]
