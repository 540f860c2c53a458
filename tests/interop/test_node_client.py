"""Interop: a Node.js client built on the protobuf-es code generated into gen/ts gets the same results
from a real server as the Python grpcio client, call for call.

clients/ts/conversion_client.mjs makes the calls in CASES (ToACP, FromACP, ToA2AStream, and a call
that fails) and prints one JSON line per call. For each case this test checks that Node sent the same
request message as Python builds, then makes the call with the Python stub and compares: the same
oneof case and equal messages, so JSON text results are byte-identical and errors have the same
status code, message and details. Only the values the server makes at call time (converted_at,
response ids and timestamps of FromACP responses) differ between two calls; they are checked for
shape and then left out.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_status import rpc_status

from e2a.v1 import conversion_service_pb2 as cs
from e2a.v1 import conversion_service_pb2_grpc as cs_grpc
from e2a.v1 import e2a_pb2

pytestmark = pytest.mark.subprocess  # Node.js runs the TypeScript client

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = REPO_ROOT / "clients" / "ts"
NODE_CLIENT = CLIENT_DIR / "conversion_client.mjs"
CALL_TIMEOUT = 30.0
RFC3339_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|\+00:00)")

REQUEST_TYPES: dict[str, type[Message]] = {
    "ToACP": cs.ToACPRequest,
    "FromACP": cs.FromACPRequest,
    "ToA2AStream": cs.ToA2AStreamRequest,
}

# "request" is the request in the protobuf JSON mapping; "envelope" lists the E2AEnvelope fields that
# both clients set through their generated types (envelope_from_fields here, envelopeFromFields in
# the Node client). The JSON text carries what a lossy path would break: integers beyond 2^53 and
# 2^64, 1.0 vs 1, -0.0, key order, non-ASCII text.
CASES: list[dict[str, Any]] = [
    {
        "name": "to_acp_envelope",
        "rpc": "ToACP",
        "request": {},
        "envelope": {
            "method": "session/prompt",
            "session_id": "sess-1",
            "channel": "cli",
            "identity_origin": "SERVICE",
            "jsonrpc_id": str(2**53 + 1),
            "params": '{"text":"héllo ✓ 🚀","n":123456789012345678901234567890,"x":1.0,"neg":-0.0,'
            '"nested":{"b":1,"a":[]}}',
            "acp_meta": '{"trace":"t-1"}',
        },
    },
    {
        "name": "to_acp_envelope_json",
        "rpc": "ToACP",
        "request": {
            "envelope_json": '{"method":"session/cancel","session_id":"s-2","jsonrpc_id":"req-7",'
            '"params":{"reason":"user","big":-98765432109876543210,"f":2.50}}'
        },
    },
    {
        "name": "to_acp_response",
        "rpc": "ToACP",
        "request": {
            "response": {
                "response_kind": "acp.prompt_result",
                "status": "succeeded",
                "is_final": True,
                "session_id": "s-1",
                "jsonrpc_id": {"number_value": 1.5},
                "body": '{"stopReason":"end_turn","usage":{"tokens":18446744073709551616}}',
            }
        },
    },
    {
        "name": "to_acp_wire_chat_send",
        "rpc": "ToACP",
        "request": {
            "dialect": "ACP_DIALECT_WIRE",
            "session_prompt_methods": ["chat.send"],
            "envelope_json": '{"method":"chat.send","session_id":"s-3","jsonrpc_id":3,"params":{"text":"sum ✓",'
            '"content_blocks":[{"type":"resource_link","uri":"file:///a.txt","mime_type":"text/plain"}]}}',
        },
    },
    {
        "name": "to_acp_wire_session_update",
        "rpc": "ToACP",
        "request": {
            "dialect": "ACP_DIALECT_WIRE",
            "response_json": '{"response_kind":"acp.session_update","status":"in_progress","session_id":"s-1",'
            '"body":{"session_id":"s-1","update":{"session_update":"agent_message_chunk",'
            '"content":{"type":"text","text":"hi"}}}}',
        },
    },
    {
        "name": "to_acp_not_applicable",
        "rpc": "ToACP",
        "request": {"response": {"response_kind": "e2a.chunk", "body": '{"delta":"x"}'}},
    },
    {
        "name": "from_acp_request",
        "rpc": "FromACP",
        "request": {
            "json": '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s-1",'
            '"prompt":[{"type":"text","text":"hi ✓"}],"n":12345678901234567890}}',
            "channel": "web",
        },
    },
    {
        "name": "from_acp_notification",
        "rpc": "FromACP",
        "request": {
            "json": '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}',
            "identity_origin": "IDENTITY_ORIGIN_SYSTEM",
        },
    },
    {
        "name": "from_acp_result",
        "rpc": "FromACP",
        "request": {"json": '{"jsonrpc":"2.0","id":"r-1","result":{"stopReason":"end_turn","x":1.0}}'},
    },
    {
        "name": "from_acp_error",
        "rpc": "FromACP",
        "request": {
            "json": '{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad params","data":{"field":"prompt"}}}'
        },
    },
    {
        "name": "from_acp_batch",
        "rpc": "FromACP",
        "request": {
            "json": '[{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":'
            '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"par"}}}},'
            '{"jsonrpc":"2.0","id":2.0,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}},'
            '{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}]'
        },
    },
    {
        "name": "to_a2a_stream_event",
        "rpc": "ToA2AStream",
        "request": {
            "response": {
                "response_kind": "a2a.stream_event",
                "status": "in_progress",
                "task_id": "t-1",
                "body": '{"branch":"status_update","payload":{"taskId":"t-1","contextId":"c-1",'
                '"status":{"state":"TASK_STATE_WORKING"},"n":12345678901234567890}}',
            }
        },
    },
    {
        "name": "to_a2a_native_chunk",
        "rpc": "ToA2AStream",
        "request": {
            "project_native_kinds": True,
            "response_json": '{"response_kind":"e2a.chunk","status":"in_progress","task_id":"t-1","sequence":2,'
            '"body":{"delta":"partial ✓","delta_kind":"text"}}',
        },
    },
    {
        "name": "to_a2a_native_error",
        "rpc": "ToA2AStream",
        "request": {
            "project_native_kinds": True,
            "response": {
                "response_kind": "e2a.error",
                "status": "failed",
                "is_final": True,
                # Set, so that the A2A status message id is not a fresh UUID per call.
                "response_id": "r-9",
                "request_id": "req-9",
                "timestamp": "2026-01-02T03:04:05Z",
                "body": '{"code":"backend_down","message":"agent unavailable","details":{"retry_after":30}}',
            },
        },
    },
    {
        "name": "to_a2a_not_applicable",
        "rpc": "ToA2AStream",
        "request": {"response_json": '{"response_kind":"e2a.chunk","body":{"delta":"x"}}'},
    },
    {
        "name": "from_acp_invalid_json",
        "rpc": "FromACP",
        "request": {"json": "{not json"},
    },
]

# The cases whose calls must fail, with the status code; every other call must succeed.
EXPECTED_ERRORS = {"from_acp_invalid_json": "INVALID_ARGUMENT"}


def envelope_from_fields(fields: dict[str, Any]) -> e2a_pb2.E2AEnvelope:
    return e2a_pb2.E2AEnvelope(
        method=fields["method"],
        session_id=fields["session_id"],
        channel=fields["channel"],
        identity_origin=e2a_pb2.IdentityOrigin.Value(f"IDENTITY_ORIGIN_{fields['identity_origin']}"),  # type: ignore[arg-type]
        jsonrpc_id=e2a_pb2.JsonRpcId(integer_value=int(fields["jsonrpc_id"])),
        params=fields["params"],
        acp_meta=fields["acp_meta"],
    )


def python_request(case: dict[str, Any]) -> Message:
    request = json_format.ParseDict(case["request"], REQUEST_TYPES[case["rpc"]]())
    if "envelope" in case:
        # Only ToACPRequest cases carry an envelope.
        cast(cs.ToACPRequest, request).envelope.CopyFrom(envelope_from_fields(case["envelope"]))
    return request


def _ensure_node_modules() -> None:
    """Install clients/ts/node_modules from the lock file when missing or outdated (as `make gen` does)."""
    installed = CLIENT_DIR / "node_modules" / ".package-lock.json"
    lock = CLIENT_DIR / "package-lock.json"
    if installed.is_file() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: it is needed to install clients/ts/node_modules (npm ci)")
    subprocess.run([npm, "ci", "--prefix", str(CLIENT_DIR), "--no-audit", "--no-fund"], check=True)


@pytest.fixture(scope="module")
def node_lines(server_address: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """What the Node client printed for each case, by case name."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (Node.js >= 20) is not on PATH: it is needed to run clients/ts/conversion_client.mjs")
    _ensure_node_modules()
    cases_file = tmp_path_factory.mktemp("node_client") / "cases.json"
    cases_file.write_text(json.dumps(CASES, ensure_ascii=False), encoding="utf-8")
    run = subprocess.run(
        [node, str(NODE_CLIENT), server_address, str(cases_file)],
        capture_output=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    if run.returncode != 0:
        pytest.fail(f"the Node client exited with {run.returncode}:\n{run.stderr}")
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [line["name"] for line in lines] == [case["name"] for case in CASES]
    return {line["name"]: line for line in lines}


@pytest.fixture(scope="module")
def stub(server_address: str) -> Iterator[cs_grpc.ConversionServiceStub]:
    with grpc.insecure_channel(server_address) as channel:
        yield cs_grpc.ConversionServiceStub(channel)


def _error(code: str, message: str, details: list[tuple[str, bytes]]) -> tuple[str, dict[str, Any]]:
    printed = [{"type": type_name, "value": base64.b64encode(value).decode()} for type_name, value in details]
    return "error", {"code": code, "message": message, "details": printed}


def python_outcome(stub: cs_grpc.ConversionServiceStub, case: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "reply", getattr(stub, case["rpc"])(python_request(case), timeout=CALL_TIMEOUT)
    except grpc.RpcError as exc:
        status = rpc_status.from_call(cast(grpc.Call, exc))  # what a sync call raises is also its Call
        details = [(detail.type_url.rsplit("/", 1)[-1], detail.value) for detail in (status.details if status else ())]
        return _error(exc.code().name, exc.details() or "", details)


def _set_oneof(message: Message, printed: dict[str, Any]) -> None:
    field = message.DESCRIPTOR.fields_by_name[printed["case"]]
    if field.message_type is None:
        setattr(message, field.name, printed["value"])
    else:
        json_format.ParseDict(printed["value"], getattr(message, field.name))


def node_outcome(case: dict[str, Any], line: dict[str, Any]) -> tuple[str, Any]:
    """The Node client's printed result as the same kind of value python_outcome gives."""
    if "error" in line:
        error = line["error"]
        details = [(detail["type"], base64.b64decode(detail["value"])) for detail in error["details"]]
        return _error(error["code"], error["message"], details)
    if case["rpc"] == "FromACP":
        reply = cs.FromACPResponse()
        for record in line["records"]:
            _set_oneof(reply.records.add(), record)
        return "reply", reply
    text_reply = {"ToACP": cs.ToACPResponse, "ToA2AStream": cs.ToA2AStreamResponse}[case["rpc"]]()
    _set_oneof(text_reply, line)
    return "reply", text_reply


def without_call_time_values(outcome: tuple[str, Any]) -> tuple[str, Any]:
    """The outcome without the values the server makes at call time, after checking their shape:
    provenance.converted_at of every FromACP record, and the response_id (a UUID) and timestamp of
    FromACP responses."""
    kind, reply = outcome
    if kind != "reply" or not isinstance(reply, cs.FromACPResponse):
        return outcome
    stripped = cs.FromACPResponse()
    stripped.CopyFrom(reply)
    for record in stripped.records:
        message = getattr(record, str(record.WhichOneof("record")))
        assert RFC3339_UTC.fullmatch(message.provenance.converted_at), message.provenance
        message.provenance.ClearField("converted_at")
        if isinstance(message, e2a_pb2.E2AResponse):
            uuid.UUID(message.response_id)  # raises ValueError unless it is a UUID
            assert RFC3339_UTC.fullmatch(message.timestamp), message.timestamp
            message.ClearField("response_id")
            message.ClearField("timestamp")
    return kind, stripped


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_node_client_gets_the_python_result(
    case: dict[str, Any], node_lines: dict[str, dict[str, Any]], stub: cs_grpc.ConversionServiceStub
) -> None:
    line = node_lines[case["name"]]
    request = python_request(case)
    assert type(request).FromString(base64.b64decode(line["request"])) == request, "Node sent another request"

    python = without_call_time_values(python_outcome(stub, case))
    node = without_call_time_values(node_outcome(case, line))
    assert node == python

    kind, value = python
    if case["name"] in EXPECTED_ERRORS:
        assert kind == "error"
        assert value["code"] == EXPECTED_ERRORS[case["name"]]
    else:
        assert kind == "reply", value
