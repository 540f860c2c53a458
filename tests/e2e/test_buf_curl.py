"""buf curl, a gRPC client nobody here wrote, lists and calls the service through reflection alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BUF = Path(sys.executable).with_name("buf")


def _buf_curl(*args: str) -> str:
    result = subprocess.run(
        [str(BUF), "curl", "--protocol", "grpc", "--http2-prior-knowledge", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_lists_every_rpc(server_address: str) -> None:
    methods = set(_buf_curl("--list-methods", f"http://{server_address}").split())
    assert {
        "e2a.v1.ConversionService/ToACP",
        "e2a.v1.ConversionService/FromACP",
        "e2a.v1.ConversionService/ToA2AStream",
        "e2a.v1.ConversionService/FromA2A",
        "grpc.health.v1.Health/Check",
    } <= methods


def test_calls_to_acp_and_from_acp(server_address: str) -> None:
    envelope_json = json.dumps(
        {"method": "session/prompt", "session_id": "s1", "jsonrpc_id": 9, "params": {"text": "hi"}}
    )
    reply = json.loads(
        _buf_curl(
            "-d",
            json.dumps({"envelope_json": envelope_json}),
            f"http://{server_address}/e2a.v1.ConversionService/ToACP",
        )
    )
    assert json.loads(reply["jsonrpc"]) == {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "session/prompt",
        "params": {"text": "hi", "prompt": [{"type": "text", "text": "hi"}], "session_id": "s1"},
    }
    acp = '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}'
    reply = json.loads(
        _buf_curl("-d", json.dumps({"json": acp}), f"http://{server_address}/e2a.v1.ConversionService/FromACP")
    )
    (record,) = reply["records"]
    # The proto's own JSON mapping uses the E2A snake_case names.
    assert record["envelope"]["session_id"] == "s1" and record["envelope"]["method"] == "session/prompt"
    assert record["envelope"]["jsonrpc_id"] == {"integer_value": "1"}


def test_bad_input_reaches_buf_curl_as_invalid_argument(server_address: str) -> None:
    result = subprocess.run(
        [str(BUF), "curl", "--protocol", "grpc", "--http2-prior-knowledge", "-d", '{"json": "{"}',
         f"http://{server_address}/e2a.v1.ConversionService/FromACP"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "invalid_argument" in result.stderr.lower() and "json" in result.stderr
