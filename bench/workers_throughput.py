"""Section "workers": what ``serve --workers 2`` and uvloop buy, on ``ToACP`` calls driven by ghz.

The issue's target: ``e2a-grpc serve --workers 2`` answers at least 1.3x the ``ToACP`` calls/s of one
worker on this 2-core machine (a ``grpc.aio`` server is bound to one core by the GIL). Also measured:
uvloop against asyncio's own loop, one worker each, to decide whether ``make serve`` installs it.

Each server is a real ``e2a-grpc serve`` process (``python -m e2a_grpc serve``), started once; the
rounds alternate between them. The load comes from Go (bench/goload.py): bench/go's ``streamload``
in unary mode, a lean grpc-go client, for the target; ghz too, for comparison. On two cores the
client's own CPU comes out of what the second worker could use, and ghz spends about twice a lean
client's CPU per call (it builds dynamic messages and keeps every call's result). So the section also
says what the machine allows at one worker's CPU per call, and measures ``--pin-workers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import statistics
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench import goload, paired
from bench.codec_roundtrip import multimodal_prompt
from bench.report import SectionResult, Target, table
from e2a.v1 import conversion_service_pb2 as pb
from e2a_grpc import E2AEnvelope
from tests.support.processes import free_port, logged_process, wait_serving

IN_FLIGHT = 64
#: ghz's connections: the kernel spreads connections, not calls, over the workers (SO_REUSEPORT).
CONNECTIONS = 16
PAIRS = 10
ROUND_SECONDS = 1.5
WARMUP_SECONDS = 1.0
TARGET_RATIO = 1.3
TOACP_GHZ = "e2a.v1.ConversionService.ToACP"
TOACP_PATH = "/e2a.v1.ConversionService/ToACP"


class Client(enum.Enum):
    """The load generator of a comparison."""

    GO = "Go client (streamload)"
    GHZ = "ghz"


@dataclass(frozen=True)
class Server:
    address: str
    pid: int

    def pids(self) -> list[int]:
        """The server's processes: the parent and its workers (with one worker, the parent serves)."""
        with open(f"/proc/{self.pid}/task/{self.pid}/children", encoding="ascii") as children:
            return [self.pid, *(int(child) for child in children.read().split())]


