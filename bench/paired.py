"""Paired throughput rounds, shared by the "toacp" and "chat" sections.

Each section times a subject RPC (``ToACP``, ``Chat``) against a baseline RPC on the same server
(an echo, a bare stream) in rounds run back to back, the order alternating per pair, and judges the
median over pairs of the ratio within a pair: robust to drift slower than a pair, which a ratio of
medians is not. A round counts items (calls, frames) and the server's and client's CPU time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bench.report import Target, median_optional, optional, rate, table
from bench.serverproc import cpu_seconds


@dataclass(frozen=True)
class Round:
    """One RPC hammered for one round.

    ``server_us_per_item`` is the server's CPU time per item; ``server_cores`` and ``client_cores``
    are each process's CPU seconds per wall second (about 1.0: that process was the bottleneck).
    """

    items_per_s: float
    server_us_per_item: float | None
    server_cores: float | None
    client_cores: float


def _total_cpu_seconds(pids: Sequence[int]) -> float | None:
    spent = [cpu_seconds(pid) for pid in pids]
    return None if None in spent else sum(seconds for seconds in spent if seconds is not None)


class RoundClock:
    """Started when a round starts; ``stop`` turns what the round did into a ``Round``.

    ``server_pid`` may be several processes (a server with worker processes): their CPU adds up.
    """

    def __init__(self, server_pid: int | Sequence[int]) -> None:
        self._server_pids = [server_pid] if isinstance(server_pid, int) else list(server_pid)
        self._server_before = _total_cpu_seconds(self._server_pids)
        self._client_before = time.process_time()
        self.start = time.perf_counter()

    def stop(self, counted: int, done: int, seconds: float, client_cpu_seconds: float | None = None) -> Round:
        """``counted`` items made the round's ``seconds``; ``done`` items were served in all (CPU
        time covers those). ``client_cpu_seconds``: the client's CPU when it is another process (a Go
        load generator); default: this process's.
        """
        wall = time.perf_counter() - self.start
        server_after = _total_cpu_seconds(self._server_pids)
        client = time.process_time() - self._client_before if client_cpu_seconds is None else client_cpu_seconds
        server = None if self._server_before is None or server_after is None else server_after - self._server_before
        return Round(
            items_per_s=counted / seconds,
            server_us_per_item=None if server is None else server / done * 1e6,
            server_cores=None if server is None else server / wall,
            client_cores=client / wall,
        )


@dataclass(frozen=True)
class Paired:
    """One workload's rounds of the subject and the baseline; round ``i`` of each ran back to back.

    ``short`` names subject and baseline in headers and summaries (e.g. "ToACP", "echo").
    """

    name: str
    subject: str
    baseline: str
    short: tuple[str, str]
    rounds: dict[str, list[Round]]

    def rates(self, rpc: str) -> list[float]:
        return [one.items_per_s for one in self.rounds[rpc]]

    @property
    def ratios(self) -> list[float]:
        return [s / b for s, b in zip(self.rates(self.subject), self.rates(self.baseline), strict=True)]

    @property
    def median_ratio(self) -> float:
        """The target figure."""
        return statistics.median(self.ratios)

    def median_server_us(self, rpc: str) -> float | None:
        return median_optional([one.server_us_per_item for one in self.rounds[rpc]])

    def target(self, section: str, unit: str, target_ratio: float) -> Target:
        subject, baseline = self.short
        return Target(
            name=f"{section} {self.name}",
            passed=self.median_ratio >= target_ratio,
            summary=(
                f"{subject} {rate(statistics.median(self.rates(self.subject)))} {unit}/s vs {baseline} "
                f"{rate(statistics.median(self.rates(self.baseline)))} {unit}/s median, "
                f"{subject}/{baseline} {self.median_ratio:.2f} (target >= {target_ratio})"
            ),
        )


async def alternate(
    name: str,
    rpcs: tuple[str, str],
    short: tuple[str, str],
    pairs: int,
    run_round: Callable[[str], Awaitable[Round]],
) -> Paired:
    """``pairs`` pairs of rounds of ``rpcs`` (subject, baseline) back to back, which goes first
    alternating per pair, so that neither always meets the same drift.
    """
    subject, baseline = rpcs
    rounds: dict[str, list[Round]] = {subject: [], baseline: []}
    order = [baseline, subject]
    for pair in range(pairs):
        for rpc in order if pair % 2 == 0 else reversed(order):
            rounds[rpc].append(await run_round(rpc))
    return Paired(name, subject, baseline, short, rounds)


def target_table(results: Sequence[Paired], first_column: str, unit: str, us: str, target_ratio: float | None) -> str:
    """The target figures, a row per workload. ``unit`` is what is counted ("calls", "frames");
    ``us`` is the format of µs figures; ``target_ratio`` None: the same figures for workloads that
    have no target ("-" in the Target column).
    """
    subject, baseline = results[0].short
    per = unit.removesuffix("s")
    rows = []
    for result in results:
        subject_us = result.median_server_us(result.subject)
        baseline_us = result.median_server_us(result.baseline)
        rows.append(
            [
                result.name,
                rate(statistics.median(result.rates(result.subject))),
                rate(statistics.median(result.rates(result.baseline))),
                f"{result.median_ratio:.2f}",
                " ".join(f"{ratio:.2f}" for ratio in result.ratios),
                "n/a" if subject_us is None or baseline_us is None else format(subject_us - baseline_us, us),
                "n/a" if subject_us is None or baseline_us is None else f"{baseline_us / subject_us:.2f}",
                "-" if target_ratio is None else "PASS" if result.median_ratio >= target_ratio else "FAIL",
            ]
        )
    header = [
        first_column,
        f"{subject} {unit}/s (median)",
        f"{baseline} {unit}/s (median)",
        f"{subject}/{baseline} (median)",
        f"{subject}/{baseline} per round pair",
        f"server CPU µs/{per}, {subject} - {baseline}",
        f"{baseline}/{subject} server CPU per {per}",
        "Target",
    ]
    return table(header, rows, right=range(1, 7))


def rpcs_table(
    results: Sequence[Paired],
    first_column: str,
    unit: str,
    us: str,
    extra: Callable[[Paired, str], list[str]] = lambda _result, _rpc: [],
    extra_header: Sequence[str] = (),
) -> str:
    """Each RPC's spread and CPU figures, baseline first; ``extra`` adds columns per row."""
    per = unit.removesuffix("s")
    rows = []
    for result in results:
        for rpc in (result.baseline, result.subject):
            rates, rounds = result.rates(rpc), result.rounds[rpc]
            rows.append(
                [
                    result.name,
                    rpc,
                    rate(statistics.median(rates)),
                    rate(min(rates)),
                    rate(max(rates)),
                    f"{max(rates) / min(rates):.2f}",
                    optional(result.median_server_us(rpc), us),
                    optional(median_optional([one.server_cores for one in rounds]), ".2f"),
                    f"{statistics.median(one.client_cores for one in rounds):.2f}",
                    *extra(result, rpc),
                ]
            )
    header = [
        first_column,
        "RPC",
        f"{unit}/s median",
        "min",
        "max",
        "max/min",
        f"server CPU µs/{per}",
        "server cores busy",
        "client cores busy",
        *extra_header,
    ]
    return table(header, rows, right=range(2, len(header)))


