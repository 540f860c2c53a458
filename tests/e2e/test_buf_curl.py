"""buf curl, a gRPC client nobody here wrote, lists and calls the service through reflection alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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
        "e2a.v1.CodecService/EnvelopeFromJson",
        "e2a.v1.CodecService/EnvelopeToJson",
        "e2a.v1.CodecService/ResponseFromJson",
        "e2a.v1.CodecService/ResponseToJson",
        "e2a.v1.CodecService/Transcode",
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


def _json_values(text: str) -> list[Any]:
    """The JSON documents buf curl prints one after another (one per streamed reply)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    rest = text.strip()
    while rest:
        value, end = decoder.raw_decode(rest)
        values.append(value)
        rest = rest[end:].lstrip()
    return values


def test_calls_the_codec_unary_and_streaming(server_address: str) -> None:
    envelope_json = '{"method":"chat.send","jsonrpc_id":36893488147419103232,"params":{"z":1,"a":1.0}}'
    reply = json.loads(
        _buf_curl(
            "-d",
            json.dumps({"json": envelope_json}),
            f"http://{server_address}/e2a.v1.CodecService/EnvelopeFromJson",
        )
    )
    envelope = reply["envelope"]
    assert envelope["method"] == "chat.send" and envelope["params"] == '{"z":1,"a":1.0}'
    assert envelope["jsonrpc_id"] == {"big_integer_value": "36893488147419103232"}
    reply = json.loads(
        _buf_curl(
            "-d", json.dumps({"envelope": envelope}), f"http://{server_address}/e2a.v1.CodecService/EnvelopeToJson"
        )
    )
    assert '"jsonrpc_id":36893488147419103232' in reply["json"] and '"params":{"z":1,"a":1.0}' in reply["json"]
    # A bidirectional stream: buf curl sends the documents of -d one after another as requests.
    requests = [
        {"envelope_json": envelope_json},
        {"response_json": '{"body": []}'},
        {"response": {"response_kind": "e2a.chunk", "body": '{"delta":"hi"}'}},
    ]
    replies = _json_values(
        _buf_curl(
            "-d", " ".join(json.dumps(request) for request in requests),
            f"http://{server_address}/e2a.v1.CodecService/Transcode",
        )
    )  # fmt: skip
    # proto3 JSON leaves out a zero index.
    assert [int(reply.get("index", 0)) for reply in replies] == [0, 1, 2]
    assert replies[0]["envelope"]["method"] == "chat.send"
    assert replies[1]["error"]["field_violations"] == [
        {"field": "response_json.body", "description": "expected an object, got array"}
    ]
    assert json.loads(replies[2]["response_json"])["body"] == {"delta": "hi"}
