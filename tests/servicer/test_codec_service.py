"""The CodecService in process: the project's ``E2AServer`` on 127.0.0.1 (tests/conftest.py,
``in_process_server``), one per module, called through a ``grpc.aio`` channel.

The service must answer exactly what the local model does (``from_json(...).to_proto()``,
``from_proto(...).to_json()``), and name a bad field under the request field that carried it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, TypeVar, cast

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from e2a.v1 import codec_service_pb2 as pb
from e2a.v1 import codec_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import E2AEnvelope, E2AFieldError, E2AResponse
from e2a_grpc.client.conversion import ServiceError
from e2a_grpc.grpc import codec_servicer
from tests.support import vectors

#: Every async test here runs in the module's event loop, where the module's server runs.
in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def stub(channel: grpc.aio.Channel) -> pb_grpc.CodecServiceAsyncStub:
    return pb_grpc.CodecServiceStub(channel)


@in_module_loop
async def test_health_reports_the_service_serving(channel: grpc.aio.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service=pb.DESCRIPTOR.services_by_name["CodecService"].full_name)
    reply = await health.Check(request, timeout=10)  # type: ignore[attr-defined]  # the stubs list no methods
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def _ordered(text: str) -> Any:
    """JSON text as Python values, objects as lists of pairs: equal only if key order is equal too."""
    return json.loads(text, object_pairs_hook=list)


# Big integers beyond 64 bits, 1.0 staying a float, key order that is not sorted, non-ASCII text
# (astral plane included) and escapes.
PARAMS_TEXT = '{"z":1180591620717411303424,"a":1.0,"m":-0.0,"ünï":"😀 \\u0000 \\"q\\"","n":[{"y":1,"b":null}]}'
ENVELOPE_TEXT = (
    '{"request_id":"req-1","jsonrpc_id":36893488147419103232,"method":"chat.send","session_id":"s-ü",'
    f'"params":{PARAMS_TEXT},"expected_output_modes":["text/plain"],"acp_meta":{{"k":[1,2.5e300]}}}}'
)
RESPONSE_TEXT = (
    '{"request_id":"req-1","sequence":9223372036854775807,"is_final":true,"status":"succeeded",'
    f'"response_kind":"e2a.complete","body":{{"result":{PARAMS_TEXT}}},"jsonrpc_id":1.0}}'
)


@in_module_loop
async def test_envelope_round_trip_keeps_big_integers_key_order_and_unicode(
    stub: pb_grpc.CodecServiceAsyncStub,
) -> None:
    message = (await stub.EnvelopeFromJson(pb.EnvelopeFromJsonRequest(json=ENVELOPE_TEXT), timeout=10)).envelope
    assert message == E2AEnvelope.from_json(ENVELOPE_TEXT).to_proto()
    assert message.jsonrpc_id.big_integer_value == "36893488147419103232"
    text = (await stub.EnvelopeToJson(pb.EnvelopeToJsonRequest(envelope=message), timeout=10)).json
    assert text == E2AEnvelope.from_proto(message).to_json()
    written = dict(_ordered(text))
    assert written["params"] == _ordered(PARAMS_TEXT) and written["jsonrpc_id"] == 36893488147419103232
    assert json.loads(text)["params"]["a"] == 1.0 and isinstance(json.loads(text)["params"]["a"], float)
    assert written["session_id"] == "s-ü" and '"😀' in text  # written as UTF-8, not \u escapes
    # Every field, in protocol order: the wire JSON is canonical.
    assert [key for key, _ in _ordered(text)] == list(E2AEnvelope().to_dict())


@in_module_loop
async def test_response_round_trip_keeps_big_integers_key_order_and_unicode(
    stub: pb_grpc.CodecServiceAsyncStub,
) -> None:
    message = (await stub.ResponseFromJson(pb.ResponseFromJsonRequest(json=RESPONSE_TEXT), timeout=10)).response
    assert message == E2AResponse.from_json(RESPONSE_TEXT).to_proto()
    assert message.sequence == 2**63 - 1 and message.jsonrpc_id.number_value == 1.0
    text = (await stub.ResponseToJson(pb.ResponseToJsonRequest(response=message), timeout=10)).json
    assert text == E2AResponse.from_proto(message).to_json()
    written = dict(_ordered(text))
    assert written["body"] == [("result", _ordered(PARAMS_TEXT))]
    assert '"jsonrpc_id":1.0' in text and '"sequence":9223372036854775807' in text


@in_module_loop
async def test_legacy_keys_are_read(stub: pb_grpc.CodecServiceAsyncStub) -> None:
    legacy_envelope = {"req_method": "chat.send", "channel_id": "web", "timestamp": 0, "prompt": "hi"}
    message = (await stub.EnvelopeFromJson(pb.EnvelopeFromJsonRequest(json=json.dumps(legacy_envelope)))).envelope
    assert message == E2AEnvelope.from_dict(legacy_envelope).to_proto()
    assert (message.method, message.channel, message.timestamp) == ("chat.send", "web", "1970-01-01T00:00:00+00:00")
    legacy_response = {"response_kind": None, "channel_id": "web"}
    response = (await stub.ResponseFromJson(pb.ResponseFromJsonRequest(json=json.dumps(legacy_response)))).response
    assert (response.response_kind, response.channel) == ("", "web")


@in_module_loop
async def test_an_unset_message_is_the_empty_record(stub: pb_grpc.CodecServiceAsyncStub) -> None:
    text = (await stub.EnvelopeToJson(pb.EnvelopeToJsonRequest())).json
    assert text == E2AEnvelope.from_proto(e2a_pb2.E2AEnvelope()).to_json()
    text = (await stub.ResponseToJson(pb.ResponseToJsonRequest())).json
    assert text == E2AResponse.from_proto(e2a_pb2.E2AResponse()).to_json()


BAD_REQUESTS = [
    ("EnvelopeFromJson", pb.EnvelopeFromJsonRequest(json="{not json"), "json"),
    ("EnvelopeFromJson", pb.EnvelopeFromJsonRequest(), "json"),
    ("EnvelopeFromJson", pb.EnvelopeFromJsonRequest(json='{"params": "str"}'), "json.params"),
    ("EnvelopeFromJson", pb.EnvelopeFromJsonRequest(json='{"identity_origin": "bogus"}'), "json.identity_origin"),
    ("EnvelopeFromJson", pb.EnvelopeFromJsonRequest(json='{"auth": {"extra_headers": []}}'), "json.auth.extra_headers"),
    ("EnvelopeFromJson", pb.EnvelopeFromJsonRequest(json='{"jsonrpc_id": true}'), "json.jsonrpc_id"),
    ("EnvelopeToJson", pb.EnvelopeToJsonRequest(envelope=e2a_pb2.E2AEnvelope(params="[1,2]")), "envelope.params"),
    ("EnvelopeToJson", pb.EnvelopeToJsonRequest(envelope=e2a_pb2.E2AEnvelope(acp_meta="{")), "envelope.acp_meta"),
    ("ResponseFromJson", pb.ResponseFromJsonRequest(json='{"response_kind": 5}'), "json.response_kind"),
    ("ResponseFromJson", pb.ResponseFromJsonRequest(json='{"sequence": 1180591620717411303424}'), "json.sequence"),
    ("ResponseFromJson", pb.ResponseFromJsonRequest(json='{"body": {"a": NaN}}'), "json"),
    ("ResponseToJson", pb.ResponseToJsonRequest(response=e2a_pb2.E2AResponse(body="{")), "response.body"),
    ("ResponseToJson", pb.ResponseToJsonRequest(response=e2a_pb2.E2AResponse(
        jsonrpc_id=e2a_pb2.JsonRpcId(big_integer_value="12a"))), "response.jsonrpc_id"),
    ("ResponseToJson", pb.ResponseToJsonRequest(response=e2a_pb2.E2AResponse(identity_origin=cast(e2a_pb2.IdentityOrigin, 77))),
     "response.identity_origin"),
]  # fmt: skip


@in_module_loop
@pytest.mark.parametrize(
    ("method", "request_message", "field"), BAD_REQUESTS, ids=[f"{m}-{f}" for m, _, f in BAD_REQUESTS]
)
async def test_bad_input_is_invalid_argument_naming_the_field(
    stub: pb_grpc.CodecServiceAsyncStub, method: str, request_message: Any, field: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await getattr(stub, method)(request_message, timeout=10)
    error = ServiceError.from_rpc_error(caught.value)
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT, error
    assert [path for path, _ in error.violations] == [field]
    assert str(caught.value.details()).startswith(f"{field}: ")


# --- Transcode -------------------------------------------------------------------------------------


def _expected(request: pb.TranscodeRequest) -> pb.TranscodeResponse:
    """What the local model makes of one record, or its error under the request's case."""
    case = request.WhichOneof("record")
    try:
        if case == "envelope_json":
            return pb.TranscodeResponse(envelope=E2AEnvelope.from_json(request.envelope_json).to_proto())
        if case == "response_json":
            return pb.TranscodeResponse(response=E2AResponse.from_json(request.response_json).to_proto())
        if case == "envelope":
            return pb.TranscodeResponse(envelope_json=E2AEnvelope.from_proto(request.envelope).to_json())
        assert case == "response"
        return pb.TranscodeResponse(response_json=E2AResponse.from_proto(request.response).to_json())
    except E2AFieldError as exc:
        violation = pb.TranscodeError.FieldViolation(field=exc.under(case).field, description=exc.problem)
        return pb.TranscodeResponse(error=pb.TranscodeError(field_violations=[violation]))


