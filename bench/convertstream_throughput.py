"""Section "convertstream": ``ConvertStream`` records/s versus unary ``ToACP`` calls/s with 64 calls in flight.

The issue's target: one ``ConvertStream`` converts at least 10x the records per second that unary
``ToACP`` calls do at c=64, for the same ``ToACPRequest``. Each stream message is a batch of records
(the RPC's shape): the stream amortizes the cost of a call, the batch the cost of a message, which in
``grpc.aio`` is about that of a small call. Batches of one show what the stream alone does.

The server (``bench.grpc_server``: the real ``E2AServer`` plus bench-only echoes) runs in its own
process; the load comes from Go (bench/goload.py): ghz for the unary calls, ``streamload`` for the
stream. A Python echo stream of the same batches (the same server) and grpc-go echoes of the same
messages (bench/go ``ceiling``) show what the transport costs and allows.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import grpc

from bench import goload, paired
from bench.codec_roundtrip import multimodal_prompt
from bench.report import SectionResult, table
from bench.serverproc import server_process, wait_serving
from e2a.v1 import conversion_service_pb2 as pb
from e2a_grpc import E2AEnvelope

UNARY_IN_FLIGHT = 64
#: Batch sizes measured against unary calls; the target is judged on the largest.
BATCHES = (1, 32)
#: Batches each stream keeps unanswered (the server reads up to its window ahead).
STREAM_WINDOW = 8
PAIRS = 6
ROUND_SECONDS = 1.5
WARMUP_SECONDS = 1.0
CEILING_ROUNDS = 3
TARGET_RATIO = 10.0

UNARY = "ToACP"
STREAM = "ConvertStream"
UNARY_GHZ = "e2a.v1.ConversionService.ToACP"
STREAM_METHOD = "/e2a.v1.ConversionService/ConvertStream"
ECHO_GHZ = "e2a.bench.v1.Echo.Echo"
ECHO_STREAM_METHOD = "/e2a.bench.v1.Echo/EchoStream"

_CALL_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Requests:
    """The request files the load generators send, for one batch size."""

    unary: Path
    batch: Path
    size: int


def _unary_round(address: str, method: str, request: Path, seconds: float, server_pid: int) -> paired.Round:
    clock = paired.RoundClock(server_pid)
    load = goload.ghz(address, method, request, UNARY_IN_FLIGHT, seconds)
    return clock.stop(load.counted, load.done, load.seconds, load.client_cpu_seconds)


def _stream_round(address: str, method: str, requests: Requests, seconds: float, server_pid: int) -> paired.Round:
    """One stream keeping ``STREAM_WINDOW`` batches unanswered for ``seconds``; items are records."""
    clock = paired.RoundClock(server_pid)
    load = goload.streamload(
        address, method, requests.batch, mode=goload.Mode.BIDI, streams=1, window=STREAM_WINDOW, seconds=seconds
    )
    records = load.counted * requests.size
    return clock.stop(records, records, load.seconds, load.client_cpu_seconds)


async def _check(channel: grpc.aio.Channel, request: pb.ToACPRequest, size: int) -> None:
    """Refuse to time a stream that does not answer each record as the unary RPC does."""
    to_acp: grpc.aio.UnaryUnaryMultiCallable[bytes, pb.ToACPResponse] = channel.unary_unary(
        "/e2a.v1.ConversionService/ToACP", response_deserializer=pb.ToACPResponse.FromString
    )
    unary = await to_acp(request.SerializeToString(), timeout=_CALL_TIMEOUT_SECONDS)
    batch = pb.ConvertStreamRequest(conversions=[pb.ConvertRequest(to_acp=request)] * size)
    stream: grpc.aio.StreamStreamMultiCallable[bytes, pb.ConvertStreamResponse] = channel.stream_stream(
        STREAM_METHOD, response_deserializer=pb.ConvertStreamResponse.FromString
    )
    data = batch.SerializeToString()
    replies = [reply async for reply in stream(iter([data, data]), timeout=_CALL_TIMEOUT_SECONDS)]
    results = [result for reply in replies for result in reply.results]
    if [result.index for result in results] != list(range(2 * size)):
        raise RuntimeError("ConvertStream did not answer every record in order")
    if any(result.to_acp != unary for result in results):
        raise RuntimeError("ConvertStream did not answer as ToACP does")


async def _measure(
    address: str, process: subprocess.Popen[bytes], log: IO[bytes], request: pb.ToACPRequest, files: list[Requests]
) -> tuple[list[paired.Paired], dict[int, float]]:
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, process, log)
        for requests in files:
            await _check(channel, request, requests.size)
    pid = process.pid
    _unary_round(address, UNARY_GHZ, files[0].unary, WARMUP_SECONDS, pid)
    results = []
    for requests in files:
        _stream_round(address, STREAM_METHOD, requests, WARMUP_SECONDS, pid)

        async def run_round(rpc: str, requests: Requests = requests) -> paired.Round:
            if rpc == UNARY:
                return _unary_round(address, UNARY_GHZ, requests.unary, ROUND_SECONDS, pid)
            return _stream_round(address, STREAM_METHOD, requests, ROUND_SECONDS, pid)

        name = f"batches of {requests.size}"
        results.append(await paired.alternate(name, (STREAM, UNARY), (STREAM, UNARY), PAIRS, run_round))
    # The Python echo stream of the same batches: the transport's share of ConvertStream's cost.
    echo_stream = {
        requests.size: statistics.median(
            _stream_round(address, ECHO_STREAM_METHOD, requests, ROUND_SECONDS, pid).items_per_s
            for _ in range(CEILING_ROUNDS)
        )
        for requests in files
    }
    return results, echo_stream


def _ceilings(
    files: list[Requests], results: list[paired.Paired], echo_stream: dict[int, float]
) -> list[paired.Ceiling]:
    ceilings = []
    with goload.ceiling_server() as (address, pid):
        _unary_round(address, ECHO_GHZ, files[0].unary, WARMUP_SECONDS, pid)
        unary = [_unary_round(address, ECHO_GHZ, files[0].unary, ROUND_SECONDS, pid) for _ in range(CEILING_ROUNDS)]
        ceilings.append(
            paired.Ceiling("unary", "echo (c=64)", unary, {"Python ToACP": statistics.median(results[0].rates(UNARY))})
        )
        for requests, result in zip(files, results, strict=True):
            _stream_round(address, ECHO_STREAM_METHOD, requests, WARMUP_SECONDS, pid)
            rounds = [
                _stream_round(address, ECHO_STREAM_METHOD, requests, ROUND_SECONDS, pid) for _ in range(CEILING_ROUNDS)
            ]
            python = {"Python ToACP": statistics.median(result.rates(STREAM))}
            ceilings.append(paired.Ceiling(result.name, "EchoStream", rounds, python))
    # The Python echo stream, beside the grpc-go one (the unary echo is in the "toacp" section).
    for ceiling, requests in zip(ceilings[1:], files, strict=True):
        ceiling.python["Python echo"] = echo_stream[requests.size]
    return ceilings


def run() -> SectionResult:
    goload.ensure_tools()
    load_before = os.getloadavg()[0]
    request = pb.ToACPRequest(envelope=E2AEnvelope.from_dict(multimodal_prompt()).to_proto())
    with tempfile.TemporaryDirectory(prefix="e2a-bench-") as scratch:
        unary_file = goload.request_file(Path(scratch), "toacp", request.SerializeToString())
        files = []
        for size in BATCHES:
            batch = pb.ConvertStreamRequest(conversions=[pb.ConvertRequest(to_acp=request)] * size)
            batch_file = goload.request_file(Path(scratch), f"batch-{size}", batch.SerializeToString())
            files.append(Requests(unary=unary_file, batch=batch_file, size=size))
        with server_process("bench.grpc_server") as (address, process, log):
            results, echo_stream = asyncio.run(_measure(address, process, log, request, files))
        ceilings = _ceilings(files, results, echo_stream)
    load_after = os.getloadavg()[0]
    targets = (results[-1].target("convertstream", "records", TARGET_RATIO),)
    summary = [
        [result.name, f"{result.median_ratio:.2f}", "PASS" if result.median_ratio >= TARGET_RATIO else "FAIL"]
        for result in results
    ]
    markdown = f"""## ConvertStream records/s vs unary ToACP

