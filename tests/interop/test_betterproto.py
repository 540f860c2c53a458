"""The schema across two independent protobuf/gRPC stacks: ours (upb + grpcio) and betterproto2 + grpclib.

Part 1 (no server): every conformance record encoded by one stack decodes, in the other, to the
same field values, and comes back to the same E2A dict. Part 2: the grpcio server called through
grpclib answers exactly what it answers the grpcio stub. Why betterproto2 is the second stack:
see ``betterproto_stack``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from types import ModuleType
from typing import Any

import grpc
import grpclib.client
import grpclib.const
import grpclib.exceptions
import pytest

from e2a.v1 import agent_service_pb2 as agent_pb
from e2a.v1 import agent_service_pb2_grpc as agent_pb_grpc
from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import (
    E2AEnvelope,
    E2AResponse,
)
from tests.conftest import VECTORS_DIR
from tests.interop import betterproto_stack
from tests.interop.betterproto_stack import same_fields, to_betterproto
from tests.support import vectors
from tests.support.vectors import RFC3339_UTC
from tests.support.wellformed import envelope_well_typed, response_well_typed

pytestmark = pytest.mark.subprocess  # the betterproto compiler runs as a process


@pytest.fixture(scope="session")
def bp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The betterproto2 ``e2a.v1`` module, generated from proto/ for this session."""
    parent = tmp_path_factory.mktemp("betterproto")
    yield betterproto_stack.generate(parent)
    sys.path.remove(str(parent))


# --- part 1: messages ----------------------------------------------------------------------------


def _is_record(output: dict[str, Any], well_typed: Callable[[Any], bool]) -> bool:
    # An `ok` output that is itself ill-typed (the README lets ill-typed inputs come back as they
    # are, e.g. protocol_version 1) is no E2A record and has no protobuf form: those are left out.
    # wellformed.py judges *inputs*, which must give protocol_version as a string; in a record it
    # may be null (proto3 `optional` keeps null apart from ""), so that one key is relaxed.
    if output.get("protocol_version") is None:
        output = {**output, "protocol_version": "1.0"}
    return well_typed(output)


def _records(name: str, well_typed: Callable[[Any], bool]) -> list[Any]:
    return [
        pytest.param(case["output"]["ok"], id=f"{name}-{case['i']}")
        for case in vectors.load(name)
        if "ok" in case["output"] and _is_record(case["output"]["ok"], well_typed)
    ]


ENVELOPES = _records("E2AEnvelope.from_dict", envelope_well_typed) + _records(
    "envelope_from_acp_jsonrpc", envelope_well_typed
)
RESPONSES = _records("E2AResponse.from_dict", response_well_typed)


def test_vectors_are_there() -> None:
    # Without this, missing vectors would only show as "empty parameter set" skips.
    assert ENVELOPES and RESPONSES, f"no conformance envelopes/responses read from {VECTORS_DIR}"


