"""Go load generators and the grpc-go ceiling server, for the sections that time gRPC servers.

A Python client reads at most about 12k messages/s on this kind of machine and shares its cores with
the server, so it hides the server's own cost. Here the load comes from Go: ghz (pinned in the
Makefile, installed by ``make bench-tools`` into ``.bin/``) for unary calls, and bench/go's
``streamload`` for streams, whose messages ghz does not count. Both send pre-serialized requests and
keep replies unparsed. ``ceiling`` (bench/go) is a grpc-go server of the same bench-only echo and
bare-stream RPCs as the Python bench servers: the transport's ceiling on this machine.

``make bench`` builds them first; ``ensure_tools`` runs the same make target, so ``python -m bench.run
--only SECTION`` works from a fresh clone too (Go and the module proxy are needed once).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import json
import os
import re
import resource
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import REPO_ROOT, free_port, logged_process, wait_serving

#: Where ``make bench-tools`` puts what it builds (the Makefile's GHZ, BENCH_PROTOSET and bench/go output).
_MAKEFILE = REPO_ROOT / "Makefile"
PROTOSET = REPO_ROOT / ".bench" / "e2a-bench.protoset"
CEILING = REPO_ROOT / ".bin" / "bench" / "ceiling"
STREAMLOAD = REPO_ROOT / ".bin" / "bench" / "streamload"

#: Longest a single call or stream may take before the load generator counts it failed.
_CALL_TIMEOUT = "30s"
#: ghz ends a timed run by cancelling the calls still in flight: those end with these codes.
_CUT_OFF_AT_THE_END = {"Canceled", "Unavailable", "DeadlineExceeded"}


def ghz_version() -> str:
    """The Makefile's pinned ``GHZ_VERSION`` (its one home)."""
    found = re.search(r"^GHZ_VERSION := (\S+)$", _MAKEFILE.read_text(encoding="utf-8"), re.MULTILINE)
    if found is None:
        raise RuntimeError("the Makefile names no GHZ_VERSION")
    return found.group(1)


def ghz_path() -> Path:
    return REPO_ROOT / ".bin" / f"ghz-{ghz_version()}" / "ghz"


def ensure_tools() -> None:
    """Build ghz, the Go bench commands and the protoset if they are missing or stale."""
    subprocess.run(["make", "--no-print-directory", "-s", "bench-tools"], cwd=REPO_ROOT, check=True, timeout=900)


@dataclass(frozen=True)
class Load:
    """What one timed run of a load generator did: replies counted within ``seconds``, all replies
    (``done``, for per-item server CPU), and the load generator's own CPU seconds."""

    counted: int
    done: int
    seconds: float
    client_cpu_seconds: float


def _run(command: list[str], seconds: float, cpu: int | None = None) -> str:
    """The command's stdout (run on ``cpu`` alone if given); its stderr in the error if it fails."""
    pin = None if cpu is None else functools.partial(os.sched_setaffinity, 0, {cpu})
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=seconds + 60, preexec_fn=pin)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"{Path(command[0]).name} failed ({exc.returncode}): {exc.stderr.strip()}") from None
    return done.stdout


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ghz(address: str, method: str, request: Path, concurrency: int, seconds: float, connections: int = 1) -> Load:
    """Unary calls of ``method`` ("package.Service.Method") with ``concurrency`` in flight for ``seconds``."""
    cpu_before = _children_cpu_seconds()
    # ghz is the only child that ends during the run, so the children's CPU time grows by its own.
    output = _run(
        [
            str(ghz_path()),
            "--insecure",
            f"--protoset={PROTOSET}",
            f"--call={method}",
            "--binary",
            f"--binary-file={request}",
            f"--concurrency={concurrency}",
            f"--connections={connections}",
            f"--duration={seconds}s",
            f"--timeout={_CALL_TIMEOUT}",
            "--format=json",
            address,
        ],
        seconds,
    )
    client_cpu = _children_cpu_seconds() - cpu_before
    report = json.loads(output)
    codes: dict[str, int] = report.get("statusCodeDistribution") or {}
    failed = {code: count for code, count in codes.items() if code != "OK" and code not in _CUT_OFF_AT_THE_END}
    cut_off = sum(count for code, count in codes.items() if code in _CUT_OFF_AT_THE_END)
    # At most a call per worker in flight at the end, and one each may start as the connection closes.
    if failed or cut_off > 2 * concurrency or not codes.get("OK"):
        raise RuntimeError(f"ghz {method}: {codes} {report.get('errorDistribution')}")
    return Load(
        counted=codes["OK"], done=int(report["count"]), seconds=report["total"] / 1e9, client_cpu_seconds=client_cpu
    )


class Mode(enum.Enum):
    """How ``streamload`` calls the method."""

    UNARY = "unary"
    SERVER_STREAMS = "server"
    BIDI = "bidi"


def streamload(
    address: str,
    method: str,
    request: Path,
    *,
    mode: Mode,
    streams: int,
    seconds: float,
    window: int = 1,
    connections: int = 1,
    cpu: int | None = None,
) -> Load:
    """Calls of ``method`` ("/package.Service/Method"): ``streams`` in flight for ``seconds``; each
    unary call is followed by the next, each server stream sends the request once and reads the
    frames, each bidi stream keeps ``window`` requests unanswered. ``cpu``: the one CPU the client
    runs on (default: any)."""
    output = _run(
        [
            str(STREAMLOAD),
            f"-address={address}",
            f"-method={method}",
            f"-mode={mode.value}",
            f"-request={request}",
            f"-streams={streams}",
            f"-window={window}",
            f"-connections={connections}",
            f"-duration={seconds}s",
        ],
        seconds,
        cpu,
    )
    report = json.loads(output)
    return Load(
        counted=int(report["items"]),
        done=int(report["items"]),
        seconds=float(report["seconds"]),
        client_cpu_seconds=float(report["cpu_seconds"]),
    )


@contextlib.contextmanager
def ceiling_server(frames: list[bytes] | None = None) -> Iterator[tuple[str, int]]:
    """The grpc-go ceiling server on a free loopback port, its bare stream writing ``frames``
    (serialized ``ChatResponse`` messages); yields its address and process id."""
    with tempfile.TemporaryDirectory(prefix="e2a-bench-") as scratch:
        frames_file = Path(scratch) / "frames"
        with frames_file.open("wb") as out:
            for frame in frames or []:
                out.write(len(frame).to_bytes(4, "big"))
                out.write(frame)
        port = free_port()
        command = [str(CEILING), f"-port={port}", f"-frames={frames_file}"]
        with logged_process(command) as (process, output):
            address = f"127.0.0.1:{port}"
            wait_serving(address, process, output)
            yield address, process.pid


def request_file(directory: Path, name: str, data: bytes) -> Path:
    """``data`` (a serialized request) in a file the load generators read."""
    path = directory / name
    path.write_bytes(data)
    return path