Target: one `ConvertStream` converts at least {TARGET_RATIO:.0f}x the records/s of unary `ToACP` calls
with {UNARY_IN_FLIGHT} in flight, for the same `ToACPRequest` (the codec section's multimodal
`session/prompt`), measured in the same run; judged on batches of {BATCHES[-1]} records per stream
message. Batches of 1 show what the stream alone amortizes.

Method: `bench/grpc_server.py` in its own process (the real `E2AServer` plus bench-only echoes).
Before timing, the stream's results are checked to be in order and equal to `ToACP`'s reply. Unary:
ghz {goload.ghz_version()}, {UNARY_IN_FLIGHT} calls in flight on one connection. Stream: bench/go's
`streamload`, one `ConvertStream` keeping {STREAM_WINDOW} batches unanswered (the server reads up to
`--convert-stream-window` batches ahead), replies counted unparsed; records/s = replies/s x batch
size. After a {WARMUP_SECONDS:.0f} s warm-up, {PAIRS} pairs of {ROUND_SECONDS} s rounds per batch size,
stream and unary back to back (order alternating). Server CPU µs per record and the client's cores
(the Go process's own CPU) as in the other sections.

{table(["Workload", "ConvertStream/ToACP records/s (median)", "Target"], summary, right=(1,))}

{paired.target_table(results, "Workload", "records", ".1f", TARGET_RATIO)}

Per RPC:

{paired.rpcs_table(results, "Workload", "records", ".1f")}

The transport's ceiling: grpc-go echoes (`bench/go/cmd/ceiling`) of the same messages, driven the same
way ({CEILING_ROUNDS} rounds of {ROUND_SECONDS} s): the unary `ToACPRequest` echo with ghz, and an echo
stream of the same batches with `streamload` (records/s). "Python echo / grpc-go" is the Python
server's echo stream of the same batches (`/e2a.bench.v1.Echo/EchoStream`, same stack), i.e. what
`grpc.aio` alone reaches per stream message.

{paired.ceiling_table(ceilings, "Workload", "records")}

Noise: the load generators and the server share this VM's cores (nproc above) with anything else
running; the 1-minute load average was {load_before:.1f} when this section started and
{load_after:.1f} when it ended.
"""
    return SectionResult(markdown=markdown, targets=targets)
