"""Section "toacp": ``ToACP`` calls/s with 64 calls in flight versus a bare echo RPC on the same server stack.

The issue's target: ToACP throughput is at least 0.9x that of an echo of the same ``ToACPRequest``
measured in the same run, i.e. conversion adds at most 10 % on top of gRPC's own cost.

The server (``bench.grpc_server``: the real ``E2AServer`` plus the echo) runs in its own process, so that
client and server each get a core instead of sharing one event loop.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from typing import IO, Any

import grpc

from bench import paired
from bench.codec_roundtrip import SPEC_11_1_EXAMPLE, multimodal_prompt
from bench.grpc_server import ECHO_METHOD
from bench.report import SectionResult
from bench.serverproc import server_process, wait_serving
from e2a.v1 import conversion_service_pb2 as pb
from e2a_grpc import E2AEnvelope

IN_FLIGHT = 64
PAIRS = 20
ROUND_SECONDS = 1.0
WARMUP_SECONDS = 1.0
TARGET_RATIO = 0.9

TOACP_METHOD = "/e2a.v1.ConversionService/ToACP"
ECHO = "echo"
TOACP = "ToACP"

#: A call slower than this means the server is stuck: fail the section rather than hang ``make bench``.
_CALL_TIMEOUT_SECONDS = 30.0

#: Workload name -> E2A envelope dict; the first is the issue's realistic case.
WORKLOADS: dict[str, dict[str, Any]] = {
    "multimodal session/prompt": multimodal_prompt(),
    "spec 11.1 example": SPEC_11_1_EXAMPLE,
}


async def _round(
    call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes], request: bytes, seconds: float, server_pid: int
) -> paired.Round:
    """Keep exactly ``IN_FLIGHT`` calls outstanding for ``seconds``; calls/s counts calls done by then.

    Calls still in flight at the deadline finish (for the CPU figures) but are not counted, so the
    counted window never sees fewer than ``IN_FLIGHT`` calls outstanding.
    """
    counted = 0
    done = 0
    clock = paired.RoundClock(server_pid)
    deadline = clock.start + seconds

    async def worker() -> None:
        nonlocal counted, done
        while True:
            await call(request, timeout=_CALL_TIMEOUT_SECONDS)
            done += 1
            if time.perf_counter() > deadline:
                return
            counted += 1

    async with asyncio.TaskGroup() as workers:
        for _ in range(IN_FLIGHT):
            workers.create_task(worker())
    return clock.stop(counted, done, seconds)


async def _check(channel: grpc.aio.Channel, request: pb.ToACPRequest) -> dict[str, int]:
    """Refuse to time RPCs that do not do their job; returns each RPC's reply size in bytes."""
    data = request.SerializeToString()
    # No serializers (here and below): requests and replies are bytes.
    toacp_rpc: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(TOACP_METHOD)
    toacp = await toacp_rpc(data, timeout=_CALL_TIMEOUT_SECONDS)
    if pb.ToACPResponse.FromString(toacp).WhichOneof("result") != "jsonrpc":
        raise RuntimeError("ToACP did not return a jsonrpc result")
    echo_rpc: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(ECHO_METHOD)
    echo = await echo_rpc(data, timeout=_CALL_TIMEOUT_SECONDS)
    # Compared parsed: re-serializing the params Struct's map need not give the same bytes.
    if pb.ToACPRequest.FromString(echo) != request:
        raise RuntimeError("the echo RPC did not return its request")
    return {ECHO: len(echo), TOACP: len(toacp)}


