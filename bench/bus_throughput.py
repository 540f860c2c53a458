"""Section "bus": Chat through the agent bus (a gateway routing to an agent worker over NATS) vs Chat direct.

Issue 28's targets: the bus adds at most 2 ms to the first frame's latency (p50) and keeps at least 0.7x
of direct Chat's frames/s at 8 concurrent streams, echo backend, measured in the same run.

Processes, all started here on loopback: a nats-server (JetStream, file storage in a temporary directory);
the direct server, ``e2a-grpc serve`` on the echo backend; the gateway, ``e2a-grpc serve --agent
echo=nats --bus-nats URL``; its worker, ``e2a-grpc agent --nats URL --agent-id echo --backend echo``;
and the floor of a Python gateway, ``bench.bus_relay_floor`` (the bus's transport work and no E2A work)
on the same worker. Each e2a-grpc process runs one worker process (``--workers 1``: the process
measured is the one that serves). Two sets of rounds, each running the three paths back to back in
an order that turns per round (``bench.paired`` pairs each path's rounds with direct's): throughput
(``STREAMS`` Chat streams at once, ``WORDS`` words each) and first-frame latency (``LATENCY_CALLS``
one-word Chat calls one after the other, the time from sending the call to its first frame).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import grpc

from bench import paired
from bench.report import SectionResult, Target, table
from bench.serverproc import cpu_seconds, wait_serving
from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope
from tests.support.nats_server import running_nats_server
from tests.support.processes import free_port, logged_process

AGENT_ID = "echo"
STREAMS = 8
WORDS = 250
PAIRS = 5
LATENCY_CALLS = 100
TARGET_RATIO = 0.7
TARGET_ADDED_P50_MS = 2.0
CHAT_METHOD = "/e2a.v1.AgentService/Chat"
DIRECT = "Chat direct (echo backend)"
BUS = "Chat through the bus (gateway + worker)"
FLOOR = "Bare relay on the bus (no E2A work) + worker"
PATHS = (DIRECT, BUS, FLOOR)
#: The bus path's two processes, and the bare relay's.
GATEWAY = "gateway"
WORKER = "worker"
RELAY = "relay"
#: A round slower than this means something is stuck: fail the section rather than hang ``make bench``.
_CALL_TIMEOUT_SECONDS = 120.0


def _request(request_id: str, words: int) -> bytes:
    text = " ".join(f"word{n}" for n in range(words))
    envelope = E2AEnvelope(method="chat.send", request_id=request_id, is_stream=True, params={"text": text})
    return pb.ChatRequest(envelope=envelope.to_proto()).SerializeToString()


def _percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


@dataclass
class _Path:
    """One way to Chat: its channel, the processes that serve it (their CPU is the path's), and what its
    rounds measured beyond ``paired.Round``."""

    channel: grpc.aio.Channel
    pids: dict[str, int]
    #: CPU µs per frame of each process, per throughput round.
    cpu_us_per_frame: dict[str, list[float]] = field(default_factory=dict)
    #: Every first-frame latency of the latency rounds, in ms.
    first_frame_ms: list[float] = field(default_factory=list)

    def cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(pid) or 0.0 for name, pid in self.pids.items()}


class _Bench:
    def __init__(self, paths: dict[str, _Path]) -> None:
        self._paths = paths
        self._calls = 0

    def _request_id(self) -> str:
        self._calls += 1
        return f"bench-bus-{self._calls}"

    async def _stream(self, path: _Path, words: int) -> tuple[int, float]:
        """One Chat call: its frames (counted, not parsed) and when its first frame came (perf_counter)."""
        call: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = path.channel.unary_stream(CHAT_METHOD)
        frames, first = 0, 0.0
        async for _ in call(_request(self._request_id(), words), timeout=_CALL_TIMEOUT_SECONDS):
            if frames == 0:
                first = time.perf_counter()
            frames += 1
        return frames, first

    async def throughput_round(self, name: str) -> paired.Round:
        path = self._paths[name]
        before = path.cpu()
        clock = paired.RoundClock(list(path.pids.values()))
        results = await asyncio.gather(*(self._stream(path, WORDS) for _ in range(STREAMS)))
        seconds = time.perf_counter() - clock.start
        frames = sum(count for count, _ in results)
        if frames != STREAMS * (WORDS + 1):
            raise RuntimeError(f"{name}: {frames} frames, not {STREAMS * (WORDS + 1)}")
        after = path.cpu()
        for process, spent in after.items():
            path.cpu_us_per_frame.setdefault(process, []).append((spent - before[process]) / frames * 1e6)
        return clock.stop(frames, frames, seconds)

    async def latency_round(self, name: str) -> paired.Round:
        path = self._paths[name]
        clock = paired.RoundClock(list(path.pids.values()))
        for _ in range(LATENCY_CALLS):
            sent = time.perf_counter()
            _, first = await self._stream(path, 1)
            path.first_frame_ms.append((first - sent) * 1e3)
        return clock.stop(LATENCY_CALLS, LATENCY_CALLS, time.perf_counter() - clock.start)


@dataclass(frozen=True)
class _Measured:
    throughput: paired.Paired
    latency: paired.Paired
    #: The bare relay's throughput rounds, paired with direct's.
    floor_throughput: paired.Paired
    paths: dict[str, _Path]


async def _alternate(
    name: str, run_round: Callable[[str], Awaitable[paired.Round]]
) -> tuple[paired.Paired, paired.Paired]:
    """``PAIRS`` rounds of each path, the three back to back in an order that turns each time; the bus's
    and the bare relay's paired with direct's run next to them."""
    rounds: dict[str, list[paired.Round]] = {path: [] for path in PATHS}
    for index in range(PAIRS):
        for path in PATHS[index % 3 :] + PATHS[: index % 3]:
            rounds[path].append(await run_round(path))
    return (
        paired.Paired(name, BUS, DIRECT, ("bus", "direct"), {BUS: rounds[BUS], DIRECT: rounds[DIRECT]}),
        paired.Paired(name, FLOOR, DIRECT, ("relay", "direct"), {FLOOR: rounds[FLOOR], DIRECT: rounds[DIRECT]}),
    )


@dataclass(frozen=True)
class _Process:
    """A started e2a-grpc process: where its gRPC health answers, and what ``wait_serving`` needs."""

    health_address: str
    process: subprocess.Popen[bytes]
    log: IO[bytes]


async def _measure(addresses: dict[str, str], processes: dict[str, _Process]) -> _Measured:
    for started in processes.values():  # the worker too: the gateway routes only to a registered worker
        async with grpc.aio.insecure_channel(started.health_address) as health:
            await wait_serving(health, started.process, started.log)
    channels = {name: grpc.aio.insecure_channel(address) for name, address in addresses.items()}
    try:
        paths = {
            DIRECT: _Path(channels[DIRECT], {"server": processes[DIRECT].process.pid}),
            BUS: _Path(
                channels[BUS],
                {GATEWAY: processes[GATEWAY].process.pid, WORKER: processes[WORKER].process.pid},
            ),
            FLOOR: _Path(
                channels[FLOOR],
                {RELAY: processes[RELAY].process.pid, WORKER: processes[WORKER].process.pid},
            ),
        }
        bench = _Bench(paths)
        for name in PATHS:  # warm-up (the gateway's first bus turn connects and reads the registry)
            await bench.throughput_round(name)
            await bench.latency_round(name)
            paths[name].cpu_us_per_frame.clear()
            paths[name].first_frame_ms.clear()
        throughput, floor_throughput = await _alternate(
            f"{STREAMS} streams at once, {WORDS + 1} frames each", bench.throughput_round
        )
        latency, _ = await _alternate(f"{LATENCY_CALLS} one-word calls one after the other", bench.latency_round)
        return _Measured(throughput, latency, floor_throughput, paths)
    finally:
        for channel in channels.values():
            await channel.close()


def run() -> SectionResult:
    with (
        tempfile.TemporaryDirectory(prefix="e2a-bench-bus-") as store,
        running_nats_server(Path(store)) as broker,
    ):
        ports = {DIRECT: free_port(), GATEWAY: free_port(), WORKER: free_port(), RELAY: free_port()}
        python = [sys.executable, "-m", "e2a_grpc"]
        serve = [*python, "serve", "--workers", "1", "--host", "127.0.0.1", "--port"]
        commands = {
            DIRECT: [*serve, str(ports[DIRECT])],
            GATEWAY: [*serve, str(ports[GATEWAY]), "--agent", f"{AGENT_ID}=nats", "--bus-nats", broker.url],
            WORKER: [
                *(*python, "agent", "--nats", broker.url, "--agent-id", AGENT_ID, "--backend", "echo"),
                *("--host", "127.0.0.1", "--health-port", str(ports[WORKER])),
            ],
            RELAY: [
                *(sys.executable, "-m", "bench.bus_relay_floor", "--port", str(ports[RELAY])),
                *("--nats", broker.url, "--agent-id", AGENT_ID),
            ],
        }
        with contextlib.ExitStack() as stack:
            processes = {
                name: _Process(f"127.0.0.1:{ports[name]}", *stack.enter_context(logged_process(command)))
                for name, command in commands.items()
            }
            addresses = {
                DIRECT: processes[DIRECT].health_address,
                BUS: processes[GATEWAY].health_address,
                FLOOR: processes[RELAY].health_address,
            }
            measured = asyncio.run(_measure(addresses, processes))
    return _report(measured)


def _min_median_max(values: list[float], spec: str) -> str:
    return " / ".join(format(value, spec) for value in (min(values), statistics.median(values), max(values)))


def _report(measured: _Measured) -> SectionResult:
    throughput, latency, paths = measured.throughput, measured.latency, measured.paths
    p50 = {name: statistics.median(path.first_frame_ms) for name, path in paths.items()}
    p99 = {name: _percentile(path.first_frame_ms, 0.99) for name, path in paths.items()}
    added_p50 = p50[BUS] - p50[DIRECT]
    ratios = {DIRECT: 1.0, BUS: throughput.median_ratio, FLOOR: measured.floor_throughput.median_ratio}
    rates = {
        DIRECT: throughput.rates(DIRECT),
        BUS: throughput.rates(BUS),
        FLOOR: measured.floor_throughput.rates(FLOOR),
    }
    rate_rows = [[name, _min_median_max(rates[name], ",.0f"), f"{ratios[name]:.2f}"] for name in PATHS]
    latency_rows = [
        [
            name,
            f"{p50[name]:.2f}",
            f"{p99[name]:.2f}",
            f"{min(paths[name].first_frame_ms):.2f}",
            f"{len(paths[name].first_frame_ms)}",
        ]
        for name in PATHS
    ]
    cpu = {
        name: {process: statistics.median(rounds) for process, rounds in paths[name].cpu_us_per_frame.items()}
        for name in PATHS
    }
    cpu_rows = [
        [name, process, _min_median_max(per_round, ".1f")]
        for name in PATHS
        for process, per_round in paths[name].cpu_us_per_frame.items()
    ]
    targets = (
        throughput.target("bus", "frames", TARGET_RATIO),
        Target(
            name="bus first-frame latency",
            passed=added_p50 <= TARGET_ADDED_P50_MS,
            summary=(
                f"p50 {p50[BUS]:.2f} ms through the bus vs {p50[DIRECT]:.2f} ms direct: +{added_p50:.2f} ms "
                f"(target <= +{TARGET_ADDED_P50_MS:g} ms); p99 {p99[BUS]:.2f} vs {p99[DIRECT]:.2f} ms"
            ),
        ),
    )
    markdown = f"""## Chat through the agent bus vs Chat direct

Issue 28's targets: the bus adds at most {TARGET_ADDED_P50_MS:g} ms to the first frame (p50) and keeps at
least {TARGET_RATIO}x of direct frames/s at {STREAMS} streams. Echo backend on both paths. Direct: one
`e2a-grpc serve`. Bus: a gateway `e2a-grpc serve --agent {AGENT_ID}=nats --bus-nats URL` and one worker
`e2a-grpc agent --backend echo` on a nats-server (JetStream, file storage, single node) started by the
section on loopback; the worker publishes the frames to JetStream and the gateway reads them as they are
published (a plain subscription) and writes them to the client. Every e2a-grpc process serves in one process
(`--workers 1`). After one warm-up round of each kind per path, {PAIRS} rounds of each kind per path, the
three run back to back in an order that turns each time.

The third path is the floor of any Python gateway on the bus: `bench/bus_relay_floor.py`, on the same
worker, does the bus's transport work (the request published as the gateway does, the frames read on a
plain subscription with nats-py, each written to the call with grpc.aio) and no E2A work (no frame
decoded, checked or rebuilt; their wire JSON is written as it came).

