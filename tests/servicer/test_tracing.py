"""OpenTelemetry tracing (``tracing=True``): a server span per RPC in the caller's W3C trace, and a
child span per Chat backend turn. Spans are collected with the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from e2a.v1 import agent_service_pb2 as chat_pb
from e2a.v1 import agent_service_pb2_grpc as chat_grpc
from e2a.v1 import codec_service_pb2 as codec_pb
from e2a.v1 import codec_service_pb2_grpc as codec_grpc
from e2a_grpc import E2AEnvelope
from e2a_grpc.grpc.chat_servicer import BACKEND_TURN_SPAN
from e2a_grpc.grpc.server import E2AServer
from tests.conftest import server_config

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN_ID}-01"


@pytest_asyncio.fixture
async def traced() -> AsyncIterator[tuple[grpc.aio.Channel, InMemorySpanExporter]]:
    """A server with tracing on, its spans kept in memory (exported as each one ends)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = E2AServer(server_config(tracing=True), tracer_provider=provider)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield channel, exporter
    finally:
        await server.stop()


def _only(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    matching = [span for span in spans if span.name == name]
    assert len(matching) == 1, [span.name for span in spans]
    return matching[0]


@pytest.mark.asyncio
async def test_chat_continues_the_callers_trace_with_a_backend_turn_span(
    traced: tuple[grpc.aio.Channel, InMemorySpanExporter],
) -> None:
    channel, exporter = traced
    request = chat_pb.ChatRequest(
        envelope=E2AEnvelope(method="chat.send", request_id="req-7", params={"text": "one two"}).to_proto()
    )
    call = chat_grpc.AgentServiceStub(channel).Chat(request, metadata=(("traceparent", TRACEPARENT),), timeout=10)
    frames = [frame async for frame in call]
    assert len(frames) == 3

    spans = list(exporter.get_finished_spans())
    server_span = _only(spans, "/e2a.v1.AgentService/Chat")
    turn = _only(spans, BACKEND_TURN_SPAN)
    assert server_span.kind is SpanKind.SERVER
    assert format(server_span.context.trace_id, "032x") == TRACE_ID
    assert server_span.parent is not None and format(server_span.parent.span_id, "016x") == PARENT_SPAN_ID
    assert turn.context.trace_id == server_span.context.trace_id
    assert turn.parent is not None and turn.parent.span_id == server_span.context.span_id
    assert dict(turn.attributes or {}) == {
        "e2a.backend": "echo",
        "e2a.request_id": "req-7",
        "e2a.frames": 3,
        "e2a.final_code": "ok",
    }


@pytest.mark.asyncio
async def test_unary_calls_get_a_server_span_without_a_caller_trace(
    traced: tuple[grpc.aio.Channel, InMemorySpanExporter],
) -> None:
    channel, exporter = traced
    await codec_grpc.CodecServiceStub(channel).EnvelopeToJson(
        codec_pb.EnvelopeToJsonRequest(envelope=E2AEnvelope(method="chat.send").to_proto()), timeout=10
    )
    span = _only(list(exporter.get_finished_spans()), "/e2a.v1.CodecService/EnvelopeToJson")
    assert span.parent is None
    assert (span.attributes or {})["rpc.grpc.status_code"] == grpc.StatusCode.OK.value[0]