@contextlib.contextmanager
def _serve(*args: str) -> Iterator[Server]:
    port = free_port()
    command = [sys.executable, "-m", "e2a_grpc", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    with logged_process(command) as (process, output):
        address = f"127.0.0.1:{port}"
        wait_serving(address, process, output)
        yield Server(address, process.pid)


def _round(server: Server, request: Path, connections: int, seconds: float, client: Client) -> paired.Round:
    clock = paired.RoundClock(server.pids())
    if client is Client.GHZ:
        load = goload.ghz(server.address, TOACP_GHZ, request, IN_FLIGHT, seconds, connections=connections)
    else:
        load = goload.streamload(
            server.address,
            TOACP_PATH,
            request,
            mode=goload.Mode.UNARY,
            streams=IN_FLIGHT,
            seconds=seconds,
            connections=connections,
        )
    return clock.stop(load.counted, load.done, load.seconds, load.client_cpu_seconds)


def _compare(
    name: str,
    subject: tuple[str, Server],
    baseline: tuple[str, Server],
    request: Path,
    connections: int,
    client: Client,
) -> paired.Paired:
    servers = dict([subject, baseline])
    for server in servers.values():
        _round(server, request, connections, WARMUP_SECONDS, client)

    async def run_round(label: str) -> paired.Round:
        return _round(servers[label], request, connections, ROUND_SECONDS, client)

    return asyncio.run(paired.alternate(name, (subject[0], baseline[0]), (subject[0], baseline[0]), PAIRS, run_round))


def _cores_bound(result: paired.Paired, cores: int) -> tuple[float, float] | None:
    """(cores busy, server and client, median over the baseline's rounds; the most times the
    baseline's calls/s that ``cores`` allow at its CPU per call), or None without the server's CPU.

    More workers can only beat that bound if a call costs less CPU with them than with one.
    """
    busy = [
        one.server_cores + one.client_cores for one in result.rounds[result.baseline] if one.server_cores is not None
    ]
    if len(busy) != len(result.rounds[result.baseline]):
        return None
    median_busy = statistics.median(busy)
    return median_busy, cores / median_busy


def _bound_text(result: paired.Paired, cores: int) -> str:
    bound = _cores_bound(result, cores)
    if bound is None:
        return "(the server's CPU could not be read, so no bound)"
    busy, most = bound
    return f"one worker and its client kept {busy:.2f} cores busy: at most **{most:.2f}x** one worker's calls/s"


def run() -> SectionResult:
    goload.ensure_tools()
    cores = len(os.sched_getaffinity(0))
    load_before = os.getloadavg()[0]
    request = pb.ToACPRequest(envelope=E2AEnvelope.from_dict(multimodal_prompt()).to_proto())
    with (
        tempfile.TemporaryDirectory(prefix="e2a-bench-") as scratch,
        _serve("--workers", "1", "--event-loop", "asyncio") as one,
        _serve("--workers", "2", "--event-loop", "asyncio") as two,
        _serve("--workers", "2", "--pin-workers", "--event-loop", "asyncio") as pinned,
        _serve("--workers", "1", "--event-loop", "uvloop") as uvloop,
    ):
        path = goload.request_file(Path(scratch), "toacp", request.SerializeToString())
        workers = _compare(
            f"ToACP, {CONNECTIONS} connections, {Client.GO.value}",
            ("2 workers", two),
            ("1 worker", one),
            path,
            CONNECTIONS,
            Client.GO,
        )
        workers_pinned = _compare(
            f"ToACP, {CONNECTIONS} connections, {Client.GO.value}, --pin-workers",
            ("2 workers pinned", pinned),
            ("1 worker", one),
            path,
            CONNECTIONS,
            Client.GO,
        )
        workers_ghz = _compare(
            f"ToACP, {CONNECTIONS} connections, {Client.GHZ.value}",
            ("2 workers", two),
            ("1 worker", one),
            path,
            CONNECTIONS,
            Client.GHZ,
        )
        loops = _compare(
            f"ToACP, 1 connection, 1 worker, {Client.GO.value}",
            ("uvloop", uvloop),
            ("asyncio", one),
            path,
            1,
            Client.GO,
        )
    load_after = os.getloadavg()[0]
    uvloop_wins = loops.median_ratio > 1.0
    targets = (
        workers.target("workers", "calls", TARGET_RATIO),
        Target(
            name="workers bound of this machine (informational)",
            passed=True,
            summary=_bound_text(workers, cores),
        ),
        Target(
            name="workers pinned (informational)",
            passed=True,
            summary=f"2 workers pinned/1 worker {workers_pinned.median_ratio:.2f} (per pair "
            f"{min(workers_pinned.ratios):.2f}-{max(workers_pinned.ratios):.2f})",
        ),
        Target(
            name="workers with ghz (informational)",
            passed=True,
            summary=f"2 workers/1 worker {workers_ghz.median_ratio:.2f} (per pair {min(workers_ghz.ratios):.2f}-"
            f"{max(workers_ghz.ratios):.2f})",
        ),
        Target(
            name="workers uvloop (informational)",
            passed=True,
            summary=f"uvloop/asyncio {loops.median_ratio:.2f} (per pair {min(loops.ratios):.2f}-"
            f"{max(loops.ratios):.2f}); {'wins' if uvloop_wins else 'does not win'}",
        ),
    )
    loop_rows = [
        [
            loops.name,
            f"{loops.median_ratio:.2f}",
            f"{min(loops.ratios):.2f} - {max(loops.ratios):.2f}",
            "yes" if uvloop_wins else "no",
        ]
    ]
    markdown = f"""## serve --workers and uvloop

Target: `e2a-grpc serve --workers 2` answers at least {TARGET_RATIO}x the `ToACP` calls/s of
`--workers 1` on this machine ({cores} usable cores), measured in the same
run. Also: uvloop (`--event-loop uvloop`) against asyncio's loop, one worker each.

Method: four `python -m e2a_grpc serve` processes, started once (`--workers 1 --event-loop asyncio`,
`--workers 2 --event-loop asyncio`, the same with `--pin-workers`, `--workers 1 --event-loop uvloop`);
idle ones cost nothing. The
load is the codec section's multimodal `session/prompt` as a `ToACPRequest`, {IN_FLIGHT} calls in flight,
sent by bench/go's `streamload -mode unary` (grpc-go, the request pre-serialized, replies kept as
bytes): the target's client. On two cores the client's CPU comes out of what the second worker
could use, so the comparison is run again with ghz {goload.ghz_version()}, which spends about twice as
much CPU per call ("client cores busy" below), for comparison. Workers: over {CONNECTIONS} connections
for both servers (SO_REUSEPORT spreads connections, not calls, over the workers; one connection would
reach one worker). uvloop: one connection. {PAIRS} pairs of {ROUND_SECONDS} s rounds after a
{WARMUP_SECONDS:.0f} s warm-up each, order alternating per pair. Server CPU adds up the server's processes
(parent and workers).

{paired.target_table([workers], "Workload", "calls", ".0f", TARGET_RATIO)}

What the machine allows: at one worker's CPU per call (its server's and its client's, which share the
cores), however many workers share the {cores} cores. With the Go client,
{_bound_text(workers, cores)}; with ghz, {_bound_text(workers_ghz, cores)}.

For comparison (the Target column applies to the row above): two workers each pinned to a CPU of
its own (`--pin-workers`):

{paired.target_table([workers_pinned], "Workload", "calls", ".0f", TARGET_RATIO)}

And the unpinned workers driven by ghz:

{paired.target_table([workers_ghz], "Workload", "calls", ".0f", TARGET_RATIO)}

{table(["Workload", "uvloop/asyncio (median)", "per pair, min - max", "uvloop wins"], loop_rows, right=(1, 2))}

Per server:

{paired.rpcs_table([workers, workers_pinned, workers_ghz, loops], "Workload", "calls", ".0f")}

Noise: the clients and the servers share this VM's cores with anything else running; the 1-minute load
average was {load_before:.1f} when this section started and {load_after:.1f} when it ended. With two
cores, the client itself takes a share of the cores the two workers would use.
"""
    return SectionResult(markdown=markdown, targets=targets)
