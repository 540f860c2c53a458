"""Prometheus metrics (``metrics_port``): call counts by method and status code, and the Chat ones.

Each test starts an in-process server with ``metrics_port=0``, sends known traffic and scrapes
``/metrics`` over HTTP, as Prometheus would, then checks the exact counts.
"""

from __future__ import annotations

import asyncio
import urllib.request

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from e2a.v1 import agent_service_pb2 as chat_pb
from e2a.v1 import agent_service_pb2_grpc as chat_grpc
from e2a.v1 import codec_service_pb2 as codec_pb
from e2a.v1 import codec_service_pb2_grpc as codec_grpc
from e2a.v1 import conversion_service_pb2 as conversion_pb
from e2a.v1 import conversion_service_pb2_grpc as conversion_grpc
from e2a_grpc import E2AEnvelope
from e2a_grpc.chat.events import BackendError, Passthrough
from e2a_grpc.model import ErrorCode
from tests.conftest import InProcessServer, in_process_server
from tests.support.fakes import ControlledBackend

CODEC = "e2a.v1.CodecService"
AGENT = "e2a.v1.AgentService"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def _scrape(server: InProcessServer) -> Samples:
    port = server.server.metrics_port
    assert port is not None
    url = f"http://127.0.0.1:{port}/metrics"

    def fetch() -> str:
        with urllib.request.urlopen(url, timeout=10) as response:
            text: str = response.read().decode()
            return text

    text = await asyncio.to_thread(fetch)
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _call_labels(service: str, method: str, kind: str, **more: str) -> frozenset[tuple[str, str]]:
    return frozenset({"grpc_service": service, "grpc_method": method, "grpc_type": kind, **more}.items())


def _chat_request(text: str) -> chat_pb.ChatRequest:
    return chat_pb.ChatRequest(envelope=E2AEnvelope(method="chat.send", params={"text": text}).to_proto())


