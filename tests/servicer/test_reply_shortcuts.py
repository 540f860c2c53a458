"""Reply shortcuts over gRPC: ToACP's common call answered from its bytes, everything else by the servicer.

The replies are compared with ``conversion_servicer.to_acp`` in process; whether the shortcut or the
servicer answered shows in the calls the shortcut saw and what it returned. A shortcut that fails
leaves the call to the servicer (and logs it); test_metrics.py counts shortcut replies.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
import pytest

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope
from e2a_grpc.conversion.acp_fast_path import to_acp_reply
from e2a_grpc.grpc import calls, server
from e2a_grpc.grpc.conversion_servicer import REPLY_SHORTCUTS, to_acp
from tests.conftest import in_process_server

TO_ACP = "/e2a.v1.ConversionService/ToACP"
COMMON = pb.ToACPRequest(envelope=E2AEnvelope(method="chat.send", jsonrpc_id=7, params={"text": "hi"}).to_proto())
MERGED = pb.ToACPRequest(envelope=E2AEnvelope(method="session/prompt", params={"text": "hi"}).to_proto())


class Recorded:
    """A shortcut that records what it answered: True (a reply), False (None), or the error it raised."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.answers: list[bool | str] = []

    def __call__(self, data: bytes) -> bytes | None:
        if self.fails:
            self.answers.append("raised")
            raise RuntimeError("shortcut bug")
        reply = to_acp_reply(data)
        self.answers.append(reply is not None)
        return reply


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    shortcut = Recorded()
    monkeypatch.setattr(server, "REPLY_SHORTCUTS", {TO_ACP: shortcut})
    return shortcut


def test_toacp_has_the_shortcut() -> None:
    assert {TO_ACP: to_acp_reply} == REPLY_SHORTCUTS


@pytest.mark.asyncio
async def test_the_shortcut_and_the_servicer_answer_alike(recorded: Recorded) -> None:
    async with in_process_server() as running, grpc.aio.insecure_channel(running.address) as channel:
        stub = pb_grpc.ConversionServiceStub(channel)
        common = await stub.ToACP(COMMON, timeout=10)
        merged = await stub.ToACP(MERGED, timeout=10)
    assert recorded.answers == [True, False]
    assert common == to_acp(COMMON)
    assert merged == to_acp(MERGED)


@pytest.mark.asyncio
async def test_a_failing_shortcut_leaves_the_call_to_the_servicer(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    failing = Recorded(fails=True)
    monkeypatch.setattr(server, "REPLY_SHORTCUTS", {TO_ACP: failing})
    with caplog.at_level(logging.ERROR, logger=calls.__name__):
        async with in_process_server() as running, grpc.aio.insecure_channel(running.address) as channel:
            reply = await pb_grpc.ConversionServiceStub(channel).ToACP(COMMON, timeout=10)
    assert failing.answers == ["raised"]
    assert reply == to_acp(COMMON)
    assert "shortcut" in caplog.text and "shortcut bug" in caplog.text


@pytest.mark.asyncio
async def test_bad_request_bytes_still_get_invalid_argument(recorded: Recorded) -> None:
    async with in_process_server() as running, grpc.aio.insecure_channel(running.address) as channel:
        raw: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(TO_ACP)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await raw(b"\x0a\x04\x6a\x02\xff\xfe", timeout=10)  # an envelope whose user_id is not UTF-8
    assert recorded.answers == [False]
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "ToACPRequest" in (caught.value.details() or "")


def test_only_unary_asyncio_handlers_take_a_shortcut() -> None:
    async def stream(request: object, context: object) -> None:
        return None

    handler: grpc.RpcMethodHandler[Any, Any] = grpc.unary_stream_rpc_method_handler(
        stream, request_deserializer=pb.ToACPRequest.FromString
    )
    with pytest.raises(TypeError, match="unary"):
        calls.parsing_handler(handler, calls.InFlightCalls(), to_acp_reply)
