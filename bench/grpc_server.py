"""The server of the "toacp" and "transcode" sections: ``python -m bench.grpc_server --port N`` (until a signal).

It is the real ``E2AServer`` stack (same options, interceptors, health and reflection) plus one bench-only
RPC, ``/e2a.bench.v1.Echo/Echo``, which takes a ``ToACPRequest`` and returns it unchanged (and its stream
twin ``EchoStream`` for ``ConvertStreamRequest``, the "convertstream" section's baseline). The echo pays the
same protobuf parse and serialize and the same gRPC cost per call as ``ToACP`` but converts nothing, so
ToACP calls/s over echo calls/s is what the conversion costs on top of gRPC. The echo is not in the proto
nor in ``e2a_grpc``: it exists only for this benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator

import grpc

from bench.serverproc import add_bench_rpc
from e2a.v1 import conversion_service_pb2 as pb
from e2a_grpc.grpc.server import E2AServer, freeze_startup_heap
from e2a_grpc.settings import ServerSettings

ECHO_SERVICE = "e2a.bench.v1.Echo"
ECHO_METHOD = f"/{ECHO_SERVICE}/Echo"


async def _echo(
    request: pb.ToACPRequest, context: grpc.aio.ServicerContext[pb.ToACPRequest, pb.ToACPRequest]
) -> pb.ToACPRequest:
    return request


def add_echo(server: grpc.aio.Server) -> None:
    """Register the echo RPC, parsing and serializing with the same message class ``ToACP`` takes."""
    handler = grpc.unary_unary_rpc_method_handler(
        _echo,
        request_deserializer=pb.ToACPRequest.FromString,
        response_serializer=pb.ToACPRequest.SerializeToString,
    )
    add_bench_rpc(server, ECHO_SERVICE, "Echo", handler)


ECHO_STREAM_METHOD = f"/{ECHO_SERVICE}/EchoStream"


async def _echo_stream(
    requests: AsyncIterator[pb.ConvertStreamRequest],
    context: grpc.aio.ServicerContext[pb.ConvertStreamRequest, pb.ConvertStreamRequest],
) -> AsyncIterator[pb.ConvertStreamRequest]:
    async for request in requests:
        yield request


def add_echo_stream(server: grpc.aio.Server) -> None:
    """Register the stream echo: each ``ConvertStreamRequest`` parsed and written back, as
    ``ConvertStream`` parses its requests and writes a reply each, but converting nothing."""
    handler = grpc.stream_stream_rpc_method_handler(
        _echo_stream,
        request_deserializer=pb.ConvertStreamRequest.FromString,
        response_serializer=pb.ConvertStreamRequest.SerializeToString,
    )
    add_bench_rpc(server, ECHO_SERVICE, "EchoStream", handler)


async def serve(port: int) -> None:
    server = E2AServer(ServerSettings(host="127.0.0.1", port=port))
    # Before start, on the same grpc.aio server: both RPCs go through one stack.
    add_echo(server.server)
    add_echo_stream(server.server)
    await server.start()
    freeze_startup_heap()  # as `e2a-grpc serve` does
    await server.stop_when_signalled()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.grpc_server", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="loopback port to listen on")
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
