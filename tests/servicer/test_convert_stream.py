"""ConversionService.ConvertStream in process: many conversions of all four kinds on one stream.

Each result must be what the unary RPC answers for the same conversion (or the field error it fails
with, under the conversion's case), in request order, one reply per batch; the stream's memory stays
bounded whether the client reads or not, and a cancelled stream leaves nothing running.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from google.protobuf.message import Message
from google.rpc import error_details_pb2

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.grpc import conversion_servicer
from tests.conftest import InProcessServer, in_process_server
from tests.servicer.test_conversion_service import BAD_REQUESTS
from tests.support import vectors
from tests.support.status import field_violations
from tests.support.waiting import EVENT_TIMEOUT_SECONDS

in_module_loop = pytest.mark.asyncio(loop_scope="module")

#: A small read-ahead window, so that the tests can tell it from the transport's buffers.
WINDOW = 4

#: The unary RPC of each ConvertRequest case.
UNARY_OF_CASE = {"to_acp": "ToACP", "from_acp": "FromACP", "to_a2a_stream": "ToA2AStream", "from_a2a": "FromA2A"}
_REQUEST_CASE_OF_METHOD = {method: case for case, method in UNARY_OF_CASE.items()}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[InProcessServer]:
    async with in_process_server(convert_stream_window=WINDOW) as running:
        yield running


@pytest.fixture(scope="module")
def stub(channel: grpc.aio.Channel) -> pb_grpc.ConversionServiceAsyncStub:
    return pb_grpc.ConversionServiceStub(channel)


def _vector_conversions() -> Iterator[pb.ConvertRequest]:
    """Conversions of every kind from the conversion vectors, good and bad ones mixed."""
    for case in vectors.load("envelope_to_acp_jsonrpc_call"):
        envelope_json = json.dumps(case["input"]["envelope_dict"])
        yield pb.ConvertRequest(to_acp=pb.ToACPRequest(envelope_json=envelope_json))
    for case in vectors.load("e2a_response_to_acp_jsonrpc_response"):
        response_json = json.dumps(case["input"]["response_dict"])
        yield pb.ConvertRequest(to_acp=pb.ToACPRequest(response_json=response_json))
    for case in vectors.load("e2a_response_to_a2a_stream_payload"):
        response_json = json.dumps(case["input"]["response_dict"])
        request = pb.ToA2AStreamRequest(response_json=response_json, project_native_kinds=case["i"] % 2 == 0)
        yield pb.ConvertRequest(to_a2a_stream=request)
    for case in vectors.load("envelope_from_acp_jsonrpc"):
        message = {
            "jsonrpc": "2.0",
            "id": case["i"],
            "method": case["input"]["method"],
            "params": case["input"]["params"],
        }
        yield pb.ConvertRequest(from_acp=pb.FromACPRequest(json=json.dumps(message), channel="ide"))
    for case in vectors.load("envelope_from_a2a_send_message"):
        kwargs = case["input"]["kwargs"]
        params = {"message": kwargs.get("message_body"), "metadata": kwargs.get("metadata")}
        yield pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json=json.dumps(params)))
    for method, bad_request, _ in BAD_REQUESTS:
        conversion: dict[str, Any] = {_REQUEST_CASE_OF_METHOD[method]: bad_request}
        yield pb.ConvertRequest(**conversion)


#: Fields a conversion fills with a fresh id or the clock: they differ from call to call.
_VOLATILE_FIELDS = ("response_id", "timestamp")


def _without_volatile_fields(reply: Message) -> Message:
    """``reply`` without the fresh ids and times of the records it holds."""
    copy = type(reply)()
    copy.CopyFrom(reply)
    records: list[Any] = []
    if isinstance(copy, pb.FromACPResponse):
        records = [getattr(record, record.WhichOneof("record")) for record in copy.records]
    elif isinstance(copy, pb.FromA2AResponse):
        records = [copy.envelope]
    for record in records:
        record.provenance.ClearField("converted_at")
        for field in _VOLATILE_FIELDS:
            if field in record.DESCRIPTOR.fields_by_name:
                record.ClearField(field)
    return copy


async def _unary_answer(stub: pb_grpc.ConversionServiceAsyncStub, request: pb.ConvertRequest) -> Any:
    """What the unary RPC answers for the conversion: its reply, or its violations under the case."""
    case = request.WhichOneof("conversion")
    assert case is not None
    try:
        reply = await getattr(stub, UNARY_OF_CASE[case])(getattr(request, case), timeout=10)
    except grpc.aio.AioRpcError as exc:
        assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, exc.details()
        return [(f"{case}.{field}", description) for field, description in field_violations(exc)]
    return _without_volatile_fields(reply)


def _stream_answer(reply: pb.ConvertResult) -> Any:
    result = reply.WhichOneof("result")
    if result == "error":
        return [(violation.field, violation.description) for violation in reply.error.field_violations]
    assert result is not None
    return _without_volatile_fields(getattr(reply, result))


def _batch(*conversions: pb.ConvertRequest) -> pb.ConvertStreamRequest:
    return pb.ConvertStreamRequest(conversions=conversions)


async def _convert(
    stub: pb_grpc.ConversionServiceAsyncStub, batches: list[pb.ConvertStreamRequest]
) -> list[pb.ConvertResult]:
    """Every result of the stream, checked to come one reply per batch, as many as its conversions."""
    call = stub.ConvertStream(iter(batches), timeout=60)
    replies = [reply async for reply in call]
    assert await call.code() == grpc.StatusCode.OK
    assert [len(reply.results) for reply in replies] == [len(batch.conversions) for batch in batches]
    return [result for reply in replies for result in reply.results]


@in_module_loop
async def test_every_result_is_what_the_unary_rpc_answers_in_request_order(
    stub: pb_grpc.ConversionServiceAsyncStub,
) -> None:
    conversions = list(_vector_conversions())
    # Batches of many sizes, an empty one among them; the index counts across batches.
    sizes = [1, 7, 0, 64, 1, 200]
    batches, start = [], 0
    for size in sizes:
        batches.append(_batch(*conversions[start : start + size]))
        start += size
    batches.append(_batch(*conversions[start:]))
    assert len(conversions) > start + 100
    results = await _convert(stub, batches)
    assert [result.index for result in results] == list(range(len(conversions)))
    for index, (conversion, result) in enumerate(zip(conversions, results, strict=True)):
        assert _stream_answer(result) == await _unary_answer(stub, conversion), (index, conversion)
    assert {result.WhichOneof("result") for result in results} == {*UNARY_OF_CASE, "error"}
    # Not applicable is an answer, as in the unary RPC.
    assert any(result.to_acp.WhichOneof("result") == "not_applicable" for result in results)


@in_module_loop
async def test_a_bad_conversion_gets_an_error_result_and_the_stream_goes_on(
    stub: pb_grpc.ConversionServiceAsyncStub,
) -> None:
    good = pb.ConvertRequest(
        to_acp=pb.ToACPRequest(envelope=E2AEnvelope(method="chat.send", params={"text": "hi"}).to_proto())
    )
    conversions = [
        *[good] * 3,
        pb.ConvertRequest(),
        pb.ConvertRequest(to_acp=pb.ToACPRequest(envelope_json='{"params": "str"}')),
        pb.ConvertRequest(from_acp=pb.FromACPRequest(json="{not json")),
        pb.ConvertRequest(to_a2a_stream=pb.ToA2AStreamRequest()),
        pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json="[]")),
        *[good] * 3,
    ]
    # In one batch, and one per batch: the same results.
    replies = await _convert(stub, [_batch(*conversions)])
    assert await _convert(stub, [_batch(one) for one in conversions]) == replies
    assert [reply.index for reply in replies] == list(range(len(conversions)))
    assert [reply.WhichOneof("result") for reply in replies] == ["to_acp"] * 3 + ["error"] * 5 + ["to_acp"] * 3
    fields = [[violation.field for violation in reply.error.field_violations] for reply in replies[3:8]]
    assert fields == [
        ["conversion"],
        ["to_acp.envelope_json.params"],
        ["from_acp.json"],
        ["to_a2a_stream.source"],
        ["from_a2a.json"],
    ]
    assert replies[3].error.field_violations[0].description == "set one of to_acp, from_acp, to_a2a_stream, from_a2a"
    # The error's bytes are a google.rpc.BadRequest.
    bad_request = error_details_pb2.BadRequest.FromString(replies[4].error.SerializeToString())
    assert [(v.field, v.description) for v in bad_request.field_violations] == [
        ("to_acp.envelope_json.params", "expected an object, got string")
    ]


@in_module_loop
async def test_an_empty_stream_ends_ok_without_replies(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    assert await _convert(stub, []) == []


@in_module_loop
async def test_a_bug_ends_the_stream_with_internal_after_the_replies_before_it(
    stub: pb_grpc.ConversionServiceAsyncStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    convert_one = conversion_servicer.convert_one

    def failing_at_two(index: int, request: pb.ConvertRequest) -> pb.ConvertResult:
        if index == 2:
            raise RuntimeError("a bug")
        return convert_one(index, request)

    monkeypatch.setattr(conversion_servicer, "convert_one", failing_at_two)
    batch = _batch(pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json='{"message": {"parts": [{"text": "hi"}]}}')))
    call = stub.ConvertStream(iter([batch] * 5), timeout=10)
    indexes: list[int] = []
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for reply in call:
            indexes.extend(result.index for result in reply.results)
    assert indexes == [0, 1]
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "RuntimeError" in str(caught.value.details()) and "a bug" not in str(caught.value.details())


def _big_batch() -> pb.ConvertStreamRequest:
    """~100 KB each way: a few thousand are far beyond any HTTP/2 window."""
    response = E2AResponse(response_kind="acp.prompt_result", jsonrpc_id=1, body={"text": "x" * 100_000})
    return _batch(pb.ConvertRequest(to_acp=pb.ToACPRequest(response=response.to_proto())))


@in_module_loop
async def test_a_client_that_does_not_read_holds_the_server_back(
    stub: pb_grpc.ConversionServiceAsyncStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Flow control reaches the servicer: with nobody reading, it stops converting, and then every
    request is answered, in order, once the client reads."""
    converted = 0
    convert_one = conversion_servicer.convert_one

    def counting(index: int, request: pb.ConvertRequest) -> pb.ConvertResult:
        nonlocal converted
        converted += 1
        return convert_one(index, request)

    monkeypatch.setattr(conversion_servicer, "convert_one", counting)
    big, total = _big_batch(), 2000
    call = stub.ConvertStream(timeout=120)

    async def write_all() -> None:
        for _ in range(total):
            await call.write(big)
        await call.done_writing()

    writer = asyncio.create_task(write_all())
    previous = -1
    while converted != previous:  # until the server stops converting
        previous = converted
        await asyncio.sleep(0.5)
    assert 0 < converted < total // 4 and not writer.done()
    results = [result async for reply in call for result in reply.results]
    await writer
    assert [result.index for result in results] == list(range(total)) and converted == total
    assert all(result.WhichOneof("result") == "to_acp" for result in results)


