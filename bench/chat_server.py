"""The server the "chat" section measures: ``python -m bench.chat_server --port N`` (runs until SIGTERM/SIGINT).

It is the real ``E2AServer`` stack with the echo backend and no frame logging, plus one bench-only RPC,
``/e2a.bench.v1.BareStream/Chat``: it takes a ``ChatRequest`` and writes, with ``context.write`` as
``Chat`` does, a list of ``ChatResponse`` frames built once at startup by the echo path (the server's own
backend and ``FrameBuilder``) for ``chat_request()``. So it streams as many frames of the same sizes as
``Chat`` does for that request and pays gRPC's streaming cost, but none of E2A's per-frame work. It is not
in the proto nor in ``e2a_grpc``: it exists only for this benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections.abc import Sequence

import grpc

from bench.serverproc import add_bench_rpc
from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope
from e2a_grpc.chat.events import AgentIds
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.chat.requests import DEFAULT_CHAT_METHODS, validate_chat_request
from e2a_grpc.grpc.chat_servicer import ChatServicer
from e2a_grpc.grpc.server import E2AServer, freeze_startup_heap
from e2a_grpc.settings import BackendName, ServerSettings

BARE_SERVICE = "e2a.bench.v1.BareStream"
BARE_METHOD = f"/{BARE_SERVICE}/Chat"
CHAT_METHOD = "/e2a.v1.AgentService/Chat"

#: Words in the request text; the echo backend streams one frame per word plus the final frame.
WORDS = 2000
_VOCABULARY = (
    "the", "agent", "streams", "each", "word", "of", "its", "answer", "back", "as", "one", "frame", "while",
    "client", "reads", "them", "in", "order", "protocol", "envelope", "request", "response", "sequence",
    "timestamp", "provenance", "gateway", "session", "prompt",
)  # fmt: skip


def chat_text() -> str:
    """``WORDS`` words of ordinary length separated by single spaces; the same text every run."""
    return " ".join(random.Random(0).choices(_VOCABULARY, k=WORDS))


def chat_request() -> pb.ChatRequest:
    """The request both RPCs are timed with; client and server each build it from this function."""
    envelope = E2AEnvelope(method="chat.send", request_id="bench-chat", is_stream=True, params={"text": chat_text()})
    return pb.ChatRequest(envelope=envelope.to_proto())


async def echo_frames(chat: ChatServicer, request: pb.ChatRequest) -> list[pb.ChatResponse]:
    """The frames ``Chat`` writes for ``request``, built by the servicer's own backend and frame path."""
    envelope, prompt = validate_chat_request(request, DEFAULT_CHAT_METHODS)
    builder = FrameBuilder(envelope, chat.backend.info, UtcClock())
    # ``for_event`` is the servicer's event -> frame step: reusing it keeps every frame byte-for-byte
    # the size Chat writes (ids and timestamps differ in value, not in length).
    return [
        pb.ChatResponse.FromString(builder.for_event(event))
        async for event in chat.backend.stream(envelope, prompt)
        if not isinstance(event, AgentIds)
    ]


def add_bare_stream(server: grpc.aio.Server, frames: Sequence[pb.ChatResponse]) -> None:
    """Register the bare stream, parsing and serializing with the message classes ``Chat`` uses."""

    async def bare_chat(
        request: pb.ChatRequest, context: grpc.aio.ServicerContext[pb.ChatRequest, pb.ChatResponse]
    ) -> None:
        for frame in frames:
            await context.write(frame)

    handler = grpc.unary_stream_rpc_method_handler(
        bare_chat,
        request_deserializer=pb.ChatRequest.FromString,
        response_serializer=pb.ChatResponse.SerializeToString,
    )
    add_bench_rpc(server, BARE_SERVICE, "Chat", handler)


async def serve(port: int) -> None:
    server = E2AServer(ServerSettings(host="127.0.0.1", port=port, backend=BackendName.ECHO, log_frames=False))
    # Before start, on the same grpc.aio server: both RPCs go through one stack.
    add_bare_stream(server.server, await echo_frames(server.chat, chat_request()))
    await server.start()
    freeze_startup_heap()  # as `e2a-grpc serve` does
    await server.stop_when_signalled()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.chat_server", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="loopback port to listen on")
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
