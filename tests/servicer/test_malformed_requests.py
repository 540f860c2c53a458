"""Request bytes that are not the RPC's request message, on every RPC of the E2A services, in process.

Each gets INVALID_ARGUMENT naming the message type, with one BadRequest violation for the whole
request (``$``): never UNKNOWN. With a bearer token configured, a caller without it gets
UNAUTHENTICATED before its bytes are looked at, for every method, existing or not.

The bytes go through ``channel.unary_unary(method)`` and friends without serializers, so the server
sees exactly what the test wrote.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from e2a.v1 import codec_service_pb2 as codec_pb
from e2a_grpc import E2AEnvelope
from e2a_grpc.grpc.server import SERVICE_NAMES
from tests.conftest import in_process_server
from tests.support.status import field_violations

in_module_loop = pytest.mark.asyncio(loop_scope="module")

TOKEN = "malformed-requests-token"
AUTHORIZED = (("authorization", f"Bearer {TOKEN}"),)

METHODS: list[MethodDescriptor] = [
    method for service in SERVICE_NAMES for method in descriptor_pool.Default().FindServiceByName(service).methods
]


def _path(method: MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


def _string_field_path(message: Descriptor) -> list[FieldDescriptor]:
    """The shortest path of fields from ``message`` to a singular ``string`` field, through singular
    or repeated message fields (not maps)."""
    paths: list[list[FieldDescriptor]] = [[field] for field in message.fields]
    while paths:
        path = paths.pop(0)
        field = path[-1]
        if field.is_repeated and (field.message_type is None or field.message_type.GetOptions().map_entry):
            continue
        if field.type == FieldDescriptor.TYPE_STRING:
            return path
        if field.message_type is not None:
            paths.extend([*path, inner] for inner in field.message_type.fields)
    raise AssertionError(f"{message.full_name} has no string field")


def _with_string(message_type: Descriptor, text: str) -> bytes:
    """A valid ``message_type`` message, serialized, with ``text`` in its nearest string field."""
    message: Message = GetMessageClass(message_type)()
    *outer, string_field = _string_field_path(message_type)
    target = message
    for field in outer:
        target = getattr(target, field.name).add() if field.is_repeated else getattr(target, field.name)
    setattr(target, string_field.name, text)
    return message.SerializeToString()


def _invalid_utf8(message_type: Descriptor) -> bytes:
    # "é" is C3 A9; C3 28 has the same length (so every length prefix still holds) but is not UTF-8.
    return _with_string(message_type, "é").replace(b"\xc3\xa9", b"\xc3\x28")


def _truncated(message_type: Descriptor) -> bytes:
    return _with_string(message_type, "cut short in the middle")[:-5]


MALFORMED = {
    "random-bytes": lambda _: b"\xff" * 16,  # a varint tag longer than protobuf allows
    "truncated": _truncated,
    "invalid-utf8": _invalid_utf8,
}
TRANSCODE = descriptor_pool.Default().FindMethodByName("e2a.v1.CodecService.Transcode")
CASES = [(method, kind) for method in METHODS for kind in MALFORMED]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def token_channel() -> AsyncIterator[grpc.aio.Channel]:
    async with in_process_server(token=TOKEN) as running, grpc.aio.insecure_channel(running.address) as opened:
        yield opened


async def _call_raw(
    channel: grpc.aio.Channel,
    method: MethodDescriptor,
    data: bytes,
    metadata: tuple[tuple[str, str], ...] = (),
) -> list[bytes]:
    """Call ``method`` with ``data`` as its (only) request message; the raw replies."""
    path = _path(method)
    if method.client_streaming:
        bidi: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(path)
        return [reply async for reply in bidi(iter([data]), metadata=metadata, timeout=10)]
    if method.server_streaming:
        streaming: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(path)
        return [reply async for reply in streaming(data, metadata=metadata, timeout=10)]
    unary: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(path)
    return [await unary(data, metadata=metadata, timeout=10)]


def _assert_names_the_bad_request(error: grpc.aio.AioRpcError, message_type: str) -> None:
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (error.code(), error.details())
    assert f"not a valid {message_type} protobuf message" in str(error.details())
    [(field, description)] = field_violations(error)
    assert field == "$" and message_type in description


@pytest.mark.parametrize("kind", MALFORMED)
def test_the_malformed_bytes_do_not_parse(kind: str) -> None:
    for method in METHODS:
        with pytest.raises(DecodeError):
            GetMessageClass(method.input_type).FromString(MALFORMED[kind](method.input_type))


@in_module_loop
@pytest.mark.parametrize(("method", "kind"), CASES, ids=[f"{m.name}-{kind}" for m, kind in CASES])
async def test_malformed_request_is_invalid_argument_naming_the_message_type(
    channel: grpc.aio.Channel, method: MethodDescriptor, kind: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _call_raw(channel, method, MALFORMED[kind](method.input_type))
    _assert_names_the_bad_request(caught.value, method.input_type.full_name)


@in_module_loop
@pytest.mark.parametrize("kind", MALFORMED)
async def test_a_malformed_message_mid_stream_ends_the_transcode_stream(channel: grpc.aio.Channel, kind: str) -> None:
    envelope_json = E2AEnvelope(method="chat.send", params={"text": "hi"}).to_json()
    good = codec_pb.TranscodeRequest(envelope_json=envelope_json).SerializeToString()
    bad = MALFORMED[kind](TRANSCODE.input_type)
    call: Any = channel.stream_stream(_path(TRANSCODE))(timeout=10)
    await call.write(good)
    first = codec_pb.TranscodeResponse.FromString(await call.read())
    assert (first.index, first.WhichOneof("result")) == (0, "envelope")
    await call.write(bad)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call.read()
    _assert_names_the_bad_request(caught.value, "e2a.v1.TranscodeRequest")


@in_module_loop
@pytest.mark.parametrize("method", METHODS, ids=[m.name for m in METHODS])
async def test_without_the_token_malformed_bytes_are_unauthenticated(
    token_channel: grpc.aio.Channel, method: MethodDescriptor
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _call_raw(token_channel, method, MALFORMED["random-bytes"](method.input_type))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # With the token, the same bytes get as far as parsing.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _call_raw(token_channel, method, MALFORMED["random-bytes"](method.input_type), AUTHORIZED)
    _assert_names_the_bad_request(caught.value, method.input_type.full_name)


UNKNOWN_METHODS = ["/e2a.v1.ConversionService/NoSuchMethod", "/e2a.v1.NoSuchService/Call", "/x"]


@in_module_loop
@pytest.mark.parametrize("path", UNKNOWN_METHODS)
async def test_unknown_methods_are_unauthenticated_without_the_token(
    token_channel: grpc.aio.Channel, path: str
) -> None:
    unary: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = token_channel.unary_unary(path)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await unary(b"", timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await unary(b"", metadata=AUTHORIZED, timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    bidi: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = token_channel.stream_stream(path)
    streaming = bidi(metadata=(("authorization", "Bearer wrong"),), timeout=10)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await streaming.read()
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
