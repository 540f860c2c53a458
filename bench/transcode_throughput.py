"""Section "transcode": E2A wire JSON records/s through one ``Transcode`` stream versus unary ``EnvelopeFromJson``.

Both RPCs read the same ~3 KB envelope JSON into an ``E2AEnvelope`` message, so the difference is the
per-record cost of a unary call (headers, a stream per call, a completion per call) against one
message on a long-lived stream. The unary side is measured twice: one call at a time (what a simple
client does) and many calls in flight (the most a client gets out of unary calls).

The server (``bench.grpc_server``: the real ``E2AServer``) runs in its own process; the load comes from
Go (bench/goload.py: ghz for the unary calls, ``streamload`` for the stream), which does not hide the
server's cost behind its own.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
from pathlib import Path
from typing import IO

import grpc

from bench import goload, paired
from bench.codec_roundtrip import multimodal_prompt
from bench.report import SectionResult
from bench.serverproc import server_process, wait_serving
from e2a.v1 import codec_service_pb2 as pb
from e2a_grpc import E2AEnvelope

UNARY_IN_FLIGHT = 64
#: Workload name -> unary calls kept in flight (the Transcode side is always one stream).
WORKLOADS = {"unary 1 call at a time": 1, f"unary {UNARY_IN_FLIGHT} calls in flight": UNARY_IN_FLIGHT}
PAIRS = 8
ROUND_SECONDS = 1.0
WARMUP_SECONDS = 1.0
#: The stream must beat even the best unary use: that is what it is for.
TARGET_RATIO = 1.0

TRANSCODE_METHOD = "/e2a.v1.CodecService/Transcode"
UNARY_METHOD = "/e2a.v1.CodecService/EnvelopeFromJson"
UNARY_GHZ = "e2a.v1.CodecService.EnvelopeFromJson"
#: Records each Transcode stream keeps unanswered (the server takes one at a time; flow control paces).
STREAM_WINDOW = 64
TRANSCODE = "Transcode stream"
UNARY = "EnvelopeFromJson"

#: A call slower than this means the server is stuck: fail the section rather than hang ``make bench``.
_CALL_TIMEOUT_SECONDS = 30.0


def envelope_json() -> str:
    """The record both RPCs read: the codec section's realistic multimodal prompt, as wire JSON."""
    return E2AEnvelope.from_dict(multimodal_prompt()).to_json()


def _transcode_round(address: str, request: Path, seconds: float, server_pid: int) -> paired.Round:
    """One stream keeping ``STREAM_WINDOW`` records unanswered for ``seconds``; replies counted."""
    clock = paired.RoundClock(server_pid)
    load = goload.streamload(
        address, TRANSCODE_METHOD, request, mode=goload.Mode.BIDI, streams=1, window=STREAM_WINDOW, seconds=seconds
    )
    return clock.stop(load.counted, load.done, load.seconds, load.client_cpu_seconds)


def _unary_round(address: str, request: Path, in_flight: int, seconds: float, server_pid: int) -> paired.Round:
    """ghz keeps ``in_flight`` calls outstanding for ``seconds``; calls it cuts off at the end go uncounted."""
    clock = paired.RoundClock(server_pid)
    load = goload.ghz(address, UNARY_GHZ, request, in_flight, seconds)
    return clock.stop(load.counted, load.done, load.seconds, load.client_cpu_seconds)


async def _check(channel: grpc.aio.Channel, text: str) -> dict[str, int]:
    """Refuse to time RPCs that do not do their job; returns each RPC's reply size in bytes."""
    expected = E2AEnvelope.from_json(text).to_proto()
    unary: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(UNARY_METHOD)
    unary_reply = await unary(pb.EnvelopeFromJsonRequest(json=text).SerializeToString(), timeout=_CALL_TIMEOUT_SECONDS)
    if pb.EnvelopeFromJsonResponse.FromString(unary_reply).envelope != expected:
        raise RuntimeError("EnvelopeFromJson did not return the envelope the model reads")
    transcode: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(TRANSCODE_METHOD)
    stream = transcode(iter([pb.TranscodeRequest(envelope_json=text).SerializeToString()] * 2))
    replies = [pb.TranscodeResponse.FromString(reply) async for reply in stream]
    if [(reply.index, reply.envelope) for reply in replies] != [(0, expected), (1, expected)]:
        raise RuntimeError("Transcode did not return the envelope the model reads, in order")
    return {UNARY: len(unary_reply), TRANSCODE: len(replies[1].SerializeToString())}