Throughput: a round runs {STREAMS} Chat streams of {WORDS} words ({WORDS + 1} frames each) at once on one
channel; frames are counted, not parsed.

{table(["Path", "frames/s min / median / max", "vs direct (median of pair ratios)"], rate_rows, right=(1, 2))}

First-frame latency: a round runs {LATENCY_CALLS} one-word Chat calls one after the other; the latency is
from sending the call to receiving its first frame, over every call of the {PAIRS} rounds.

{table(["Path", "p50 ms", "p99 ms", "min ms", "calls"], latency_rows, right=(1, 2, 3, 4))}

CPU per frame of each process in the throughput rounds (`/proc`, user + system, all threads), µs,
min / median / max over rounds:

{table(["Path", "Process", "CPU µs/frame"], cpu_rows, right=(2,))}

Where the time goes (medians of this run). Throughput: the bare relay alone keeps
{ratios[FLOOR]:.2f}x of direct at {cpu[FLOOR][RELAY]:.0f} µs/frame, against the direct server's
{cpu[DIRECT]["server"]:.0f} µs for the whole turn: nats-py's reading of each frame's message (its
binary-mode CloudEvent headers are parsed in Python) and grpc.aio's write of each frame as it comes
are the floor, before any E2A work. The gateway's E2A work (the frame read and checked with the section
12 invariants, its own frame built, the turn's limits) adds {cpu[BUS][GATEWAY] - cpu[FLOOR][RELAY]:.0f} µs/frame to
it. Latency: the bus adds two NATS hops (the request through JetStream to the worker, the first frame
back) and two processes' wake-ups to the direct path; the bare relay adds
{p50[FLOOR] - p50[DIRECT]:.2f} ms to direct's p50 with no E2A work on the gateway side, the gateway
{added_p50:.2f} ms.

Per round kind (bus and direct):

{paired.rpcs_table([throughput, latency], "Workload", "items", ".1f")}

The nats-server's own CPU is in neither figure; everything shares this VM's cores (nproc above).
"""
    return SectionResult(markdown=markdown, targets=targets)
