"""End-to-end tests of the ConversionService against a real server on a free loopback port."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import (
    E2AAuth,
    E2AEnvelope,
    E2AResponse,
    e2a_response_to_acp_jsonrpc_response,
    envelope_to_acp_jsonrpc_call,
    jsontext,
)
from tests.conftest import REPO_ROOT, _wait_serving, free_port, running_server, stop_process
from tests.support import vectors
from tests.support.wellformed import envelope_well_typed


@pytest.fixture(scope="module")
def stub(server_address: str) -> Iterator[Any]:
    with grpc.insecure_channel(server_address) as channel:
        yield pb_grpc.ConversionServiceStub(channel)


def _bad_request(error: grpc.RpcError) -> list[str]:
    status = rpc_status.from_call(error)
    assert status is not None, "INVALID_ARGUMENT must carry rich status details"
    fields = []
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        assert detail.Unpack(bad_request)
        fields.extend(v.field for v in bad_request.field_violations)
    return fields


# --- ToACP -----------------------------------------------------------------------------------------


WELL_TYPED_TO_ACP_CASES = [
    case
    for case in vectors.load("envelope_to_acp_jsonrpc_call")
    if "ok" in case["output"] and envelope_well_typed(case["input"]["envelope_dict"])
]


@pytest.mark.parametrize("case", WELL_TYPED_TO_ACP_CASES, ids=lambda c: str(c["i"]))
def test_to_acp_envelope_matches_the_reference(stub: Any, case: dict[str, Any]) -> None:
    envelope = E2AEnvelope.from_dict(case["input"]["envelope_dict"])
    reply = stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto()))
    assert reply.WhichOneof("result") == "jsonrpc"
    assert reply.jsonrpc == jsontext.dumps_document(envelope_to_acp_jsonrpc_call(envelope))
    vectors.assert_matches(json.loads(reply.jsonrpc), case["output"]["ok"], [])


def test_to_acp_response_and_not_applicable(stub: Any) -> None:
    for case in vectors.load("e2a_response_to_acp_jsonrpc_response"):
        try:
            response = E2AResponse.from_dict(case["input"]["response_dict"])
        except (TypeError, ValueError):
            continue
        reply = stub.ToACP(pb.ToACPRequest(response=response.to_proto()))
        expected = e2a_response_to_acp_jsonrpc_response(response)
        if expected is None:
            assert reply.WhichOneof("result") == "not_applicable" and reply.not_applicable.reason
        else:
            assert json.loads(reply.jsonrpc) == expected


def test_to_acp_keeps_json_lossless(stub: Any) -> None:
    envelope = E2AEnvelope(
        method="session/prompt", jsonrpc_id=2**70, params={"big": 2**80, "f": 1.0, "z": -0.0, "u": "é🌍\ud800", "a": 1}
    )
    reply = stub.ToACP(pb.ToACPRequest(envelope_json=envelope.to_json()))
    assert reply.jsonrpc.startswith('{"jsonrpc":"2.0","id":1180591620717411303424,')
    params = json.loads(reply.jsonrpc)["params"]
    assert list(params) == ["big", "f", "z", "u", "a"]
    assert params["big"] == 2**80 and repr(params["f"]) == "1.0" and repr(params["z"]) == "-0.0"
    assert params["u"] == "é🌍\ud800"


def test_to_acp_maps_chat_send_and_emits_wire_acp(stub: Any) -> None:
    envelope = E2AEnvelope(
        method="chat.send",
        session_id="s1",
        jsonrpc_id=3,
        params={
            "text": "hi",
            "mode": "plan",
            "content_blocks": [{"type": "image", "mime_type": "image/png", "data": "AA=="}],
        },
        acp_meta={"trace": "t"},
    )
    default = stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto()))
    assert json.loads(default.jsonrpc)["method"] == "chat.send"  # the reference shape: passed through

    mapped = stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto(), session_prompt_methods=["chat.send"]))
    reference = json.loads(mapped.jsonrpc)
    assert reference["method"] == "session/prompt" and reference["params"]["session_id"] == "s1"

    wire = stub.ToACP(
        pb.ToACPRequest(envelope=envelope.to_proto(), session_prompt_methods=["chat.send"], dialect=pb.ACP_DIALECT_WIRE)
    )
    assert json.loads(wire.jsonrpc) == {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "session/prompt",
        "params": {
            "sessionId": "s1",
            "prompt": [{"type": "image", "mimeType": "image/png", "data": "AA=="}],
            "_meta": {"trace": "t"},
        },
    }


def test_wire_acp_prompt_result_is_camel_case(stub: Any) -> None:
    response = E2AResponse(response_kind="acp.prompt_result", jsonrpc_id="7", body={"stop_reason": "end_turn"})
    reply = stub.ToACP(pb.ToACPRequest(response=response.to_proto(), dialect=pb.ACP_DIALECT_WIRE))
    assert json.loads(reply.jsonrpc) == {"jsonrpc": "2.0", "id": "7", "result": {"stopReason": "end_turn"}}


# --- FromACP ---------------------------------------------------------------------------------------


def test_from_acp_request_reads_camel_case_session_id(stub: Any) -> None:
    text = '{"jsonrpc":"2.0","id":42,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}'
    reply = stub.FromACP(pb.FromACPRequest(json=text, channel="ide"))
    (record,) = reply.records
    envelope = E2AEnvelope.from_proto(record.envelope)
    assert (envelope.method, envelope.jsonrpc_id, envelope.session_id, envelope.channel) == (
        "session/prompt",
        42,
        "s1",
        "ide",
    )
    assert envelope.provenance.source_protocol == "acp"
    assert envelope.params == json.loads(text)["params"]


def test_from_acp_agent_direction_and_batch(stub: Any) -> None:
    batch = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "he"}}}},
        {"jsonrpc": "2.0", "id": "1.0", "result": {"stopReason": "end_turn"}},
        {"jsonrpc": "2.0", "id": 1.0, "error": {"code": -32603, "message": "boom", "data": {"n": 2**70}}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}},
    ]  # fmt: skip
    text = json.dumps(batch)
    records = stub.FromACP(pb.FromACPRequest(json=text)).records
    assert [r.WhichOneof("record") for r in records] == ["response", "response", "response", "envelope"]
    update, result, error = (E2AResponse.from_proto(r.response) for r in records[:3])
    assert (update.response_kind, update.session_id, update.is_final, update.status) == (
        "acp.session_update",
        "s1",
        False,
        "in_progress",
    )
    assert update.body == batch[0]["params"]
    assert (result.response_kind, result.jsonrpc_id, result.is_final, result.status) == (
        "acp.prompt_result",
        "1.0",
        True,
        "succeeded",
    )
    assert error.response_kind == "acp.jsonrpc_error" and error.status == "failed"
    assert type(error.jsonrpc_id) is float and error.body["data"]["n"] == 2**70
    cancel = E2AEnvelope.from_proto(records[3].envelope)
    assert cancel.method == "session/cancel" and cancel.provenance.details["kind"] == "jsonrpc_notification"


# --- ToA2AStream ---------------------------------------------------------------------------------


def test_to_a2a_stream_matches_the_reference(stub: Any) -> None:
    for case in vectors.load("e2a_response_to_a2a_stream_payload"):
        try:
            response = E2AResponse.from_dict(case["input"]["response_dict"])
        except (TypeError, ValueError):
            continue
        reply = stub.ToA2AStream(pb.ToA2AStreamRequest(response=response.to_proto()))
        if case["output"]["ok"] is None:
            assert reply.WhichOneof("result") == "not_applicable"
        else:
            vectors.assert_matches(json.loads(reply.stream_response), case["output"]["ok"], [])


A2A_EVENTS = [
    E2AResponse(response_kind="a2a.stream_event", task_id="t1", context_id="c1",
                body={"branch": "status_update", "payload": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}),
    E2AResponse(response_kind="a2a.stream_event",
                body={"branch": "message", "payload": {"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}),
    E2AResponse(response_kind="e2a.chunk", request_id="req-1", sequence=0, body={"delta_kind": "text", "delta": "Hel"}),
    E2AResponse(response_kind="e2a.chunk", request_id="req-1", sequence=1, body={"delta_kind": "tool", "delta": {"name": "ls", "n": 2**70}}),
    E2AResponse(response_kind="e2a.complete", request_id="req-1", session_id="s1", sequence=2, is_final=True,
                status="succeeded", timestamp="2026-03-29T12:00:02+00:00", body={"result": {"content": "Hello"}}),
    E2AResponse(response_kind="e2a.error", request_id="req-1", sequence=3, is_final=True, status="failed",
                response_id="r9", body={"code": "E_TIMEOUT", "message": "agent timed out", "details": {}}),
]  # fmt: skip


def test_to_a2a_stream_output_is_accepted_by_the_a2a_sdk(stub: Any) -> None:
    outputs = []
    for response in A2A_EVENTS:
        reply = stub.ToA2AStream(pb.ToA2AStreamRequest(response=response.to_proto(), project_native_kinds=True))
        assert reply.WhichOneof("result") == "stream_response", response.response_kind
        document = json.loads(reply.stream_response)
        assert len(document) == 1 and next(iter(document)) in {"task", "message", "statusUpdate", "artifactUpdate"}
        outputs.append(reply.stream_response)
    # Native kinds are not projected unless asked for.
    plain = stub.ToA2AStream(pb.ToA2AStreamRequest(response=A2A_EVENTS[2].to_proto()))
    assert plain.WhichOneof("result") == "not_applicable"
    verdicts = subprocess.run(
        [sys.executable, "-m", "tests.support.tools.a2a_validate"],
        input="\n".join(outputs) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert verdicts == ["ok"] * len(outputs), list(zip(outputs, verdicts, strict=True))


def test_the_a2a_validator_rejects_invalid_events() -> None:
    bad = [
        {"artifactUpdate": {"taskId": "t"}},
        {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "NOPE"}}},
    ]
    verdicts = subprocess.run(
        [sys.executable, "-m", "tests.support.tools.a2a_validate"],
        input="\n".join(json.dumps(b) for b in bad) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert all(v.startswith("error:") for v in verdicts) and len(verdicts) == 2


# --- FromA2A -------------------------------------------------------------------------------------


def test_from_a2a_params_and_jsonrpc_request(stub: Any) -> None:
    params = {
        "message": {
            "messageId": "m1",
            "taskId": "t1",
            "contextId": "c1",
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}],
        },
        "configuration": {"acceptedOutputModes": ["text/plain"]},
        "metadata": {"k": 2**70},
    }
    envelope = E2AEnvelope.from_proto(stub.FromA2A(pb.FromA2ARequest(json=json.dumps(params))).envelope)
    assert (envelope.method, envelope.task_id, envelope.context_id, envelope.message_id) == (
        "session/prompt",
        "t1",
        "c1",
        "m1",
    )
    assert envelope.expected_output_modes == ["text/plain"] and envelope.a2a_metadata == {"k": 2**70}
    assert envelope.params == {"message": params["message"], "configuration": params["configuration"]}
    request = {"jsonrpc": "2.0", "id": 5, "method": "message/send", "params": params}
    wrapped = E2AEnvelope.from_proto(stub.FromA2A(pb.FromA2ARequest(json=json.dumps(request))).envelope)
    assert wrapped.jsonrpc_id == 5 and wrapped.provenance.details["rpc"] == "message/send"


# --- bad input -----------------------------------------------------------------------------------

BAD_REQUESTS = [
    ("FromACP", pb.FromACPRequest(json="{not json"), "json"),
    ("FromACP", pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"params":{}}'), "json.method"),
    ("FromACP", pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}'), "json.params"),
    ("FromACP", pb.FromACPRequest(json='[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"1.0","method":"b"}]'), "json[1].jsonrpc"),
    ("FromACP", pb.FromACPRequest(json="[]"), "json"),
    ("ToACP", pb.ToACPRequest(), "source"),
    ("ToACP", pb.ToACPRequest(envelope_json='{"params": "str"}'), "envelope_json.params"),
    ("ToACP", pb.ToACPRequest(envelope_json='{"identity_origin": "bogus"}'), "envelope_json.identity_origin"),
    ("ToACP", pb.ToACPRequest(envelope=e2a_pb2.E2AEnvelope(params="[1,2]")), "envelope.params"),
    ("ToACP", pb.ToACPRequest(envelope=e2a_pb2.E2AEnvelope(method="chat.send"), dialect=pb.ACP_DIALECT_WIRE,
                              session_prompt_methods=["chat.send"]), "envelope.session_id"),
    ("ToA2AStream", pb.ToA2AStreamRequest(), "source"),
    ("ToA2AStream", pb.ToA2AStreamRequest(response_json='{"response_kind": 5}'), "response_json.response_kind"),
    ("ToA2AStream", pb.ToA2AStreamRequest(response=e2a_pb2.E2AResponse(response_kind="e2a.chunk", body='{"delta":"x"}'),
                                          project_native_kinds=True), "response.task_id"),
    ("ToA2AStream", pb.ToA2AStreamRequest(response=e2a_pb2.E2AResponse(response_kind="e2a.chunk", request_id="r", body='{"delta":1}'),
                                          project_native_kinds=True), "response.body.delta"),
    ("FromA2A", pb.FromA2ARequest(json='{"configuration": {}}'), "json.message"),
    ("FromA2A", pb.FromA2ARequest(json='{"jsonrpc":"2.0","method":"tasks/get","params":{}}'), "json.method"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "request_message", "field"), BAD_REQUESTS, ids=[f"{m}-{f}" for m, _, f in BAD_REQUESTS]
)
def test_bad_input_is_invalid_argument_naming_the_field(
    stub: Any, server_address: str, method: str, request_message: Any, field: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub, method)(request_message, timeout=10)
    error = caught.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert field in error.details()
    assert field in _bad_request(error)
    with grpc.insecure_channel(server_address) as channel:  # and the server is still fine
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_unknown_oneof_case_is_invalid_argument(server_address: str) -> None:
    """A newer client may set a oneof case this server does not know: field 99 reaches us as unknown."""
    unknown_case = bytes([0x9A, 0x06, 2]) + b"{}"  # varint tag of field 99, wire type 2; 2 bytes
    with grpc.insecure_channel(server_address) as channel:
        call = channel.unary_unary("/e2a.v1.ConversionService/ToACP", response_deserializer=pb.ToACPResponse.FromString)
        with pytest.raises(grpc.RpcError) as caught:
            call(unknown_case, timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _bad_request(caught.value) == ["source"]


def test_oversize_message_is_resource_exhausted() -> None:
    with running_server("--max-message-bytes", "2048") as address, grpc.insecure_channel(address) as channel:
        stub = pb_grpc.ConversionServiceStub(channel)
        small = stub.FromACP(pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"method":"initialize"}'), timeout=10)
        assert len(small.records) == 1
        with pytest.raises(grpc.RpcError) as caught:
            stub.FromACP(
                pb.FromACPRequest(json=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * 5000})), timeout=10
            )
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


# --- security, health, shutdown ------------------------------------------------------------------


def test_bearer_token_is_required_except_for_health(tmp_path: Path) -> None:
    token = "s3cret-token-value"
    log = tmp_path / "server.log"
    request = pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
    with (
        running_server("-v", env={"E2A_GRPC_TOKEN": token}, log=log) as address,
        grpc.insecure_channel(address) as channel,
    ):
        stub = pb_grpc.ConversionServiceStub(channel)
        for metadata in [(), (("authorization", "Bearer wrong"),), (("authorization", token),)]:
            with pytest.raises(grpc.RpcError) as caught:
                stub.FromACP(request, metadata=metadata, timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert stub.FromACP(request, metadata=(("authorization", f"Bearer {token}"),), timeout=10).records
        # A credential inside the converted record is not logged either, also when the call fails.
        envelope = E2AEnvelope(
            method="session/prompt", params={"text": "hi"}, auth=E2AAuth(bearer_token="envelope-token-789")
        )
        authorized = (("authorization", f"Bearer {token}"),)
        assert stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto()), metadata=authorized, timeout=10).jsonrpc
        bad = pb.ToACPRequest(envelope_json='{"auth": {"bearer_token": "envelope-token-789"}, "params": 1}')
        with pytest.raises(grpc.RpcError):
            stub.ToACP(bad, metadata=authorized, timeout=10)
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    text = log.read_text()
    assert "listening on" in text and "auth=bearer token" in text
    assert token not in text and "envelope-token-789" not in text


def test_sigterm_shuts_down_gracefully(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    port = free_port()
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "e2a_grpc", "serve", "--port", str(port), "--grace-seconds", "2"],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_serving(f"127.0.0.1:{port}", process, output, None)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
        finally:
            stop_process(process)
    text = log.read_text()
    assert "shutting down" in text and "stopped" in text


def test_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    with running_server("--tls-cert", str(cert), "--tls-key", str(key), health_tls_ca=cert) as address:
        credentials = grpc.ssl_channel_credentials(cert.read_bytes())
        with grpc.secure_channel(address, credentials) as channel:
            reply = pb_grpc.ConversionServiceStub(channel).FromACP(
                pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"method":"initialize"}'), timeout=10
            )
            assert len(reply.records) == 1
        with grpc.insecure_channel(address) as plain, pytest.raises(grpc.RpcError):
            pb_grpc.ConversionServiceStub(plain).FromACP(pb.FromACPRequest(json="{}"), timeout=3)