@pytest.mark.asyncio
async def test_calls_are_counted_by_method_and_status_code() -> None:
    async with in_process_server(metrics_port=0) as server, grpc.aio.insecure_channel(server.address) as channel:
        codec = codec_grpc.CodecServiceStub(channel)
        for _ in range(2):
            await codec.EnvelopeToJson(
                codec_pb.EnvelopeToJsonRequest(envelope=E2AEnvelope(method="chat.send").to_proto()), timeout=10
            )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await codec.EnvelopeFromJson(codec_pb.EnvelopeFromJsonRequest(json="{not json"), timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        frames = [
            frame async for frame in chat_grpc.AgentServiceStub(channel).Chat(_chat_request("one two"), timeout=10)
        ]
        samples = await _scrape(server)

    unary_ok = _call_labels(CODEC, "EnvelopeToJson", "unary")
    unary_bad = _call_labels(CODEC, "EnvelopeFromJson", "unary")
    chat = _call_labels(AGENT, "Chat", "server_stream")
    assert samples[("grpc_server_started_total", unary_ok)] == 2
    assert samples[("grpc_server_handled_total", unary_ok | {("grpc_code", "OK")})] == 2
    assert samples[("grpc_server_handling_seconds_count", unary_ok)] == 2
    assert samples[("grpc_server_started_total", unary_bad)] == 1
    assert samples[("grpc_server_handled_total", unary_bad | {("grpc_code", "INVALID_ARGUMENT")})] == 1
    assert ("grpc_server_handled_total", unary_bad | {("grpc_code", "OK")}) not in samples
    assert samples[("grpc_server_started_total", chat)] == 1
    assert samples[("grpc_server_handled_total", chat | {("grpc_code", "OK")})] == 1
    assert samples[("grpc_server_msg_sent_total", chat)] == len(frames) == 3  # two words, then the result
    assert samples[("e2a_chat_frames_sent_total", frozenset({("response_kind", "e2a.chunk")}))] == 2
    assert samples[("e2a_chat_frames_sent_total", frozenset({("response_kind", "e2a.complete")}))] == 1
    assert samples[("e2a_chat_streams_in_flight", frozenset())] == 0


@pytest.mark.asyncio
async def test_unauthenticated_calls_are_counted() -> None:
    async with (
        in_process_server(metrics_port=0, token="s3cret-token") as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await codec_grpc.CodecServiceStub(channel).EnvelopeFromJson(
                codec_pb.EnvelopeFromJsonRequest(json="{}"), timeout=10
            )
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        samples = await _scrape(server)
    labels = _call_labels(CODEC, "EnvelopeFromJson", "unary", grpc_code="UNAUTHENTICATED")
    assert samples[("grpc_server_handled_total", labels)] == 1


@pytest.mark.asyncio
async def test_backend_errors_and_limits_are_counted() -> None:
    backend = ControlledBackend(before=(), after=(), error=BackendError(ErrorCode.AGENT_UNAVAILABLE, "agent down"))
    backend.release.set()
    async with (
        in_process_server(backend, metrics_port=0, chat_max_prompt_bytes=40) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        chat = chat_grpc.AgentServiceStub(channel)
        failed = [frame async for frame in chat.Chat(_chat_request("short"), timeout=10)]
        too_large = [frame async for frame in chat.Chat(_chat_request("a prompt of more than forty bytes"), timeout=10)]
        samples = await _scrape(server)
    assert [frame.response.response_kind for frame in failed + too_large] == ["e2a.error", "e2a.error"]
    backend_errors = frozenset({("code", str(ErrorCode.AGENT_UNAVAILABLE))})
    assert samples[("e2a_chat_backend_errors_total", backend_errors)] == 1
    assert samples[("e2a_chat_limits_hit_total", frozenset({("limit", "prompt_too_large")}))] == 1
    assert samples[("e2a_chat_frames_sent_total", frozenset({("response_kind", "e2a.error")}))] == 2


@pytest.mark.asyncio
async def test_kinds_and_codes_this_version_does_not_know_are_counted_as_other() -> None:
    """What a relayed upstream may write (``chat.relay``): each new value must not become a series."""
    newer = [Passthrough(f"x.newer_kind_{n}", {}) for n in range(3)]
    backend = ControlledBackend(before=(), after=newer, error=BackendError("a_newer_code", "upstream said so"))
    backend.release.set()
    async with (
        in_process_server(backend, metrics_port=0) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        chat = chat_grpc.AgentServiceStub(channel)
        frames = [frame async for frame in chat.Chat(_chat_request("hi"), timeout=10)]
        samples = await _scrape(server)
    assert [frame.response.response_kind for frame in frames] == [
        *(event.response_kind for event in newer),
        "e2a.error",
    ]
    sent = {labels: value for (name, labels), value in samples.items() if name == "e2a_chat_frames_sent_total"}
    assert sent == {frozenset({("response_kind", "other")}): 3, frozenset({("response_kind", "e2a.error")}): 1}
    errors = {labels: value for (name, labels), value in samples.items() if name == "e2a_chat_backend_errors_total"}
    assert errors == {frozenset({("code", "other")}): 1}


@pytest.mark.asyncio
async def test_metrics_are_off_by_default() -> None:
    async with in_process_server() as server:
        assert server.server.metrics is None
        assert server.server.metrics_port is None


@pytest.mark.asyncio
async def test_toacp_calls_are_counted() -> None:
    request = conversion_pb.ToACPRequest(envelope=E2AEnvelope(method="chat.send", params={"text": "hi"}).to_proto())
    async with in_process_server(metrics_port=0) as server, grpc.aio.insecure_channel(server.address) as channel:
        stub = conversion_grpc.ConversionServiceStub(channel)
        for _ in range(3):
            await stub.ToACP(request, timeout=10)
        samples = await _scrape(server)
    labels = _call_labels("e2a.v1.ConversionService", "ToACP", "unary")
    assert samples[("grpc_server_started_total", labels)] == 3
    assert samples[("grpc_server_handled_total", labels | {("grpc_code", "OK")})] == 3
