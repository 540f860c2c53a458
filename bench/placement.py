"""Where the chat section's one-stream rounds run: every thread of the server on one CPU, the client on
another.

With one stream in flight, each frame waits for a hand-off from gRPC's completion-queue thread to the
event loop's thread. On this 2-CPU VM a Python server writes ~23k frames/s when the scheduler puts the
two on one CPU and ~14k when it puts them on two, and the placement changes from round to round (and
within one): unpinned, the rounds of one RPC spread 2x and the ratios within a pair range 0.4-2.3, so
ten pairs decide little. Pinned, both RPCs of a pair run in the same placement and their rounds agree
within a few per cent. Several streams keep every thread busy, so those rounds are not pinned.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def cpu_pair() -> tuple[int, int] | None:
    """A CPU for the server and another for the client, or None on a machine with one."""
    allowed = sorted(os.sched_getaffinity(0))
    return (allowed[0], allowed[1]) if len(allowed) >= 2 else None


def _pin_threads(pid: int, cpus: set[int]) -> None:
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task.name), cpus)


@contextlib.contextmanager
def server_on(pid: int, cpu: int) -> Iterator[None]:
    """Every thread of process ``pid`` on ``cpu`` while the block runs (threads it starts meanwhile
    inherit it), then back on the CPUs its main thread had."""
    before = os.sched_getaffinity(pid)
    _pin_threads(pid, {cpu})
    try:
        yield
    finally:
        _pin_threads(pid, before)
