"""Section "toacp": ``ToACP`` calls/s with 64 calls in flight versus a bare echo RPC on the same server stack.

The issue's target: ToACP throughput is at least 0.9x that of an echo of the same ``ToACPRequest``
measured in the same run, i.e. conversion adds at most 10 % on top of gRPC's own cost, on the call
the README documents (read from README.md, so the two stay the same) and on that call with a ~3 KB
envelope; the same call with a protobuf envelope and in the default dialect are measured alongside.

The server (``bench.grpc_server``: the real ``E2AServer`` plus the echo) runs in its own process and the
load comes from ghz (bench/goload.py), a Go client that does not hide the server's cost behind its own;
a grpc-go echo of the same request (bench/go ``ceiling``) shows the transport's ceiling on this machine.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import grpc
from google.protobuf import json_format

from bench import goload, paired
from bench.codec_roundtrip import multimodal_prompt
from bench.grpc_server import ECHO_METHOD
from bench.report import SectionResult
from bench.serverproc import server_process, wait_serving
from e2a.v1 import conversion_service_pb2 as pb
from e2a_grpc import E2AEnvelope

IN_FLIGHT = 64
PAIRS = 10
ROUND_SECONDS = 1.5
WARMUP_SECONDS = 1.0
CEILING_ROUNDS = 3
TARGET_RATIO = 0.9

TOACP_METHOD = "/e2a.v1.ConversionService/ToACP"
ECHO = "echo"
TOACP = "ToACP"
#: The RPCs as ghz names them (package.Service.Method; the echo is in bench/proto).
GHZ_METHODS = {TOACP: "e2a.v1.ConversionService.ToACP", ECHO: "e2a.bench.v1.Echo.Echo"}
GHZ_ECHO = GHZ_METHODS[ECHO]

#: A call slower than this means the server is stuck: fail the section rather than hang ``make bench``.
_CALL_TIMEOUT_SECONDS = 30.0

README = Path(__file__).resolve().parents[1] / "README.md"
#: The README's ToACP example: ``buf curl ... -d '<ToACPRequest as protobuf JSON>' .../ConversionService/ToACP``.
_README_TOACP = re.compile(r"-d '(?P<request>[^']*)' \\\n\s*\S*/e2a\.v1\.ConversionService/ToACP\b")


def readme_request() -> pb.ToACPRequest:
    """The ToACP call README.md documents, as it writes it."""
    found = _README_TOACP.findall(README.read_text(encoding="utf-8"))
    if len(found) != 1:
        raise RuntimeError(f"README.md should document one ToACP call with buf curl, found {len(found)}")
    request: pb.ToACPRequest = json_format.Parse(found[0], pb.ToACPRequest())
    return request


@dataclass(frozen=True)
class Workload:
    name: str
    request: pb.ToACPRequest
    #: Whether the section's target applies (the documented call and its big envelope).
    targeted: bool


def workloads() -> list[Workload]:
    """The README's call; the same with the codec section's ~3 KB multimodal envelope; with its
    envelope as a protobuf message; and in the default dialect. Nothing else changes between them."""
    documented = readme_request()
    if documented.WhichOneof("source") != "envelope_json":
        raise RuntimeError("README.md's ToACP call should carry its envelope as E2A wire JSON (envelope_json)")
    big = pb.ToACPRequest()
    big.CopyFrom(documented)
    big.envelope_json = E2AEnvelope.from_dict(multimodal_prompt()).to_json()
    as_message = pb.ToACPRequest()
    as_message.CopyFrom(documented)
    as_message.envelope.CopyFrom(E2AEnvelope.from_json(documented.envelope_json).to_proto())  # clears envelope_json
    default_dialect = pb.ToACPRequest()
    default_dialect.CopyFrom(documented)
    default_dialect.ClearField("dialect")
    return [
        Workload("README call (JSON envelope)", documented, targeted=True),
        Workload(f"README call, ~{len(big.envelope_json) / 1000:.0f} KB JSON envelope", big, targeted=True),
        Workload("README call, protobuf envelope", as_message, targeted=False),
        Workload("README call, default dialect", default_dialect, targeted=False),
    ]


def _round(address: str, method: str, request: Path, seconds: float, server_pid: int) -> paired.Round:
    """ghz keeps exactly ``IN_FLIGHT`` calls outstanding for ``seconds``; the calls it cuts off at the
    end are not counted (but their CPU is in the server's figure, as in all rounds alike)."""
    clock = paired.RoundClock(server_pid)
    load = goload.ghz(address, method, request, IN_FLIGHT, seconds)
    return clock.stop(load.counted, load.done, load.seconds, load.client_cpu_seconds)


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
    channel: grpc.aio.Channel,
    address: str,
    server_pid: int,
    name: str,
    request: pb.ToACPRequest,
    request_path: Path,
    sizes: dict[str, dict[str, int]],
) -> paired.Paired:
    data = request.SerializeToString()
    sizes[name] = {"request": len(data), **await _check(channel, request)}
    for method in GHZ_METHODS.values():
        _round(address, method, request_path, WARMUP_SECONDS, server_pid)

    async def run_round(rpc: str) -> paired.Round:
        return _round(address, GHZ_METHODS[rpc], request_path, ROUND_SECONDS, server_pid)

    return await paired.alternate(name, (TOACP, ECHO), (TOACP, ECHO), PAIRS, run_round)


async def _measure(
    address: str,
    process: subprocess.Popen[bytes],
    log: IO[bytes],
    requests: dict[str, tuple[pb.ToACPRequest, Path]],
    sizes: dict[str, dict[str, int]],
) -> list[paired.Paired]:
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, process, log)
        return [
            await _measure_workload(channel, address, process.pid, name, request, path, sizes)
            for name, (request, path) in requests.items()
        ]