Record = TypeVar("Record", E2AEnvelope, E2AResponse)


def _read(model: type[Record], text: str) -> Record | None:
    try:
        return model.from_json(text)
    except E2AFieldError:
        return None


def _vector_requests() -> Iterator[pb.TranscodeRequest]:
    """Every record of the model's vectors (legacy keys, ill-typed values) as JSON, and those the
    model reads also as messages: all four directions, bad records among good ones.
    """
    for case in vectors.load("E2AEnvelope.from_dict"):
        text = json.dumps(case["input"]["data"])
        yield pb.TranscodeRequest(envelope_json=text)
        if (envelope := _read(E2AEnvelope, text)) is not None:
            yield pb.TranscodeRequest(envelope=envelope.to_proto())
    for case in vectors.load("E2AResponse.from_dict"):
        text = json.dumps(case["input"]["data"])
        yield pb.TranscodeRequest(response_json=text)
        if (response := _read(E2AResponse, text)) is not None:
            yield pb.TranscodeRequest(response=response.to_proto())


async def _transcode(stub: pb_grpc.CodecServiceAsyncStub, requests: list[pb.TranscodeRequest]) -> list[Any]:
    call = stub.Transcode(iter(requests), timeout=60)
    replies = [reply async for reply in call]
    assert await call.code() == grpc.StatusCode.OK
    return replies