def _assert_same_dict(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    assert got == want, what
    # == says 1 == 1.0 == True and ignores key order; JSON text does not.
    assert json.dumps(got) == json.dumps(want), f"{what}: equal as dicts but not as JSON text (types or key order)"


def _crosses(model: type[E2AEnvelope] | type[E2AResponse], record: dict[str, Any]) -> None:
    ours = model.from_dict(record)
    _assert_same_dict(ours.to_dict(), record, "our own stack does not reproduce the vector (not an interop failure)")
    upb = ours.to_proto()
    parsed = betterproto_stack.message_class(upb.DESCRIPTOR)().parse(ours.to_bytes())
    # Compared field by field, not only through a round trip: betterproto2 keeps fields it cannot
    # read as unknown bytes and writes them back, which would make a bare round trip pass anyway.
    same_fields(upb, parsed)
    _assert_same_dict(model.from_bytes(bytes(parsed)).to_dict(), record, "upb -> betterproto2 -> upb")
    # The other way: a message built field by field in betterproto2 (no parse state to echo back).
    built = to_betterproto(upb)
    _assert_same_dict(model.from_bytes(bytes(built)).to_dict(), record, "built in betterproto2 -> upb")


@pytest.mark.usefixtures("bp")
@pytest.mark.parametrize("record", ENVELOPES)
def test_envelope_crosses_stacks(record: dict[str, Any]) -> None:
    _crosses(E2AEnvelope, record)


@pytest.mark.usefixtures("bp")
@pytest.mark.parametrize("record", RESPONSES)
def test_response_crosses_stacks(record: dict[str, Any]) -> None:
    _crosses(E2AResponse, record)


# Messages written out by hand in betterproto2, each with the E2A dict it stands for. They pin the
# edge cases of the schema's conventions instead of deriving the betterproto2 side from upb.
HAND_BUILT: dict[str, Callable[[ModuleType], tuple[Any, type[E2AEnvelope] | type[E2AResponse], dict[str, Any]]]] = {
    "json-text-numbers-unicode": lambda bp: (
        bp.E2AEnvelope(
            protocol_version="1.0",
            provenance=bp.E2AProvenance(
                source_protocol="acp",
                converter="custom:conv",
                converted_at="2026-01-02T03:04:05Z",
                details='{"z": 1, "a": [1, 1.0, -0.0]}',
            ),
            jsonrpc_id=bp.JsonRpcId(big_integer_value="-18446744073709551617"),
            identity_origin=bp.IdentityOrigin.SERVICE,
            channel="渠道",
            method="session/prompt",
            params='{"n": 18446744073709551616, "f": 1.0, "s": "é😀\\u0000", "o": {"b": 1, "a": 2}}',
            is_stream=True,
            expected_output_modes=["text/plain", "application/json"],
        ),
        E2AEnvelope,
        {
            "protocol_version": "1.0",
            "provenance": {
                "source_protocol": "acp",
                "converter": "custom:conv",
                "converted_at": "2026-01-02T03:04:05Z",
                "details": {"z": 1, "a": [1, 1.0, -0.0]},
            },
            "jsonrpc_id": -18446744073709551617,
            "identity_origin": "service",
            "channel": "渠道",
            "method": "session/prompt",
            "params": {"n": 18446744073709551616, "f": 1.0, "s": "é😀\x00", "o": {"b": 1, "a": 2}},
            "is_stream": True,
            "expected_output_modes": ["text/plain", "application/json"],
        },
    ),
    # Presence: an all-default auth is {} (absent is null), integer id 0 is not null, "" is not null.
    "presence-of-defaults": lambda bp: (
        bp.E2AEnvelope(
            protocol_version="1.0",
            auth=bp.E2AAuth(),
            jsonrpc_id=bp.JsonRpcId(integer_value=0),
            agent_ref="{}",
            session_id="",
            timestamp="",
        ),
        E2AEnvelope,
        {"protocol_version": "1.0", "auth": {}, "jsonrpc_id": 0, "agent_ref": {}, "session_id": "", "timestamp": ""},
    ),
    "auth-headers-order-float-id": lambda bp: (
        bp.E2AEnvelope(
            protocol_version="1.0",
            jsonrpc_id=bp.JsonRpcId(number_value=1.0),
            auth=bp.E2AAuth(
                bearer_token="t",
                extra_headers=[bp.HttpHeader(name="X-B", value="2"), bp.HttpHeader(name="X-A", value="1")],
                meta='{"k": [true, null]}',
            ),
        ),
        E2AEnvelope,
        {
            "protocol_version": "1.0",
            "jsonrpc_id": 1.0,
            "auth": {"bearer_token": "t", "extra_headers": {"X-B": "2", "X-A": "1"}, "_meta": {"k": [True, None]}},
        },
    ),
    "response-int64-limits": lambda bp: (
        bp.E2AResponse(
            protocol_version="1.0",
            response_id="r-1",
            request_id="q-1",
            sequence=2**63 - 1,
            is_final=True,
            status="failed",
            response_kind="e2a.error",
            body='{"code": -32603, "message": "boom"}',
            jsonrpc_id=bp.JsonRpcId(integer_value=-(2**63)),
            identity_origin=bp.IdentityOrigin.SYSTEM,
            projections='{"acp": {"x": 1}}',
            metadata='{"m": 0.5}',
        ),
        E2AResponse,
        {
            "protocol_version": "1.0",
            "response_id": "r-1",
            "request_id": "q-1",
            "sequence": 2**63 - 1,
            "is_final": True,
            "status": "failed",
            "response_kind": "e2a.error",
            "body": {"code": -32603, "message": "boom"},
            "jsonrpc_id": -(2**63),
            "identity_origin": "system",
            "projections": {"acp": {"x": 1}},
            "metadata": {"m": 0.5},
        },
    ),
}


@pytest.mark.parametrize("name", HAND_BUILT)
def test_built_by_hand(bp: ModuleType, name: str) -> None:
    message, model, data = HAND_BUILT[name](bp)
    want = model.from_dict(data).to_dict()
    _assert_same_dict(model.from_bytes(bytes(message)).to_dict(), want, f"{name}: betterproto2 -> upb")


# --- part 2: the grpcio server through grpclib ---------------------------------------------------
# Each call is made twice, through grpclib (request built in betterproto2) and through the grpcio
# stub (the same request in upb); the replies must hold the same field values.

# betterproto2's Python names of the ConversionService methods.
GRPCLIB_METHODS = {"ToACP": "to_acp", "FromACP": "from_acp", "ToA2AStream": "to_a_2_a_stream", "FromA2A": "from_a_2_a"}
TIMEOUT = 10.0


@contextlib.asynccontextmanager
async def _channels(address: str) -> AsyncIterator[tuple[grpclib.client.Channel, grpc.aio.Channel]]:
    host, port = address.rsplit(":", 1)
    grpclib_channel = grpclib.client.Channel(host, int(port))
    try:
        async with grpc.aio.insecure_channel(address) as grpcio_channel:
            yield grpclib_channel, grpcio_channel
    finally:
        grpclib_channel.close()


async def _call_both(address: str, bp: ModuleType, method: str, requests: list[Any]) -> list[tuple[Any, Any]]:
    """(grpcio reply, grpclib reply) for each upb request."""
    async with _channels(address) as (grpclib_channel, grpcio_channel):
        grpclib_call = getattr(bp.ConversionServiceStub(grpclib_channel), GRPCLIB_METHODS[method])
        grpcio_call = getattr(pb_grpc.ConversionServiceStub(grpcio_channel), method)
        return [
            (await grpcio_call(request, timeout=TIMEOUT), await grpclib_call(to_betterproto(request), timeout=TIMEOUT))
            for request in requests
        ]


UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
# Values the server makes up at call time, so that two calls differ there, with the shape they must have.
CONVERTED = (("provenance.converted_at", RFC3339_UTC),)
FRAME = (("response_id", UUID4), ("timestamp", RFC3339_UTC))  # each Chat frame, and each response FromACP makes


def _call_time_by_shape(grpcio_record: Any, grpclib_record: Any, where: str, made_up: Iterable[Any]) -> None:
    """Check the shape of the call-time values on both sides, then blank them so that everything
    else can be compared exactly."""
    assert grpclib_record is not None, f"{where}: missing in the grpclib reply"
    for dotted, shape in made_up:
        *parents, name = dotted.split(".")
        for side, record in (("grpcio", grpcio_record), ("grpclib", grpclib_record)):
            holder = functools.reduce(getattr, parents, record)
            value = getattr(holder, name)
            assert isinstance(value, str) and shape.match(value), f"{where}.{dotted}: {side} has {value!r}"
            setattr(holder, name, "<call time>")


TO_ACP_ENVELOPES = [
    E2AEnvelope.from_dict(case["input"]["envelope_dict"])
    for case in vectors.load("envelope_to_acp_jsonrpc_call")
    if "ok" in case["output"] and envelope_well_typed(case["input"]["envelope_dict"])
]


def test_to_acp(server_address: str, bp: ModuleType) -> None:
    chat = E2AEnvelope(method="chat.send", request_id="r1", session_id="s1", params={"text": "hi", "n": 2**70})
    requests = [pb.ToACPRequest(envelope=envelope.to_proto()) for envelope in TO_ACP_ENVELOPES] + [
        pb.ToACPRequest(envelope=chat.to_proto(), session_prompt_methods=["chat.send"], dialect=pb.ACP_DIALECT_WIRE),
        pb.ToACPRequest(envelope_json=chat.to_json()),
        pb.ToACPRequest(response=E2AResponse(response_kind="e2a.chunk", body={"delta": "x"}).to_proto()),
    ]
    replies = asyncio.run(_call_both(server_address, bp, "ToACP", requests))
    for index, (grpcio_reply, grpclib_reply) in enumerate(replies):
        same_fields(grpcio_reply, grpclib_reply, f"ToACP[{index}]")
    # Guard against comparing two empty answers: both branches of the result oneof came back.
    assert {reply.WhichOneof("result") for reply, _ in replies} == {"jsonrpc", "not_applicable"}


def test_from_acp(server_address: str, bp: ModuleType) -> None:
    prompt = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hé 😀"}]},
    }
    batch = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "he"}}}},
        {"jsonrpc": "2.0", "id": "1.0", "result": {"stopReason": "end_turn"}},
        {"jsonrpc": "2.0", "id": 1.0, "error": {"code": -32603, "message": "boom", "data": {"n": 2**70}}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}},
    ]  # fmt: skip
    requests = [
        pb.FromACPRequest(json=json.dumps(prompt)),
        pb.FromACPRequest(json=json.dumps(prompt), channel="", identity_origin=e2a_pb2.IDENTITY_ORIGIN_AGENT),
        pb.FromACPRequest(json=json.dumps(batch), channel="ide"),
    ]
    replies = asyncio.run(_call_both(server_address, bp, "FromACP", requests))
    assert [len(reply.records) for reply, _ in replies] == [1, 1, len(batch)]
    for index, (grpcio_reply, grpclib_reply) in enumerate(replies):
        where = f"FromACP[{index}]"
        assert len(grpclib_reply.records) == len(grpcio_reply.records), f"{where}: record counts differ"
        for number, (grpcio_record, grpclib_record) in enumerate(
            zip(grpcio_reply.records, grpclib_reply.records, strict=True)
        ):
            kind = grpcio_record.WhichOneof("record")
            made_up = CONVERTED + FRAME if kind == "response" else CONVERTED
            _call_time_by_shape(
                getattr(grpcio_record, kind), getattr(grpclib_record, kind), f"{where}.records[{number}]", made_up
            )
        same_fields(grpcio_reply, grpclib_reply, where)


