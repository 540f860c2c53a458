"""Section "toacp": ``ToACP`` calls/s with 64 calls in flight versus a bare echo RPC on the same server stack.

The issue's target: ToACP throughput is at least 0.9x that of an echo of the same ``ToACPRequest``
measured in the same run, i.e. conversion adds at most 10 % on top of gRPC's own cost.

The server (``bench.grpc_server``: the real ``E2AServer`` plus the echo) runs in its own process, so that
client and server each get a core instead of sharing one event loop.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from typing import IO, Any

import grpc

from bench.codec_roundtrip import SPEC_11_1_EXAMPLE, multimodal_prompt
from bench.grpc_server import ECHO_METHOD
from bench.report import SectionResult, Target, median_optional, optional, rate, table
from bench.serverproc import cpu_seconds, server_process, wait_serving
from e2a_grpc import E2AEnvelope

from e2a.v1 import conversion_service_pb2 as pb  # isort: skip

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


@dataclass(frozen=True)
class Round:
    """One RPC hammered for one round with ``IN_FLIGHT`` calls outstanding.

    ``server_us_per_call`` is the server's CPU time per call; ``server_cores`` and ``client_cores``
    are each process's CPU seconds per wall second (about 1.0: that process was the bottleneck).
    """

    calls_per_s: float
    server_us_per_call: float | None
    server_cores: float | None
    client_cores: float


async def _round(call: grpc.aio.UnaryUnaryMultiCallable, request: bytes, seconds: float, server_pid: int) -> Round:
    """Keep exactly ``IN_FLIGHT`` calls outstanding for ``seconds``; calls/s counts calls done by then.

    Calls still in flight at the deadline finish (for the CPU figures) but are not counted, so the
    counted window never sees fewer than ``IN_FLIGHT`` calls outstanding.
    """
    counted = 0
    done = 0
    server_before, client_before = cpu_seconds(server_pid), time.process_time()
    start = time.perf_counter()
    deadline = start + seconds

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
    wall = time.perf_counter() - start
    server_after, client_after = cpu_seconds(server_pid), time.process_time()
    server = None if server_before is None or server_after is None else server_after - server_before
    return Round(
        calls_per_s=counted / seconds,
        server_us_per_call=None if server is None else server / done * 1e6,
        server_cores=None if server is None else server / wall,
        client_cores=(client_after - client_before) / wall,
    )


@dataclass(frozen=True)
class Measured:
    """A workload's rounds per RPC; round ``i`` of echo and of ToACP ran back to back."""

    workload: str
    request_bytes: int
    reply_bytes: dict[str, int]
    rounds: dict[str, list[Round]]

    def rates(self, rpc: str) -> list[float]:
        return [one.calls_per_s for one in self.rounds[rpc]]

    @property
    def ratios(self) -> list[float]:
        return [toacp / echo for echo, toacp in zip(self.rates(ECHO), self.rates(TOACP), strict=True)]

    @property
    def median_ratio(self) -> float:
        """The target figure: robust to drift over several rounds, which a ratio of medians is not."""
        return statistics.median(self.ratios)

    def median_server_us(self, rpc: str) -> float | None:
        return median_optional([one.server_us_per_call for one in self.rounds[rpc]])


async def _check(channel: grpc.aio.Channel, request: pb.ToACPRequest) -> dict[str, int]:
    """Refuse to time RPCs that do not do their job; returns each RPC's reply size in bytes."""
    data = request.SerializeToString()
    toacp = await channel.unary_unary(TOACP_METHOD)(data, timeout=_CALL_TIMEOUT_SECONDS)
    if pb.ToACPResponse.FromString(toacp).WhichOneof("result") != "jsonrpc":
        raise RuntimeError("ToACP did not return a jsonrpc result")
    echo = await channel.unary_unary(ECHO_METHOD)(data, timeout=_CALL_TIMEOUT_SECONDS)
    # Compared parsed: re-serializing the params Struct's map need not give the same bytes.
    if pb.ToACPRequest.FromString(echo) != request:
        raise RuntimeError("the echo RPC did not return its request")
    return {ECHO: len(echo), TOACP: len(toacp)}


async def _measure_workload(channel: grpc.aio.Channel, server_pid: int, name: str, doc: dict[str, Any]) -> Measured:
    request = pb.ToACPRequest(envelope=E2AEnvelope.from_dict(doc).to_proto())
    reply_bytes = await _check(channel, request)
    data = request.SerializeToString()
    # No serializers: the client sends the same pre-serialized bytes and keeps the reply bytes, so it
    # spends the same (minimal) CPU per call on both RPCs and the comparison is about the server.
    calls = {ECHO: channel.unary_unary(ECHO_METHOD), TOACP: channel.unary_unary(TOACP_METHOD)}
    for call in calls.values():
        await _round(call, data, WARMUP_SECONDS, server_pid)
    rounds: dict[str, list[Round]] = {ECHO: [], TOACP: []}
    order = [ECHO, TOACP]
    for pair in range(PAIRS):
        # Alternate which RPC goes first (E T, T E, ...), so neither always meets the same drift.
        for rpc in order if pair % 2 == 0 else reversed(order):
            rounds[rpc].append(await _round(calls[rpc], data, ROUND_SECONDS, server_pid))
    return Measured(name, len(data), reply_bytes, rounds)