@dataclass(frozen=True)
class Ceiling:
    """Rounds of an RPC on the grpc-go ceiling server, set against the Python figures of a workload."""

    name: str
    rpc: str
    rounds: list[Round]
    #: Label -> median items/s of a Python RPC of the same workload (e.g. the same-stack echo).
    python: dict[str, float]

    @property
    def median(self) -> float:
        return statistics.median(one.items_per_s for one in self.rounds)


def ceiling_table(ceilings: Sequence[Ceiling], first_column: str, unit: str) -> str:
    """The transport's ceiling per workload, and how far each Python figure is from it."""
    labels = list(dict.fromkeys(label for ceiling in ceilings for label in ceiling.python))
    rows = []
    for ceiling in ceilings:
        rates = [one.items_per_s for one in ceiling.rounds]
        rows.append(
            [
                ceiling.name,
                ceiling.rpc,
                rate(ceiling.median),
                f"{rate(min(rates))} - {rate(max(rates))}",
                optional(median_optional([one.server_cores for one in ceiling.rounds]), ".2f"),
                f"{statistics.median(one.client_cores for one in ceiling.rounds):.2f}",
                *(
                    f"{ceiling.python[label] / ceiling.median:.3f}" if label in ceiling.python else "n/a"
                    for label in labels
                ),
            ]
        )
    header = [
        first_column,
        "grpc-go RPC",
        f"{unit}/s median",
        "min - max",
        "Go server cores busy",
        "client cores busy",
        *(f"{label} / grpc-go" for label in labels),
    ]
    return table(header, rows, right=range(2, len(header)))