TO_A2A_RESPONSES = [
    E2AResponse.from_dict(case["input"]["response_dict"])
    for case in vectors.load("e2a_response_to_a2a_stream_payload")
    if response_well_typed(case["input"]["response_dict"])
]


def test_to_a2a_stream(server_address: str, bp: ModuleType) -> None:
    chunk = E2AResponse(
        response_kind="e2a.chunk", request_id="q", sequence=1, body={"delta_kind": "text", "delta": "é"}
    )
    requests = [pb.ToA2AStreamRequest(response=response.to_proto()) for response in TO_A2A_RESPONSES] + [
        pb.ToA2AStreamRequest(response=chunk.to_proto(), project_native_kinds=True),
        pb.ToA2AStreamRequest(response_json=chunk.to_json(), project_native_kinds=True),
    ]
    replies = asyncio.run(_call_both(server_address, bp, "ToA2AStream", requests))
    for index, (grpcio_reply, grpclib_reply) in enumerate(replies):
        same_fields(grpcio_reply, grpclib_reply, f"ToA2AStream[{index}]")
    assert {reply.WhichOneof("result") for reply, _ in replies} == {"stream_response", "not_applicable"}


def test_from_a2a(server_address: str, bp: ModuleType) -> None:
    params = {
        "message": {
            "messageId": "m1",
            "taskId": "t1",
            "contextId": "c1",
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}],
        },
        "configuration": {"acceptedOutputModes": ["text/plain"]},
        "metadata": {"k": 2**70, "f": 1.0},
    }
    requests = [
        pb.FromA2ARequest(json=json.dumps(params)),
        pb.FromA2ARequest(
            json=json.dumps({"jsonrpc": "2.0", "id": 5, "method": "message/send", "params": params}),
            channel="web",
            identity_origin=e2a_pb2.IDENTITY_ORIGIN_SERVICE,
        ),
    ]
    replies = asyncio.run(_call_both(server_address, bp, "FromA2A", requests))
    for index, (grpcio_reply, grpclib_reply) in enumerate(replies):
        _call_time_by_shape(grpcio_reply.envelope, grpclib_reply.envelope, f"FromA2A[{index}].envelope", CONVERTED)
        same_fields(grpcio_reply, grpclib_reply, f"FromA2A[{index}]")


