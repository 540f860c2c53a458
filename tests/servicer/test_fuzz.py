"""Structure-aware fuzzing of every RPC (issue 10): valid requests, mutated at the JSON level and at the
byte level, plus the classes of bad input found by hand, against the real servicers in process.

For every case: the status is never UNKNOWN or INTERNAL (bad input is INVALID_ARGUMENT, or another
status a client can act on), the health service still answers SERVING, and every Chat stream that
ends OK has exactly one final frame, the last. A failing input is saved under
``tests/servicer/fuzz_regressions/`` and replayed by every later run (commit it with the fix).

``E2A_FUZZ_CASES`` sets the number of generated cases (``make fuzz`` runs 20,000; the default keeps
``make test`` quick) and ``E2A_FUZZ_SEED`` the seed, fixed by default so a run can be repeated.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from e2a.v1 import agent_service_pb2, codec_service_pb2, conversion_service_pb2, e2a_pb2
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.protocols import cloudevent_formats, cloudevents
from tests.conftest import InProcessServer
from tests.support import vectors

CASES = int(os.environ.get("E2A_FUZZ_CASES", "2000"))
SEED = int(os.environ.get("E2A_FUZZ_SEED", "20261130"))
REGRESSIONS = Path(__file__).parent / "fuzz_regressions"
CALL_TIMEOUT = 20.0
#: Statuses that mean the server failed rather than the input: never acceptable.
SERVER_FAILURES = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}

in_module_loop = pytest.mark.asyncio(loop_scope="module")


@dataclass(frozen=True)
class Rpc:
    """One method: its path, request type, whether it streams replies, and how to build valid requests."""

    path: str
    request_type: type[Message]
    streams_replies: bool
    valid: Callable[[random.Random], bytes]
    #: A bidirectional stream: the case is its one request message.
    streams_requests: bool = False


def _envelopes() -> list[dict[str, Any]]:
    return [case["output"]["ok"] for case in vectors.load("E2AEnvelope.from_dict") if "ok" in case["output"]]


def _responses() -> list[dict[str, Any]]:
    return [case["output"]["ok"] for case in vectors.load("E2AResponse.from_dict") if "ok" in case["output"]]


def _readable(model: type[E2AEnvelope] | type[E2AResponse], documents: list[dict[str, Any]]) -> list[Any]:
    """The vector documents the model reads and can encode (the seeds must be valid requests)."""
    records = []
    for document in documents:
        try:
            record = model.from_dict(document)
            record.to_bytes()
        except (TypeError, ValueError):
            continue  # an ill-typed vector output is no seed; mutations produce bad input anyway
        records.append(record)
    return records


ENVELOPE_SEEDS: list[E2AEnvelope] = _readable(E2AEnvelope, _envelopes())
RESPONSE_SEEDS: list[E2AResponse] = _readable(E2AResponse, _responses())
ACP_SEEDS = [
    '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}',
    '[{"jsonrpc":"2.0","id":"a","result":{"stopReason":"end_turn"}},{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}]',
    '{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"no"}}',
]
A2A_SEEDS = [
    '{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"contextId":"c1"},"configuration":{"acceptedOutputModes":["text/plain"]}}',
    '{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"messageId":"m","parts":[{"text":"x"}]}}}',
]


def _envelope_seed(rng: random.Random) -> E2AEnvelope:
    return rng.choice(ENVELOPE_SEEDS)


def _chat_request(rng: random.Random) -> bytes:
    envelope = E2AEnvelope.from_dict({**_envelope_seed(rng).to_dict(), "method": "chat.send"})
    envelope.params = {
        "text": " ".join(rng.choice(("hello", "agent", "ü", "🚀", "42")) for _ in range(rng.randint(1, 8)))
    }
    return agent_service_pb2.ChatRequest(envelope=envelope.to_proto()).SerializeToString()


def _to_acp(rng: random.Random) -> bytes:
    request = conversion_service_pb2.ToACPRequest(session_prompt_methods=rng.choice([[], ["chat.send"]]))
    choice = rng.randrange(3)
    if choice == 0:
        request.envelope.CopyFrom(_envelope_seed(rng).to_proto())
    elif choice == 1:
        request.envelope_json = _envelope_seed(rng).to_json()
    else:
        request.response.CopyFrom(rng.choice(RESPONSE_SEEDS).to_proto())
    if rng.random() < 0.3:
        request.dialect = conversion_service_pb2.ACP_DIALECT_WIRE
    return request.SerializeToString()


def _to_cloudevents(rng: random.Random) -> bytes:
    formats = [
        conversion_service_pb2.CLOUD_EVENTS_FORMAT_UNSPECIFIED,
        conversion_service_pb2.CLOUD_EVENTS_FORMAT_JSON_BATCH,
    ]
    request = conversion_service_pb2.ToCloudEventsRequest(format=rng.choice(formats))
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            request.records.add(envelope_json=_envelope_seed(rng).to_json())
        else:
            request.records.add(response=rng.choice(RESPONSE_SEEDS).to_proto())
    if rng.random() < 0.3:
        request.type_prefix = "org.apache.eventmesh.a2a"
    return request.SerializeToString()


def _from_cloudevents(rng: random.Random) -> bytes:
    seeds: list[E2AEnvelope | E2AResponse] = [*ENVELOPE_SEEDS, *RESPONSE_SEEDS]
    records = [rng.choice(seeds) for _ in range(rng.randint(1, 3))]
    events = cloudevents.records_to_events(records, type_prefix="io.e2a")
    if rng.random() < 0.5:
        return conversion_service_pb2.FromCloudEventsRequest(
            json=cloudevent_formats.to_batch_json(events)
        ).SerializeToString()
    batch = conversion_service_pb2.CloudEventBatch(events=map(cloudevent_formats.to_protobuf, events))
    return conversion_service_pb2.FromCloudEventsRequest(batch=batch).SerializeToString()


RPCS = [
    Rpc("/e2a.v1.ConversionService/ToACP", conversion_service_pb2.ToACPRequest, False, _to_acp),
    Rpc("/e2a.v1.ConversionService/ToCloudEvents", conversion_service_pb2.ToCloudEventsRequest, False, _to_cloudevents),
    Rpc(
        "/e2a.v1.ConversionService/FromCloudEvents",
        conversion_service_pb2.FromCloudEventsRequest,
        False,
        _from_cloudevents,
    ),
    Rpc(
        "/e2a.v1.ConversionService/FromACP",
        conversion_service_pb2.FromACPRequest,
        False,
        lambda rng: conversion_service_pb2.FromACPRequest(json=rng.choice(ACP_SEEDS)).SerializeToString(),
    ),
    Rpc(
        "/e2a.v1.ConversionService/ToA2AStream",
        conversion_service_pb2.ToA2AStreamRequest,
        False,
        lambda rng: conversion_service_pb2.ToA2AStreamRequest(
            response_json=rng.choice(RESPONSE_SEEDS).to_json(), project_native_kinds=rng.random() < 0.5
        ).SerializeToString(),
    ),
    Rpc(
        "/e2a.v1.ConversionService/FromA2A",
        conversion_service_pb2.FromA2ARequest,
        False,
        lambda rng: conversion_service_pb2.FromA2ARequest(json=rng.choice(A2A_SEEDS)).SerializeToString(),
    ),
    Rpc(
        "/e2a.v1.CodecService/EnvelopeFromJson",
        codec_service_pb2.EnvelopeFromJsonRequest,
        False,
        lambda rng: codec_service_pb2.EnvelopeFromJsonRequest(json=_envelope_seed(rng).to_json()).SerializeToString(),
    ),
    Rpc(
        "/e2a.v1.CodecService/EnvelopeToJson",
        codec_service_pb2.EnvelopeToJsonRequest,
        False,
        lambda rng: codec_service_pb2.EnvelopeToJsonRequest(
            envelope=_envelope_seed(rng).to_proto()
        ).SerializeToString(),
    ),
    Rpc(
        "/e2a.v1.CodecService/ResponseFromJson",
        codec_service_pb2.ResponseFromJsonRequest,
        False,
        lambda rng: codec_service_pb2.ResponseFromJsonRequest(
            json=rng.choice(RESPONSE_SEEDS).to_json()
        ).SerializeToString(),
    ),
    Rpc(
        "/e2a.v1.CodecService/ResponseToJson",
        codec_service_pb2.ResponseToJsonRequest,
        False,
        lambda rng: codec_service_pb2.ResponseToJsonRequest(
            response=rng.choice(RESPONSE_SEEDS).to_proto()
        ).SerializeToString(),
    ),
    Rpc("/e2a.v1.AgentService/Chat", agent_service_pb2.ChatRequest, True, _chat_request),
    Rpc(
        "/e2a.v1.AgentService/CancelTask",
        agent_service_pb2.CancelTaskRequest,
        False,
        lambda rng: agent_service_pb2.CancelTaskRequest(
            agent_id=rng.choice(("", "writer", "ü")), task_id=rng.choice(("task-1", "🚀", "t" * 300))
        ).SerializeToString(),
    ),
]
#: ConvertRequest case -> the unary RPC whose valid requests it takes.
_CONVERSION_RPCS = {
    case: next(rpc for rpc in RPCS if rpc.path == f"/e2a.v1.ConversionService/{method}")
    for case, method in (
        ("to_acp", "ToACP"),
        ("from_acp", "FromACP"),
        ("to_a2a_stream", "ToA2AStream"),
        ("from_a2a", "FromA2A"),
    )
}


def _convert_stream(rng: random.Random) -> bytes:
    """A batch of 1-4 conversions of any kind, each a valid request of its unary RPC."""
    batch = conversion_service_pb2.ConvertStreamRequest()
    for _ in range(rng.randint(1, 4)):
        case, rpc = rng.choice(list(_CONVERSION_RPCS.items()))
        getattr(batch.conversions.add(), case).CopyFrom(rpc.request_type.FromString(rpc.valid(rng)))
    return batch.SerializeToString()


RPCS.append(
    Rpc(
        "/e2a.v1.ConversionService/ConvertStream",
        conversion_service_pb2.ConvertStreamRequest,
        True,
        _convert_stream,
        streams_requests=True,
    )
)


# --- mutations -----------------------------------------------------------------------------------

NASTY_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    1.0,
    -0.0,
    1e308,
    2**64 + 1,
    "",
    "\ud800",
    "x" * 100_000,
    [],
    {},
    "NaN",
    {"deep": "[" * 600},
]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


def _mutate_json_value(rng: random.Random, value: Any, budget: int = 3) -> Any:
    """``value`` with one random part replaced, deleted or given a nasty value."""
    if isinstance(value, dict) and value and budget:
        key = rng.choice(list(value))
        mutated = dict(value)
        roll = rng.random()
        if roll < 0.2:
            del mutated[key]
        elif roll < 0.5:
            mutated[key] = rng.choice(NASTY_VALUES)
        elif roll < 0.6:
            mutated[key] = _nested(rng.choice((200, 511, 513, 900)))
        elif roll < 0.7:
            mutated["x" * rng.choice((1, 300))] = rng.choice(NASTY_VALUES)
        else:
            mutated[key] = _mutate_json_value(rng, value[key], budget - 1)
        return mutated
    if isinstance(value, list) and value and budget:
        index = rng.randrange(len(value))
        return [*value[:index], _mutate_json_value(rng, value[index], budget - 1), *value[index + 1 :]]
    return rng.choice(NASTY_VALUES)


def _json_text(rng: random.Random, value: Any) -> str:
    """JSON text of ``value`` a protobuf string can hold (a lone surrogate only as an escape)."""
    try:
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(value)
    except RecursionError:
        return "[" * 2000
    return text


def _mutate_json_fields(rng: random.Random, message: Any) -> None:
    """Mutate every string field of ``message`` (and its submessages) that holds JSON text."""
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and not descriptor.is_repeated:
            if rng.random() < 0.5:
                _mutate_json_fields(rng, value)
        elif descriptor.message_type is not None and not descriptor.message_type.GetOptions().map_entry:
            for element in value:  # a repeated message field, e.g. a ConvertStream batch
                if rng.random() < 0.5:
                    _mutate_json_fields(rng, element)
        elif descriptor.type == descriptor.TYPE_STRING and not descriptor.is_repeated and value[:1] in "{[":
            try:
                document = json.loads(value)
            except ValueError:
                continue
            setattr(message, descriptor.name, _json_text(rng, _mutate_json_value(rng, document)))
        elif descriptor.type == descriptor.TYPE_STRING and not descriptor.is_repeated and rng.random() < 0.2:
            setattr(message, descriptor.name, rng.choice(["", "x" * 100_000, "chat.send", "ext", "session/prompt"]))


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    raw = bytearray(data)
    roll = rng.random()
    if roll < 0.3 and raw:
        for _ in range(rng.randint(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
    elif roll < 0.5 and raw:
        del raw[rng.randrange(len(raw)) :]  # truncated
    elif roll < 0.7:
        at = rng.randrange(len(raw) + 1)
        raw[at:at] = rng.randbytes(rng.randint(1, 16))
    elif roll < 0.85:
        # A string field (field 1, length-delimited) holding invalid UTF-8, then the rest.
        raw[0:0] = b"\x0a\x03\xff\xfe\xfd"
    else:
        raw = bytearray(rng.randbytes(rng.randint(0, 64)))
    return bytes(raw)


def generate(rng: random.Random) -> tuple[Rpc, bytes]:
    """One fuzz case: a method and its request bytes."""
    rpc = rng.choice(RPCS)
    data = rpc.valid(rng)
    roll = rng.random()
    if roll < 0.45:
        message = rpc.request_type.FromString(data)
        _mutate_json_fields(rng, message)
        with_envelope = (conversion_service_pb2.ToACPRequest, codec_service_pb2.EnvelopeToJsonRequest)
        if rng.random() < 0.2 and isinstance(message, (*with_envelope, agent_service_pb2.ChatRequest)):
            message.envelope.jsonrpc_id.CopyFrom(
                rng.choice(
                    [
                        e2a_pb2.JsonRpcId(big_integer_value="9" * 5000),
                        e2a_pb2.JsonRpcId(big_integer_value="12x"),
                        e2a_pb2.JsonRpcId(number_value=float("nan")),
                        e2a_pb2.JsonRpcId(string_value=""),
                    ]
                )
            )
        data = message.SerializeToString()
    elif roll < 0.85:
        data = _mutate_bytes(rng, data)
    return rpc, data


# --- running ---------------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def channel(server: InProcessServer) -> AsyncIterator[grpc.aio.Channel]:
    options = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
    async with grpc.aio.insecure_channel(server.address, options=options) as opened:
        yield opened


async def _answer(channel: grpc.aio.Channel, rpc: Rpc, data: bytes) -> tuple[grpc.StatusCode, str | None]:
    """The status the server answered this case with, and what is wrong with the answer (or None)."""
    try:
        if rpc.streams_requests:
            bidi: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(rpc.path)
            replies = [raw async for raw in bidi(iter([data]), timeout=CALL_TIMEOUT)]
            # OK: the server read the batch, so it parses here too; one result per conversion, in order.
            conversions = len(conversion_service_pb2.ConvertStreamRequest.FromString(data).conversions)
            indexes = [
                result.index
                for raw in replies
                for result in conversion_service_pb2.ConvertStreamResponse.FromString(raw).results
            ]
            if len(replies) != 1 or indexes != list(range(conversions)):
                return (
                    grpc.StatusCode.OK,
                    f"{len(replies)} replies with indexes {indexes} for {conversions} conversions",
                )
        elif rpc.streams_replies:
            call: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(rpc.path)
            stream = call(data, timeout=CALL_TIMEOUT)
            frames = [agent_service_pb2.ChatResponse.FromString(raw).response async for raw in stream]
            finals = [index for index, frame in enumerate(frames) if frame.is_final]
            if finals != [len(frames) - 1]:
                return grpc.StatusCode.OK, f"an OK Chat stream of {len(frames)} frames has final frames at {finals}"
        else:
            unary: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(rpc.path)
            await unary(data, timeout=CALL_TIMEOUT)
    except grpc.aio.AioRpcError as error:
        if error.code() in SERVER_FAILURES:
            return error.code(), f"{error.code().name}: {error.details()}"
        return error.code(), None
    return grpc.StatusCode.OK, None


async def _healthy(channel: grpc.aio.Channel) -> bool:
    stub = health_pb2_grpc.HealthStub(channel)
    reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=CALL_TIMEOUT)  # type: ignore[attr-defined]  # the stubs list no methods
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _save(rpc: Rpc, data: bytes) -> Path:
    REGRESSIONS.mkdir(exist_ok=True)
    name = rpc.path.strip("/").replace("/", ".")
    path = REGRESSIONS / f"{name}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
    path.write_bytes(data)
    return path


def _saved_cases() -> list[tuple[Rpc, bytes, str]]:
    by_name = {rpc.path.strip("/").replace("/", "."): rpc for rpc in RPCS}
    return [
        (by_name[path.name.rsplit("-", 1)[0]], path.read_bytes(), path.name)
        for path in sorted(REGRESSIONS.glob("*.bin"))
    ]


def test_the_seeds_are_valid_requests() -> None:
    assert len(ENVELOPE_SEEDS) > 50 and len(RESPONSE_SEEDS) > 50


@pytest.mark.slow  # 2,000 cases through every RPC (make fuzz runs 20,000)
@in_module_loop
async def test_saved_regressions_and_generated_cases(channel: grpc.aio.Channel) -> None:
    failures: list[str] = []
    for rpc, data, name in _saved_cases():
        _, problem = await _answer(channel, rpc, data)
        if problem is not None:
            failures.append(f"saved case {name}: {problem}")
    rng = random.Random(SEED)
    outcomes: Counter[grpc.StatusCode] = Counter()
    for index in range(CASES):
        rpc, data = generate(rng)
        status, problem = await _answer(channel, rpc, data)
        outcomes[status] += 1
        if problem is not None:
            failures.append(f"case {index} {rpc.path}: {problem} (saved as {_save(rpc, data).name})")
        if index % 500 == 499:
            assert await _healthy(channel), f"health is not SERVING after case {index}"
    assert await _healthy(channel)
    assert failures == [], f"{len(failures)} of {CASES} cases failed (seed {SEED}):\n" + "\n".join(failures[:20])
    # The mix is a fuzz of both sides: valid requests answered OK, and bad ones refused.
    assert outcomes[grpc.StatusCode.OK] > CASES // 10 and outcomes[grpc.StatusCode.INVALID_ARGUMENT] > CASES // 10, (
        outcomes
    )