@in_module_loop
async def test_transcode_many_records_in_both_directions_matches_the_model(
    stub: pb_grpc.CodecServiceAsyncStub,
) -> None:
    requests = [*_vector_requests(), pb.TranscodeRequest(envelope_json=ENVELOPE_TEXT)] * 3
    replies = await _transcode(stub, requests)
    assert [reply.index for reply in replies] == list(range(len(requests)))
    for index, (request, reply) in enumerate(zip(requests, replies, strict=True)):
        expected = _expected(request)
        expected.index = index
        assert reply == expected, (index, request)
    cases = {reply.WhichOneof("result") for reply in replies}
    assert cases == {"envelope", "response", "envelope_json", "response_json", "error"}


@in_module_loop
async def test_a_bad_record_gets_an_error_reply_and_the_stream_goes_on(stub: pb_grpc.CodecServiceAsyncStub) -> None:
    good = pb.TranscodeRequest(envelope_json=ENVELOPE_TEXT)
    requests = [
        *[good] * 5,
        pb.TranscodeRequest(envelope_json='{"params": "str"}'),
        pb.TranscodeRequest(),
        pb.TranscodeRequest(response=e2a_pb2.E2AResponse(body="[]")),
        pb.TranscodeRequest(response_json="{"),
        *[good] * 5,
    ]
    replies = await _transcode(stub, requests)
    assert [reply.index for reply in replies] == list(range(len(requests)))
    results = [reply.WhichOneof("result") for reply in replies]
    assert results == ["envelope"] * 5 + ["error"] * 4 + ["envelope"] * 5
    violations = [[(v.field, v.description) for v in reply.error.field_violations] for reply in replies[5:9]]
    assert violations == [
        [("envelope_json.params", "expected an object, got string")],
        [("record", "set one of envelope_json, response_json, envelope, response")],
        [("response.body", "expected JSON text of an object, got array")],
        [("response_json", violations[3][0][1])],
    ]
    assert violations[3][0][1].startswith("invalid JSON text")
    # The error's bytes are a google.rpc.BadRequest.
    bad_request = error_details_pb2.BadRequest.FromString(replies[5].error.SerializeToString())
    assert [(v.field, v.description) for v in bad_request.field_violations] == violations[0]