def _ceilings(requests: dict[str, tuple[pb.ToACPRequest, Path]], results: list[paired.Paired]) -> list[paired.Ceiling]:
    """The grpc-go echo of each workload's request, in the same way (ghz, ``IN_FLIGHT`` calls)."""
    ceilings = []
    with goload.ceiling_server() as (address, pid):
        for (name, (_, path)), result in zip(requests.items(), results, strict=True):
            _round(address, GHZ_ECHO, path, WARMUP_SECONDS, pid)
            rounds = [_round(address, GHZ_ECHO, path, ROUND_SECONDS, pid) for _ in range(CEILING_ROUNDS)]
            python = {
                "Python echo": statistics.median(result.rates(ECHO)),
                "ToACP": statistics.median(result.rates(TOACP)),
            }
            ceilings.append(paired.Ceiling(name, "echo", rounds, python))
    return ceilings


def run() -> SectionResult:
    goload.ensure_tools()
    load_before = os.getloadavg()[0]
    sizes: dict[str, dict[str, int]] = {}
    measured = workloads()
    with tempfile.TemporaryDirectory(prefix="e2a-bench-") as scratch:
        requests = {}
        for index, workload in enumerate(measured):
            path = goload.request_file(Path(scratch), f"toacp-{index}", workload.request.SerializeToString())
            requests[workload.name] = (workload.request, path)
        with server_process("bench.grpc_server") as (address, process, log):
            results = asyncio.run(_measure(address, process, log, requests, sizes))
        ceilings = _ceilings(requests, results)
    load_after = os.getloadavg()[0]
    targeted = [result for result, workload in zip(results, measured, strict=True) if workload.targeted]
    others = [result for result, workload in zip(results, measured, strict=True) if not workload.targeted]
    targets = tuple(result.target("toacp", "calls", TARGET_RATIO) for result in targeted)
    documented = json_format.MessageToJson(measured[0].request, indent=None)

    def size_columns(result: paired.Paired, rpc: str) -> list[str]:
        return [str(sizes[result.name]["request"]), str(sizes[result.name][rpc])]

    markdown = f"""## ToACP throughput vs gRPC echo

Target: `ToACP` calls/s with {IN_FLIGHT} calls in flight is at least {TARGET_RATIO}x the calls/s of a bare
echo RPC of the same `ToACPRequest` on the same server stack, measured in the same run, i.e. the
conversion adds at most {(1 - TARGET_RATIO) * 100:.0f} % on top of gRPC's own cost, on the ToACP call
README.md documents, read from it as it is written there: `{documented}`; and on the same call with
the codec section's multimodal envelope (its wire JSON) as `envelope_json`. The same call with the
envelope as a protobuf message (`envelope`), and in the default dialect, are measured the same way
without a target.

Method: `bench/grpc_server.py` runs in its own process: `E2AServer(ServerSettings(host="127.0.0.1", port=N))`
(the real options, health, reflection;
its startup heap frozen out of the cyclic GC once it serves, as `e2a-grpc serve` does)
plus a bench-only `/e2a.bench.v1.Echo/Echo` RPC, registered on
the same `grpc.aio` server, that parses a `ToACPRequest` and returns it, so it pays the same protobuf
and gRPC cost as `ToACP` but converts nothing. Before timing, `ToACP` is checked to return a `jsonrpc`
result and the echo to return its request. The load comes from ghz {goload.ghz_version()} (a Go gRPC load
generator; `make bench-tools`), {IN_FLIGHT} calls in flight on one connection, sending the
pre-serialized request from a file (`--binary`), with a protoset from `grpc_tools.protoc
--include_imports` (ghz's own parser rejects proto3 `optional`). Per workload: {WARMUP_SECONDS:.0f} s
warm-up per RPC, then {PAIRS} pairs of {ROUND_SECONDS} s rounds, echo and ToACP back to back (order
alternating per pair). calls/s counts the calls that ended OK within a round (ghz cancels those still
in flight at its end). "ToACP/echo (median)" is the median over pairs of the ratio within a pair; the
target uses it. Server CPU (user + system, all threads, from `/proc`) over the calls of a round gives
the server's CPU µs per call; "cores busy" is CPU seconds per wall second of a round, the client's
being ghz's own (its rusage). "echo/ToACP server CPU per call" is the ratio calls/s would show if the
server's CPU were the only limit (informational).

{paired.target_table(targeted, "Workload", "calls", ".0f", TARGET_RATIO)}

Without a target:

{paired.target_table(others, "Workload", "calls", ".0f", None)}

Per RPC:

{paired.rpcs_table(results, "Workload", "calls", ".0f", size_columns, ("request bytes", "reply bytes"))}

The transport's ceiling: the same request echoed by a grpc-go server (`bench/go/cmd/ceiling`: parsed
into the generated Go `ToACPRequest` and written back), driven the same way by ghz, {CEILING_ROUNDS}
rounds of {ROUND_SECONDS} s after the Python rounds; the last columns are the Python figures above
over it, i.e. how much of what gRPC can do on this machine the Python server reaches.

{paired.ceiling_table(ceilings, "Workload", "calls")}

Noise: ghz and the server share this VM's cores (nproc above) with anything else running; the 1-minute
load average was {load_before:.1f} when this section started and {load_after:.1f} when it ended.
"max/min" is the spread between rounds of one RPC. The per-pair ratio cancels drift slower than a
pair; server CPU µs per call does not depend on how busy the client was, so it is the steadier
measure of what the conversion costs when calls/s is noisy.
"""
    return SectionResult(markdown=markdown, targets=targets)
