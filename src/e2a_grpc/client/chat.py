"""Client side of the Chat RPC: yields frames and checks the section 12 invariants as they arrive."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import grpc

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.model import E2AEnvelope, E2AResponse


def chat(
    channel: grpc.Channel,
    envelope: E2AEnvelope,
    *,
    timeout: float | None = None,
    metadata: tuple[tuple[str, str], ...] = (),
) -> Iterator[E2AResponse]:
    """Call Chat and yield each frame, checking the invariants; raises StreamInvariantError."""
    stub = pb_grpc.AgentServiceStub(channel)
    checker = StreamChecker(envelope)
    for reply in stub.Chat(pb.ChatRequest(envelope=envelope.to_proto()), timeout=timeout, metadata=metadata):
        frame = E2AResponse.from_proto(reply.response)
        checker.check(frame)
        yield frame
    checker.finish()


async def achat(
    channel: grpc.aio.Channel,
    envelope: E2AEnvelope,
    *,
    timeout: float | None = None,
    metadata: tuple[tuple[str, str], ...] = (),
) -> AsyncIterator[E2AResponse]:
    """``chat`` for grpc.aio channels."""
    stub = pb_grpc.AgentServiceStub(channel)
    checker = StreamChecker(envelope)
    async for reply in stub.Chat(pb.ChatRequest(envelope=envelope.to_proto()), timeout=timeout, metadata=metadata):
        frame = E2AResponse.from_proto(reply.response)
        checker.check(frame)
        yield frame
    checker.finish()
