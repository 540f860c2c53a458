"""``convert to-cloudevents`` / ``from-cloudevents`` offline and through a server, and the broker
path as a user runs it: ``serve --publish-nats`` and ``subscribe`` as processes, a real nats-server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from e2a_grpc.cli import cloudevent_forms
from e2a_grpc.client import chat
from e2a_grpc.model import E2AEnvelope
from tests.conftest import REPO_ROOT
from tests.e2e.test_cli import run
from tests.support.cloudevent_records import conformance_records
from tests.support.nats_server import running_nats_server
from tests.support.processes import running_server


def run_bytes(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """``run`` for binary output (the protobuf formats)."""
    command = [sys.executable, "-m", "e2a_grpc", *args]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60, cwd=REPO_ROOT, check=False)


def _records_json() -> str:
    return json.dumps([json.loads(record.to_json()) for record in conformance_records()[:20]])


@pytest.mark.parametrize(
    "form", [str(form) for form in cloudevent_forms.Format if form is not cloudevent_forms.Format.PROTOBUF]
)
def test_every_format_round_trips_through_the_command_line(form: str, tmp_path: Path) -> None:
    records = _records_json()
    events = tmp_path / "events"
    prefix = ("--cloudevents-type-prefix", "org.apache.eventmesh.a2a")
    written = run_bytes("convert", "to-cloudevents", "--format", form, *prefix, stdin=records.encode())
    assert written.returncode == 0, written.stderr
    events.write_bytes(written.stdout)
    read = run("convert", "from-cloudevents", "--format", form, str(events))
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout) == json.loads(records)


def test_the_server_gives_what_the_offline_conversion_gives(server_address: str) -> None:
    envelope = json.dumps({"method": "tools/call", "request_id": "r-1", "channel": "web", "params": {"n": 2**70}})
    offline = run("convert", "to-cloudevents", stdin=envelope)
    online = run("convert", "to-cloudevents", "--server", server_address, stdin=envelope)
    assert offline.returncode == online.returncode == 0
    assert offline.stdout == online.stdout
    back = run("convert", "from-cloudevents", "--server", server_address, stdin=online.stdout)
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["params"] == {"n": 2**70}


@pytest.mark.parametrize("form", [str(cloudevent_forms.Format.BATCH), str(cloudevent_forms.Format.PROTOBUF_BATCH)])
def test_an_empty_batch_round_trips_to_an_empty_array(form: str, server_address: str) -> None:
    written = run_bytes("convert", "to-cloudevents", "--format", form, stdin=b"[]")
    assert written.returncode == 0, written.stderr
    for extra in ((), ("--server", server_address)):
        read = run_bytes("convert", "from-cloudevents", "--format", form, *extra, stdin=written.stdout)
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout) == []


def test_a_contradicting_attribute_exits_2_naming_it(server_address: str) -> None:
    frame = json.dumps({"response_id": "f", "request_id": "r", "sequence": 3, "response_kind": "e2a.chunk"})
    event = run("convert", "to-cloudevents", stdin=frame).stdout.replace('"seq":3', '"seq":4')
    for extra in ((), ("--server", server_address)):
        result = run("convert", "from-cloudevents", *extra, stdin=event)
        assert result.returncode == 2
        assert "seq" in result.stderr and "contradicts" in result.stderr


def test_serve_publishes_and_subscribe_rebuilds_the_stream(tmp_path: Path) -> None:
    with (
        running_nats_server(tmp_path / "jetstream") as broker,
        running_server("--publish-nats", broker.url) as address,
        grpc.insecure_channel(address) as channel,
    ):
        envelope = E2AEnvelope(
            method="chat.send", request_id="cli-1", session_id="s.1", is_stream=True, params={"text": "one two three"}
        )
        sent = [frame.to_json() for frame in chat(channel, envelope, timeout=30)]
        result = run(
            "subscribe", "--request-id", "cli-1", "--json", "--timeout", "20", env={"E2A_GRPC_NATS_URL": broker.url}
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == sent
        text = run("subscribe", "--session-id", "s.1", "--nats-url", broker.url, "--timeout", "20")
        assert text.returncode == 0, text.stderr
        assert text.stdout == "one two three\n"


def test_subscribe_gives_up_after_its_idle_timeout_with_exit_124(tmp_path: Path) -> None:
    with running_nats_server(tmp_path / "jetstream") as broker:
        result = run(
            "subscribe",
            "--request-id",
            "never-sent",
            "--nats-url",
            broker.url,
            env={"E2A_GRPC_NATS_IDLE_TIMEOUT_SECONDS": "0.5"},
        )
    assert result.returncode == 124, result.stderr
    assert "no frame for 0.5 s on e2a.frames.*.never-sent" in result.stderr


def test_subscribe_without_a_broker_exits_4() -> None:
    result = run("subscribe", "--nats-url", "nats://127.0.0.1:1", "--timeout", "5")
    assert result.returncode == 4
    assert "cannot reach NATS" in result.stderr


def test_serve_without_its_broker_refuses_to_start() -> None:
    result = run("serve", "--port", "0", "--publish-nats", "nats://127.0.0.1:1")
    assert result.returncode == 1
    assert "cannot publish to NATS at nats://127.0.0.1:1: NoServersError: nats: no servers available" in result.stderr


def test_a_json_rpc_batch_becomes_a_list_of_events() -> None:
    batch = json.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}},
            {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}},
        ]
    )
    records = run("convert", "from-acp", stdin=batch)
    assert records.returncode == 0, records.stderr
    events = run(
        "convert",
        "to-cloudevents",
        "--format",
        "batch",
        "--cloudevents-type-prefix",
        "org.apache.eventmesh.a2a",
        stdin=records.stdout,
    )
    assert events.returncode == 0, events.stderr
    assert [event["type"] for event in json.loads(events.stdout)] == [
        "org.apache.eventmesh.a2a.session.prompt.req",
        "org.apache.eventmesh.a2a.acp.prompt_result.resp",
    ]