async def _measure(
    address: str, process: subprocess.Popen[bytes], log: IO[bytes], text: str, scratch: Path, sizes: dict[str, int]
) -> list[paired.Paired]:
    # Pre-serialized requests, replies kept as bytes: the client's work per record is the same on both
    # RPCs and the comparison is about the server.
    unary_request = goload.request_file(scratch, "unary", pb.EnvelopeFromJsonRequest(json=text).SerializeToString())
    transcode_data = pb.TranscodeRequest(envelope_json=text).SerializeToString()
    transcode_request = goload.request_file(scratch, "transcode", transcode_data)
    sizes["request"] = len(transcode_data)
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, process, log)
        sizes.update(await _check(channel, text))
    results = []
    for name, in_flight in WORKLOADS.items():

        async def run_round(rpc: str, seconds: float = ROUND_SECONDS, in_flight: int = in_flight) -> paired.Round:
            if rpc == TRANSCODE:
                return _transcode_round(address, transcode_request, seconds, process.pid)
            return _unary_round(address, unary_request, in_flight, seconds, process.pid)

        for rpc in (TRANSCODE, UNARY):
            await run_round(rpc, WARMUP_SECONDS)
        results.append(await paired.alternate(name, (TRANSCODE, UNARY), ("Transcode", "unary"), PAIRS, run_round))
    return results


def run() -> SectionResult:
    goload.ensure_tools()
    load_before = os.getloadavg()[0]
    text = envelope_json()
    sizes: dict[str, int] = {}
    with (
        tempfile.TemporaryDirectory(prefix="e2a-bench-") as scratch,
        server_process("bench.grpc_server") as (address, process, log),
    ):
        results = asyncio.run(_measure(address, process, log, text, Path(scratch), sizes))
    load_after = os.getloadavg()[0]
    targets = tuple(result.target("transcode", "records", TARGET_RATIO) for result in results)

    def size_columns(_result: paired.Paired, rpc: str) -> list[str]:
        return [str(sizes["request"]), str(sizes[rpc])]

    markdown = f"""## Transcode stream vs unary EnvelopeFromJson

Target: records/s through one `Transcode` stream is at least {TARGET_RATIO}x the records/s of unary
`EnvelopeFromJson` calls on one connection, measured in the same run, both with one call at a time
and with {UNARY_IN_FLIGHT} calls in flight: the stream is for bulk traffic, so it must beat the best a
client can do with unary calls. Every record is the same {len(text.encode())}-byte envelope wire JSON
(the codec section's multimodal session/prompt), read into an `E2AEnvelope` message by both RPCs.

Method: `bench/grpc_server.py` runs `E2AServer` (the real options, health, reflection;
its startup heap frozen out of the cyclic GC once it serves, as `e2a-grpc serve` does) in its own
process. Before timing, both RPCs are checked to return the envelope `E2AEnvelope.from_json` reads
(Transcode: in order, with indexes 0 and 1). The load comes from Go, sending pre-serialized requests
and keeping reply bytes, so its own work per record is about the same on both RPCs: a Transcode round
is one stream of bench/go's `streamload` keeping {STREAM_WINDOW} records unanswered; a unary round is
ghz {goload.ghz_version()} keeping 1 or {UNARY_IN_FLIGHT} calls outstanding. Records (replies or calls)
completed within a round count; those in flight at its end go uncounted. Per workload:
{WARMUP_SECONDS:g} s warm-up per RPC, then {PAIRS} pairs of {ROUND_SECONDS:g} s rounds, the two RPCs back
to back (order alternating per pair). "Transcode/unary (median)" is the median over pairs of the ratio
within a pair; the target uses it. Server CPU (user + system, all threads, from `/proc`) gives the
server's CPU µs per record; the client's cores are the Go process's own.

{paired.target_table(results, "Unary side", "records", ".0f", TARGET_RATIO)}

Per RPC:

{paired.rpcs_table(results, "Unary side", "records", ".0f", size_columns, ("request bytes", "reply bytes"))}

Noise: the load generators and the server share this VM's cores with anything else running; the 1-minute load average
was {load_before:.1f} when this section started and {load_after:.1f} when it ended. "max/min" is the
spread between rounds of one RPC; the per-pair ratio cancels drift slower than a pair.
"""
    return SectionResult(markdown=markdown, targets=targets)
