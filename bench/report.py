"""What a benchmark section returns, plus the markdown helpers and environment facts all sections share."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata


@dataclass(frozen=True)
class Target:
    """One pass/fail goal from an issue, checked against the figures measured in the same run."""

    name: str
    passed: bool
    summary: str


@dataclass(frozen=True)
class SectionResult:
    """A section's markdown (starting with its ``##`` heading) and the targets it checked."""

    markdown: str
    targets: tuple[Target, ...]


Section = Callable[[], SectionResult]


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> str:
    """A GitHub markdown table; columns whose index is in ``right`` are right-aligned (numbers)."""
    rule = ["---:" if index in right else "---" for index in range(len(header))]
    lines = [header, rule, *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_head() -> str:
    """The commit measured (read-only query); uncommitted edits are not reflected."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip()


def environment() -> list[tuple[str, str]]:
    """Versions and machine facts that decide how comparable two BENCHMARKS.md files are."""
    from google.protobuf.internal import api_implementation

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("protobuf", f"{metadata.version('protobuf')} ({api_implementation.Type()} backend)"),
        ("grpcio", metadata.version("grpcio")),
        ("orjson", metadata.version("orjson")),
        ("nproc", f"{usable} (of {os.cpu_count()} online)"),
        ("CPU", _cpu_model()),
        ("OS", platform.platform()),
        ("Git HEAD", _git_head()),
    ]


def median_optional(values: list[float | None]) -> float | None:
    """The median, or None if any value is missing (no ``/proc`` to read CPU time from)."""
    return None if None in values else statistics.median(v for v in values if v is not None)


def rate(value: float) -> str:
    return f"{value:,.0f}"


def optional(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)
