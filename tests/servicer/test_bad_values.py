"""Values the schema can hold but E2A cannot carry get INVALID_ARGUMENT naming the field, with a short
message: integers past the digit limit, lone surrogates where protobuf needs Unicode text, and
request content too long to quote (issue 10, items 4, 5 and 6).
"""

from __future__ import annotations

from collections.abc import Awaitable

import grpc
import pytest

from e2a.v1 import agent_service_pb2, agent_service_pb2_grpc, e2a_pb2
from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AValueError, jsontext
from e2a_grpc.errors import MAX_FIELD_CHARS, MAX_PROBLEM_CHARS
from e2a_grpc.model.proto import from_proto_jsonrpc_id, to_proto_jsonrpc_id
from tests.support.status import field_violations

in_module_loop = pytest.mark.asyncio(loop_scope="module")
TOO_MANY_DIGITS = "9" * (jsontext.MAX_INTEGER_DIGITS + 1)


async def _rejected(call: Awaitable[object]) -> list[tuple[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT, raised.value.details()
    trailers = sum(len(key) + len(str(value)) for key, value in raised.value.trailing_metadata() or ())
    assert trailers < 8_000 and len(raised.value.details() or "") < 2_000
    return field_violations(raised.value)


def test_big_integer_value_within_the_limit_round_trips() -> None:
    digits = "9" * jsontext.MAX_INTEGER_DIGITS
    assert from_proto_jsonrpc_id(e2a_pb2.JsonRpcId(big_integer_value=digits)) == int(digits)
    assert to_proto_jsonrpc_id(-int(digits)).big_integer_value == f"-{digits}"


def test_integers_past_the_digit_limit_are_refused_naming_the_field() -> None:
    with pytest.raises(E2AValueError, match=r"jsonrpc_id: big_integer_value has 4301 digits, more than 4300"):
        from_proto_jsonrpc_id(e2a_pb2.JsonRpcId(big_integer_value=TOO_MANY_DIGITS))
    with pytest.raises(E2AValueError, match=r"jsonrpc_id: an integer of more than 4300 digits"):
        to_proto_jsonrpc_id(10**jsontext.MAX_INTEGER_DIGITS)


@in_module_loop
@pytest.mark.parametrize("rpc", ["ToACP", "ToA2AStream"])
async def test_a_big_integer_id_past_the_limit_gets_invalid_argument(channel: grpc.aio.Channel, rpc: str) -> None:
    stub = pb_grpc.ConversionServiceStub(channel)
    big_id = e2a_pb2.JsonRpcId(big_integer_value=TOO_MANY_DIGITS)
    call: Awaitable[object]
    if rpc == "ToACP":
        call = stub.ToACP(pb.ToACPRequest(envelope=e2a_pb2.E2AEnvelope(method="x", jsonrpc_id=big_id)))
        field = "envelope.jsonrpc_id"
    else:
        call = stub.ToA2AStream(pb.ToA2AStreamRequest(response=e2a_pb2.E2AResponse(jsonrpc_id=big_id)))
        field = "response.jsonrpc_id"
    (violation,) = await _rejected(call)
    assert violation[0] == field and "digits" in violation[1]


@in_module_loop
async def test_chat_with_a_big_integer_id_past_the_limit_gets_invalid_argument(channel: grpc.aio.Channel) -> None:
    envelope = E2AEnvelope(method="chat.send", params={"text": "hi"}).to_proto()
    envelope.jsonrpc_id.big_integer_value = TOO_MANY_DIGITS
    stream = agent_service_pb2_grpc.AgentServiceStub(channel).Chat(agent_service_pb2.ChatRequest(envelope=envelope))
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for _ in stream:
            pass
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in field_violations(raised.value)] == ["envelope.jsonrpc_id"]


@in_module_loop
@pytest.mark.parametrize("rpc", ["FromACP", "FromA2A"])
async def test_a_lone_surrogate_id_gets_invalid_argument(channel: grpc.aio.Channel, rpc: str) -> None:
    stub = pb_grpc.ConversionServiceStub(channel)
    call: Awaitable[object]
    if rpc == "FromACP":
        call = stub.FromACP(pb.FromACPRequest(json='{"jsonrpc":"2.0","id":"\\ud800","method":"session/prompt"}'))
    else:
        text = '{"jsonrpc":"2.0","id":"\\udfff","method":"message/send","params":{"message":{"parts":[]}}}'
        call = stub.FromA2A(pb.FromA2ARequest(json=text))
    (violation,) = await _rejected(call)
    assert violation[0] == "json.id" and "lone surrogate" in violation[1]


@in_module_loop
async def test_a_lone_surrogate_method_gets_invalid_argument(channel: grpc.aio.Channel) -> None:
    request = pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"method":"\\ud800"}')
    (violation,) = await _rejected(pb_grpc.ConversionServiceStub(channel).FromACP(request))
    assert violation[0] == "method"


@in_module_loop
async def test_errors_quote_only_a_short_prefix_of_the_request(channel: grpc.aio.Channel) -> None:
    stub = pb_grpc.ConversionServiceStub(channel)
    huge_method = "m" * 100_000
    (violation,) = await _rejected(stub.FromA2A(pb.FromA2ARequest(json=f'{{"method":"{huge_method}"}}')))
    assert violation[0] == "json.method"
    assert len(violation[1]) <= MAX_PROBLEM_CHARS + 40 and "more characters" in violation[1]
    huge_key = "k" * 100_000
    envelope_json = f'{{"auth":{{"extra_headers":{{"{huge_key}":1}}}}}}'
    (violation,) = await _rejected(stub.ToACP(pb.ToACPRequest(envelope_json=envelope_json)))
    assert violation[0].startswith("envelope_json.auth.extra_headers.kkk")
    assert len(violation[0]) <= MAX_FIELD_CHARS + 40