@in_module_loop
async def test_an_empty_stream_ends_ok_without_replies(stub: pb_grpc.CodecServiceAsyncStub) -> None:
    assert await _transcode(stub, []) == []


@in_module_loop
async def test_a_bug_ends_the_transcode_stream_with_internal_after_the_replies_before_it(
    stub: pb_grpc.CodecServiceAsyncStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcode = codec_servicer.transcode

    def failing_at_two(index: int, request: pb.TranscodeRequest) -> pb.TranscodeResponse:
        if index == 2:
            raise RuntimeError("a bug")
        return transcode(index, request)

    monkeypatch.setattr(codec_servicer, "transcode", failing_at_two)
    call = stub.Transcode(iter([pb.TranscodeRequest(envelope_json=ENVELOPE_TEXT)] * 5), timeout=10)
    indexes: list[int] = []
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for reply in call:
            indexes.append(reply.index)
    assert indexes == [0, 1]
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "RuntimeError" in str(caught.value.details()) and "a bug" not in str(caught.value.details())


@in_module_loop
async def test_a_client_that_does_not_read_holds_the_server_back(
    stub: pb_grpc.CodecServiceAsyncStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Flow control reaches the servicer: with nobody reading, it stops taking records, and then
    every record is answered once the client reads.
    """
    converted = 0
    transcode = codec_servicer.transcode

    def counting(index: int, request: pb.TranscodeRequest) -> pb.TranscodeResponse:
        nonlocal converted
        converted += 1
        return transcode(index, request)

    monkeypatch.setattr(codec_servicer, "transcode", counting)
    # ~100 KB per record and reply: 2000 of them are 200 MB each way, far beyond any HTTP/2 window.
    big = pb.TranscodeRequest(response=e2a_pb2.E2AResponse(body=json.dumps({"text": "x" * 100_000})))
    total = 2000
    call = stub.Transcode(timeout=120)

    async def write_all() -> None:
        for _ in range(total):
            await call.write(big)
        await call.done_writing()

    writer = asyncio.create_task(write_all())
    while not converted:  # a busy machine may take longer than one look below to start
        await asyncio.sleep(0.05)
    previous = -1
    while converted != previous:  # until the server stops converting
        previous = converted
        await asyncio.sleep(0.5)
    assert 0 < converted < total // 4 and not writer.done()
    indexes = [reply.index async for reply in call]
    await writer
    assert indexes == list(range(total)) and converted == total