async def _bad_json_both(address: str, bp: ModuleType) -> tuple[grpc.aio.AioRpcError, grpclib.exceptions.GRPCError]:
    async with _channels(address) as (grpclib_channel, grpcio_channel):
        with pytest.raises(grpc.aio.AioRpcError) as grpcio_error:
            await pb_grpc.ConversionServiceStub(grpcio_channel).FromACP(pb.FromACPRequest(json="{"), timeout=TIMEOUT)
        with pytest.raises(grpclib.exceptions.GRPCError) as grpclib_error:
            await bp.ConversionServiceStub(grpclib_channel).from_acp(bp.FromAcpRequest(json="{"), timeout=TIMEOUT)
    return grpcio_error.value, grpclib_error.value


def test_bad_input_is_invalid_argument_through_grpclib(server_address: str, bp: ModuleType) -> None:
    grpcio_error, grpclib_error = asyncio.run(_bad_json_both(server_address, bp))
    assert grpclib_error.status is grpclib.const.Status.INVALID_ARGUMENT, grpclib_error
    assert grpcio_error.code() is grpc.StatusCode.INVALID_ARGUMENT, grpcio_error
    assert grpclib_error.message == grpcio_error.details(), "the two clients read different status messages"


async def _chat_both(address: str, bp: ModuleType, request: Any) -> tuple[list[Any], list[Any]]:
    async with _channels(address) as (grpclib_channel, grpcio_channel):
        grpcio_call = agent_pb_grpc.AgentServiceStub(grpcio_channel).Chat(request, timeout=TIMEOUT)
        grpcio_frames = [reply async for reply in grpcio_call]
        grpclib_call = bp.AgentServiceStub(grpclib_channel).chat(to_betterproto(request), timeout=TIMEOUT)
        grpclib_frames = [reply async for reply in grpclib_call]
    return grpcio_frames, grpclib_frames