async def _measure_workload(
    channel: grpc.aio.Channel, server_pid: int, name: str, doc: dict[str, Any], sizes: dict[str, dict[str, int]]
) -> paired.Paired:
    request = pb.ToACPRequest(envelope=E2AEnvelope.from_dict(doc).to_proto())
    data = request.SerializeToString()
    sizes[name] = {"request": len(data), **await _check(channel, request)}
    # No serializers: the client sends the same pre-serialized bytes and keeps the reply bytes, so it
    # spends the same (minimal) CPU per call on both RPCs and the comparison is about the server.
    calls: dict[str, grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]] = {
        ECHO: channel.unary_unary(ECHO_METHOD),
        TOACP: channel.unary_unary(TOACP_METHOD),
    }
    for call in calls.values():
        await _round(call, data, WARMUP_SECONDS, server_pid)

    async def run_round(rpc: str) -> paired.Round:
        return await _round(calls[rpc], data, ROUND_SECONDS, server_pid)

    return await paired.alternate(name, (TOACP, ECHO), (TOACP, ECHO), PAIRS, run_round)


async def _measure(
    address: str, process: subprocess.Popen[bytes], log: IO[bytes], sizes: dict[str, dict[str, int]]
) -> list[paired.Paired]:
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, process, log)
        return [await _measure_workload(channel, process.pid, name, doc, sizes) for name, doc in WORKLOADS.items()]


def run() -> SectionResult:
    load_before = os.getloadavg()[0]
    sizes: dict[str, dict[str, int]] = {}
    with server_process("bench.grpc_server") as (address, process, log):
        results = asyncio.run(_measure(address, process, log, sizes))
    load_after = os.getloadavg()[0]
    targets = tuple(result.target("toacp", "calls", TARGET_RATIO) for result in results)

    def size_columns(result: paired.Paired, rpc: str) -> list[str]:
        return [str(sizes[result.name]["request"]), str(sizes[result.name][rpc])]

    markdown = f"""## ToACP throughput vs gRPC echo

Target: `ToACP` calls/s with {IN_FLIGHT} calls in flight is at least {TARGET_RATIO}x the calls/s of a bare
echo RPC of the same `ToACPRequest` on the same server stack, measured in the same run, i.e. the
conversion adds at most {(1 - TARGET_RATIO) * 100:.0f} % on top of gRPC's own cost. The request is
`ToACPRequest(envelope=E2AEnvelope.from_dict(doc).to_proto())`; the workloads are the codec section's.

Method: `bench/grpc_server.py` runs in its own process: `E2AServer(ServerSettings(host="127.0.0.1", port=N))`
(the real options, health, reflection) plus a bench-only `/e2a.bench.v1.Echo/Echo` RPC, registered on
the same `grpc.aio` server, that parses a `ToACPRequest` and returns it, so it pays the same protobuf
and gRPC cost as `ToACP` but converts nothing. Before timing, `ToACP` is checked to return a `jsonrpc`
result and the echo to return its request. The client (this process) uses one `grpc.aio` channel,
{IN_FLIGHT} coroutines each calling back to back, and sends pre-serialized bytes and keeps the reply
bytes, so its own work per call is the same for both RPCs. Per workload: {WARMUP_SECONDS:.0f} s warm-up
per RPC, then {PAIRS} pairs of {ROUND_SECONDS:.0f} s rounds, echo and ToACP back to back (order alternating
per pair). calls/s counts the calls completed within a round (those still in flight at its end finish
uncounted). "ToACP/echo (median)" is the median over pairs of the ratio within a pair; the target
uses it. Server CPU (user + system, all threads, from `/proc`) over the calls of a round gives the
server's CPU µs per call; "cores busy" is CPU seconds per wall second of a round. "echo/ToACP server
CPU per call" is the ratio calls/s would show if the server's CPU were the only limit (informational).

{paired.target_table(results, "Workload", "calls", ".0f", TARGET_RATIO)}

Per RPC:

{paired.rpcs_table(results, "Workload", "calls", ".0f", size_columns, ("request bytes", "reply bytes"))}

Noise: client and server share this VM's cores (nproc above) with anything else running; the 1-minute
load average was {load_before:.1f} when this section started and {load_after:.1f} when it ended.
"max/min" is the spread between rounds of one RPC. The per-pair ratio cancels drift slower than a
pair; server CPU µs per call does not depend on how busy the client was, so it is the steadier
measure of what the conversion costs when calls/s is noisy.
"""
    return SectionResult(markdown=markdown, targets=targets)
