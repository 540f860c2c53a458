"""The server of the "toacp" and "transcode" sections: ``python -m bench.grpc_server --port N`` (until a signal).

It is the real ``E2AServer`` stack (same options, interceptors, health and reflection) plus one bench-only
RPC, ``/e2a.bench.v1.Echo/Echo``, which takes a ``ToACPRequest`` and returns it unchanged. The echo pays the
same protobuf parse and serialize and the same gRPC cost per call as ``ToACP`` but converts nothing, so
ToACP calls/s over echo calls/s is what the conversion costs on top of gRPC. The echo is not in the proto
nor in ``e2a_grpc``: it exists only for this benchmark.
"""

from __future__ import annotations

import argparse
import asyncio

import grpc

from bench.serverproc import add_bench_rpc
from e2a.v1 import conversion_service_pb2 as pb
from e2a_grpc.grpc.server import E2AServer
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


async def serve(port: int) -> None:
    server = E2AServer(ServerSettings(host="127.0.0.1", port=port))
    # Before start, on the same grpc.aio server: both RPCs go through one stack.
    add_echo(server.server)
    await server.run_until_signalled()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.grpc_server", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="loopback port to listen on")
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