def test_chat_stream(server_address: str, bp: ModuleType) -> None:
    text = "héllo  interop 😀 world"
    envelope = E2AEnvelope(
        method="chat.send", request_id="req-1", session_id="s1", jsonrpc_id=2**70, params={"text": text}
    )
    grpcio_frames, grpclib_frames = asyncio.run(
        _chat_both(server_address, bp, agent_pb.ChatRequest(envelope=envelope.to_proto()))
    )
    frames = [frame.response for frame in grpclib_frames]
    # The echo backend's stream as grpclib saw it: word chunks that add up to the text, then one
    # final e2a.complete, numbered 0, 1, 2, ... (protocol section 12).
    kinds = [frame.response_kind for frame in frames]
    assert len(kinds) >= 3 and kinds == ["e2a.chunk"] * (len(kinds) - 1) + ["e2a.complete"], kinds
    assert [frame.sequence for frame in frames] == list(range(len(frames)))
    assert [frame.is_final for frame in frames] == [False] * (len(frames) - 1) + [True]
    assert "".join(json.loads(frame.body)["delta"] for frame in frames[:-1]) == text
    assert {frame.request_id for frame in frames} == {"req-1"}
    # And frame by frame the same as through grpcio.
    assert len(grpclib_frames) == len(grpcio_frames), "the two clients received different numbers of frames"
    for index, (grpcio_frame, grpclib_frame) in enumerate(zip(grpcio_frames, grpclib_frames, strict=True)):
        where = f"Chat[{index}]"
        _call_time_by_shape(grpcio_frame.response, grpclib_frame.response, f"{where}.response", FRAME)
        same_fields(grpcio_frame, grpclib_frame, where)