async def _measure(address: str, process: subprocess.Popen[bytes], log: IO[bytes]) -> list[Measured]:
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, process, log)
        return [await _measure_workload(channel, process.pid, name, doc) for name, doc in WORKLOADS.items()]


def _server_us(result: Measured) -> tuple[float, float] | None:
    """Median server CPU µs per call of echo and of ToACP (None where ``/proc`` is missing)."""
    echo, toacp = result.median_server_us(ECHO), result.median_server_us(TOACP)
    return None if echo is None or toacp is None else (echo, toacp)


def _target_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        server_us = _server_us(result)
        rows.append(
            [
                result.workload,
                rate(statistics.median(result.rates(TOACP))),
                rate(statistics.median(result.rates(ECHO))),
                f"{result.median_ratio:.2f}",
                " ".join(f"{ratio:.2f}" for ratio in result.ratios),
                "n/a" if server_us is None else f"{server_us[1] - server_us[0]:.0f}",
                "n/a" if server_us is None else f"{server_us[0] / server_us[1]:.2f}",
                "PASS" if result.median_ratio >= TARGET_RATIO else "FAIL",
            ]
        )
    header = [
        "Workload",
        "ToACP calls/s (median)",
        "echo calls/s (median)",
        "ToACP/echo (median)",
        "ToACP/echo per round pair",
        "server CPU µs/call, ToACP - echo",
        "echo/ToACP server CPU per call",
        "Target",
    ]
    return table(header, rows, right=range(1, 7))


def _rpcs_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        for rpc in (ECHO, TOACP):
            rates, rounds = result.rates(rpc), result.rounds[rpc]
            rows.append(
                [
                    result.workload,
                    rpc,
                    rate(statistics.median(rates)),
                    rate(min(rates)),
                    rate(max(rates)),
                    f"{max(rates) / min(rates):.2f}",
                    optional(result.median_server_us(rpc), ".0f"),
                    optional(median_optional([one.server_cores for one in rounds]), ".2f"),
                    f"{statistics.median(one.client_cores for one in rounds):.2f}",
                    str(result.request_bytes),
                    str(result.reply_bytes[rpc]),
                ]
            )
    header = [
        "Workload",
        "RPC",
        "calls/s median",
        "min",
        "max",
        "max/min",
        "server CPU µs/call",
        "server cores busy",
        "client cores busy",
        "request bytes",
        "reply bytes",
    ]
    return table(header, rows, right=range(2, 11))


def run() -> SectionResult:
    load_before = os.getloadavg()[0]
    with server_process("bench.grpc_server") as (address, process, log):
        results = asyncio.run(_measure(address, process, log))
    load_after = os.getloadavg()[0]
    targets = tuple(
        Target(
            name=f"toacp {result.workload}",
            passed=result.median_ratio >= TARGET_RATIO,
            summary=(
                f"ToACP {rate(statistics.median(result.rates(TOACP)))} calls/s vs echo "
                f"{rate(statistics.median(result.rates(ECHO)))} calls/s median, "
                f"ToACP/echo {result.median_ratio:.2f} (target >= {TARGET_RATIO})"
            ),
        )
        for result in results
    )
    markdown = f"""## ToACP throughput vs gRPC echo

Target: `ToACP` calls/s with {IN_FLIGHT} calls in flight is at least {TARGET_RATIO}x the calls/s of a bare
echo RPC of the same `ToACPRequest` on the same server stack, measured in the same run, i.e. the
conversion adds at most {(1 - TARGET_RATIO) * 100:.0f} % on top of gRPC's own cost. The request is
`ToACPRequest(envelope=E2AEnvelope.from_dict(doc).to_proto())`; the workloads are the codec section's.

Method: `bench/grpc_server.py` runs in its own process: `E2AServer(ServerConfig(host="127.0.0.1", port=N))`
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

{_target_table(results)}

Per RPC:

{_rpcs_table(results)}

Noise: client and server share this VM's cores (nproc above) with anything else running; the 1-minute
load average was {load_before:.1f} when this section started and {load_after:.1f} when it ended.
"max/min" is the spread between rounds of one RPC. The per-pair ratio cancels drift slower than a
pair; server CPU µs per call does not depend on how busy the client was, so it is the steadier
measure of what the conversion costs when calls/s is noisy.
"""
    return SectionResult(markdown=markdown, targets=targets)
