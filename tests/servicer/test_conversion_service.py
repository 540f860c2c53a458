"""The ConversionService in process: the project's ``E2AServer`` on 127.0.0.1 (tests/conftest.py,
``in_process_server``), one per module, called through a ``grpc.aio`` channel.

TLS and bearer-token auth through the CLI run against a real process: tests/e2e/test_server_process.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import (
    E2AEnvelope,
    E2AFieldError,
    E2AResponse,
    e2a_response_to_acp_jsonrpc_response,
    envelope_to_acp_jsonrpc_call,
    jsontext,
)
from tests.conftest import REPO_ROOT, in_process_server
from tests.support import vectors
from tests.support.status import field_violations
from tests.support.wellformed import envelope_well_typed, response_well_typed

#: Every async test here runs in the module's event loop, where the module's server runs.
in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def stub(channel: grpc.aio.Channel) -> pb_grpc.ConversionServiceAsyncStub:
    return pb_grpc.ConversionServiceStub(channel)


def _violated_fields(error: grpc.aio.AioRpcError) -> list[str]:
    return [field for field, _ in field_violations(error)]


def _model_error(model: type[E2AEnvelope] | type[E2AResponse], document: Any) -> E2AFieldError | None:
    """The error ``model.from_dict`` raises on this vector input, or None if it reads it."""
    try:
        model.from_dict(document)
    except E2AFieldError as exc:
        return exc
    return None


def _split_by_model(name: str, model: type[E2AEnvelope] | type[E2AResponse], key: str) -> tuple[list[Any], list[Any]]:
    """A vector file's cases as (those the model reads, those it rejects), by the input document at
    ``key``: every case is in exactly one list, and each list has its own test, so no case can drop
    out unseen.
    """
    cases = vectors.load(name)
    read = [pytest.param(case, id=str(case["i"])) for case in cases if _model_error(model, case["input"][key]) is None]
    rejected = [
        pytest.param(case, id=str(case["i"])) for case in cases if _model_error(model, case["input"][key]) is not None
    ]
    assert len(read) + len(rejected) == len(cases) and read and rejected, name
    return read, rejected


async def _assert_rejected_like_the_model(
    call: Any, request: Any, model: type[E2AEnvelope] | type[E2AResponse], document: Any, request_field: str
) -> None:
    """The service rejects the vector input sent as JSON text, naming the field the model names."""
    error = _model_error(model, document)
    well_typed = envelope_well_typed if model is E2AEnvelope else response_well_typed
    assert error is not None and not well_typed(document)  # only ill-typed input may be rejected
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
    assert _violated_fields(caught.value) == [f"{request_field}.{error.field}"]


# --- ToACP -----------------------------------------------------------------------------------------


TO_ACP_READ, TO_ACP_REJECTED = _split_by_model("envelope_to_acp_jsonrpc_call", E2AEnvelope, "envelope_dict")


@in_module_loop
@pytest.mark.parametrize("case", TO_ACP_READ)
async def test_to_acp_envelope_matches_the_local_conversion_and_the_reference(
    stub: pb_grpc.ConversionServiceAsyncStub, case: dict[str, Any]
) -> None:
    envelope = E2AEnvelope.from_dict(case["input"]["envelope_dict"])
    reply = await stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto()))
    assert reply.WhichOneof("result") == "jsonrpc"
    assert reply.jsonrpc == jsontext.dumps(envelope_to_acp_jsonrpc_call(envelope))
    # The reference's output binds only for well-typed input (testdata/README.md): an ill-typed
    # input this model still reads is checked against the local conversion above only.
    if envelope_well_typed(case["input"]["envelope_dict"]):
        vectors.assert_matches(json.loads(reply.jsonrpc), case["output"]["ok"], [])


@in_module_loop
@pytest.mark.parametrize("case", TO_ACP_REJECTED)
async def test_to_acp_rejects_the_envelopes_the_model_rejects(
    stub: pb_grpc.ConversionServiceAsyncStub, case: dict[str, Any]
) -> None:
    envelope_dict = case["input"]["envelope_dict"]
    request = pb.ToACPRequest(envelope_json=json.dumps(envelope_dict))
    await _assert_rejected_like_the_model(stub.ToACP, request, E2AEnvelope, envelope_dict, "envelope_json")


TO_ACP_RESPONSE_READ, TO_ACP_RESPONSE_REJECTED = _split_by_model(
    "e2a_response_to_acp_jsonrpc_response", E2AResponse, "response_dict"
)


@in_module_loop
@pytest.mark.parametrize("case", TO_ACP_RESPONSE_READ)
async def test_to_acp_response_matches_the_local_conversion_and_the_reference(
    stub: pb_grpc.ConversionServiceAsyncStub, case: dict[str, Any]
) -> None:
    response = E2AResponse.from_dict(case["input"]["response_dict"])
    reply = await stub.ToACP(pb.ToACPRequest(response=response.to_proto()))
    expected = e2a_response_to_acp_jsonrpc_response(response)
    if expected is None:
        assert reply.WhichOneof("result") == "not_applicable" and reply.not_applicable.reason
    else:
        assert json.loads(reply.jsonrpc) == expected
    if response_well_typed(case["input"]["response_dict"]):  # the reference binds for well-typed input
        actual = None if expected is None else json.loads(reply.jsonrpc)
        vectors.assert_matches(actual, case["output"]["ok"], [])


@in_module_loop
@pytest.mark.parametrize("case", TO_ACP_RESPONSE_REJECTED)
async def test_to_acp_rejects_the_responses_the_model_rejects(
    stub: pb_grpc.ConversionServiceAsyncStub, case: dict[str, Any]
) -> None:
    response_dict = case["input"]["response_dict"]
    request = pb.ToACPRequest(response_json=json.dumps(response_dict))
    await _assert_rejected_like_the_model(stub.ToACP, request, E2AResponse, response_dict, "response_json")


@in_module_loop
async def test_to_acp_keeps_json_lossless(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    envelope = E2AEnvelope(
        method="session/prompt", jsonrpc_id=2**70, params={"big": 2**80, "f": 1.0, "z": -0.0, "u": "é🌍\ud800", "a": 1}
    )
    reply = await stub.ToACP(pb.ToACPRequest(envelope_json=envelope.to_json()))
    assert reply.jsonrpc.startswith('{"jsonrpc":"2.0","id":1180591620717411303424,')
    params = json.loads(reply.jsonrpc)["params"]
    assert list(params) == ["big", "f", "z", "u", "a"]
    assert params["big"] == 2**80 and repr(params["f"]) == "1.0" and repr(params["z"]) == "-0.0"
    assert params["u"] == "é🌍\ud800"


@in_module_loop
async def test_to_acp_maps_chat_send_and_emits_wire_acp(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
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
    default = await stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto()))
    assert json.loads(default.jsonrpc)["method"] == "chat.send"  # the reference shape: passed through

    mapped = await stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto(), session_prompt_methods=["chat.send"]))
    reference = json.loads(mapped.jsonrpc)
    assert reference["method"] == "session/prompt" and reference["params"]["session_id"] == "s1"

    wire = await stub.ToACP(
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


@in_module_loop
async def test_wire_acp_prompt_result_is_camel_case(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    response = E2AResponse(response_kind="acp.prompt_result", jsonrpc_id="7", body={"stop_reason": "end_turn"})
    reply = await stub.ToACP(pb.ToACPRequest(response=response.to_proto(), dialect=pb.ACP_DIALECT_WIRE))
    assert json.loads(reply.jsonrpc) == {"jsonrpc": "2.0", "id": "7", "result": {"stopReason": "end_turn"}}


# --- FromACP ---------------------------------------------------------------------------------------


@in_module_loop
async def test_from_acp_request_reads_camel_case_session_id(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    text = '{"jsonrpc":"2.0","id":42,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}'
    reply = await stub.FromACP(pb.FromACPRequest(json=text, channel="ide"))
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


@in_module_loop
async def test_from_acp_agent_direction_and_batch(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    batch: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "he"}}}},
        {"jsonrpc": "2.0", "id": "1.0", "result": {"stopReason": "end_turn"}},
        {"jsonrpc": "2.0", "id": 1.0, "error": {"code": -32603, "message": "boom", "data": {"n": 2**70}}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}},
    ]  # fmt: skip
    text = json.dumps(batch)
    records = (await stub.FromACP(pb.FromACPRequest(json=text))).records
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

TO_A2A_READ, TO_A2A_REJECTED = _split_by_model("e2a_response_to_a2a_stream_payload", E2AResponse, "response_dict")


@in_module_loop
@pytest.mark.parametrize("case", TO_A2A_READ)
async def test_to_a2a_stream_matches_the_reference(
    stub: pb_grpc.ConversionServiceAsyncStub, case: dict[str, Any]
) -> None:
    response = E2AResponse.from_dict(case["input"]["response_dict"])
    reply = await stub.ToA2AStream(pb.ToA2AStreamRequest(response=response.to_proto()))
    if case["output"]["ok"] is None:
        assert reply.WhichOneof("result") == "not_applicable"
    else:
        vectors.assert_matches(json.loads(reply.stream_response), case["output"]["ok"], [])


@in_module_loop
@pytest.mark.parametrize("case", TO_A2A_REJECTED)
async def test_to_a2a_stream_rejects_the_responses_the_model_rejects(
    stub: pb_grpc.ConversionServiceAsyncStub, case: dict[str, Any]
) -> None:
    response_dict = case["input"]["response_dict"]
    request = pb.ToA2AStreamRequest(response_json=json.dumps(response_dict))
    await _assert_rejected_like_the_model(stub.ToA2AStream, request, E2AResponse, response_dict, "response_json")


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


def _a2a_verdicts(lines: list[str]) -> list[str]:
    """The a2a-sdk's verdict on each StreamResponse JSON line (tests/support/tools/a2a_validate.py)."""
    return subprocess.run(
        [sys.executable, "-m", "tests.support.tools.a2a_validate"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=True,
    ).stdout.splitlines()


@pytest.mark.subprocess  # the a2a-sdk validator runs as a process
@in_module_loop
async def test_to_a2a_stream_output_is_accepted_by_the_a2a_sdk(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    outputs = []
    for response in A2A_EVENTS:
        reply = await stub.ToA2AStream(pb.ToA2AStreamRequest(response=response.to_proto(), project_native_kinds=True))
        assert reply.WhichOneof("result") == "stream_response", response.response_kind
        document = json.loads(reply.stream_response)
        assert len(document) == 1 and next(iter(document)) in {"task", "message", "statusUpdate", "artifactUpdate"}
        outputs.append(reply.stream_response)
    # Native kinds are not projected unless asked for.
    plain = await stub.ToA2AStream(pb.ToA2AStreamRequest(response=A2A_EVENTS[2].to_proto()))
    assert plain.WhichOneof("result") == "not_applicable"
    verdicts = _a2a_verdicts(outputs)
    assert verdicts == ["ok"] * len(outputs), list(zip(outputs, verdicts, strict=True))


@pytest.mark.subprocess
def test_the_a2a_validator_rejects_invalid_events() -> None:
    bad = [
        {"artifactUpdate": {"taskId": "t"}},
        {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "NOPE"}}},
    ]
    verdicts = _a2a_verdicts([json.dumps(b) for b in bad])
    assert all(v.startswith("error:") for v in verdicts) and len(verdicts) == 2