@in_module_loop
async def test_a_cancelled_stream_ends_its_handler(
    server: InProcessServer, stub: pb_grpc.ConversionServiceAsyncStub
) -> None:
    """A client that cancels mid-stream (while the server waits for its next request) leaves no
    call in flight: the handler and its read-ahead reader end."""
    batch = _batch(pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json='{"message": {"parts": [{"text": "hi"}]}}')))
    call = stub.ConvertStream(timeout=30)
    for index in range(3):
        await call.write(batch)
        reply = await call.read()
        assert isinstance(reply, pb.ConvertStreamResponse) and [result.index for result in reply.results] == [index]
    assert server.server.calls.count == 1
    call.cancel()
    assert await server.server.calls.idle(asyncio.get_running_loop().time() + EVENT_TIMEOUT_SECONDS)
    assert await call.code() == grpc.StatusCode.CANCELLED


@in_module_loop
async def test_bytes_that_are_no_request_end_the_stream_with_invalid_argument_after_the_replies_before(
    channel: grpc.aio.Channel,
) -> None:
    """The read-ahead reader parses the requests in a task of its own: the abort for a request that
    does not parse still ends the call with INVALID_ARGUMENT naming the message type."""
    batch = _batch(pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json='{"message": {"parts": [{"text": "hi"}]}}')))
    call: Any = channel.stream_stream("/e2a.v1.ConversionService/ConvertStream")(timeout=10)
    await call.write(batch.SerializeToString())
    first = pb.ConvertStreamResponse.FromString(await call.read())
    assert [result.index for result in first.results] == [0]
    await call.write(b"\xff" * 16)  # a varint tag longer than protobuf allows
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call.read()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid e2a.v1.ConvertStreamRequest protobuf message" in str(caught.value.details())
    assert field_violations(caught.value)[0][0] == "$"