# --- FromA2A -------------------------------------------------------------------------------------


@in_module_loop
async def test_from_a2a_params_and_jsonrpc_request(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
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
    envelope = E2AEnvelope.from_proto((await stub.FromA2A(pb.FromA2ARequest(json=json.dumps(params)))).envelope)
    assert (envelope.method, envelope.task_id, envelope.context_id, envelope.message_id) == (
        "session/prompt",
        "t1",
        "c1",
        "m1",
    )
    assert envelope.expected_output_modes == ["text/plain"] and envelope.a2a_metadata == {"k": 2**70}
    assert envelope.params == {"message": params["message"], "configuration": params["configuration"]}
    request = {"jsonrpc": "2.0", "id": 5, "method": "message/send", "params": params}
    wrapped = E2AEnvelope.from_proto((await stub.FromA2A(pb.FromA2ARequest(json=json.dumps(request)))).envelope)
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


@in_module_loop
@pytest.mark.parametrize(
    ("method", "request_message", "field"), BAD_REQUESTS, ids=[f"{m}-{f}" for m, _, f in BAD_REQUESTS]
)
async def test_bad_input_is_invalid_argument_naming_the_field(
    stub: pb_grpc.ConversionServiceAsyncStub, channel: grpc.aio.Channel, method: str, request_message: Any, field: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await getattr(stub, method)(request_message, timeout=10)
    error = caught.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert field in str(error.details())
    assert field in _violated_fields(error)
    health_stub = health_pb2_grpc.HealthStub(channel)
    health = await health_stub.Check(health_pb2.HealthCheckRequest(), timeout=5)  # type: ignore[attr-defined]  # the stubs list no methods
    assert health.status == health_pb2.HealthCheckResponse.SERVING  # and the server is still fine


@in_module_loop
async def test_unknown_oneof_case_is_invalid_argument(channel: grpc.aio.Channel) -> None:
    """A newer client may set a oneof case this server does not know: field 99 reaches us as unknown."""
    unknown_case = bytes([0x9A, 0x06, 2]) + b"{}"  # varint tag of field 99, wire type 2; 2 bytes
    call: grpc.aio.UnaryUnaryMultiCallable[bytes, pb.ToACPResponse] = channel.unary_unary(
        "/e2a.v1.ConversionService/ToACP", response_deserializer=pb.ToACPResponse.FromString
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(unknown_case, timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _violated_fields(caught.value) == ["source"]


@in_module_loop
async def test_oversize_message_is_resource_exhausted() -> None:
    async with (
        in_process_server(max_message_bytes=2048) as small_server,
        grpc.aio.insecure_channel(small_server.address) as channel,
    ):
        stub = pb_grpc.ConversionServiceStub(channel)
        small = await stub.FromACP(pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"method":"initialize"}'), timeout=10)
        assert len(small.records) == 1
        oversize = pb.FromACPRequest(json=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * 5000}))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.FromACP(oversize, timeout=10)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
