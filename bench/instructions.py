"""Section "instructions": the codec round trips and Chat's work per frame, in CPU instructions.

Wall-time ratios on this shared 2-core VM move by more than the margins some targets ask for (a
Chat run's round pairs ranged from 0.55 to 1.69). Instructions executed do not depend on what else
runs, so this section counts them, with valgrind's callgrind, for the same work the wall-time targets
time: each codec round trip of the "codec" section and its baseline, and Chat's servicer path per
frame against the bare stream's ``write`` of the same frames. Informational: the targets stay the
wall-time ones (an instruction is not a unit of time: interpreted Python runs fewer instructions per
cycle than tight C loops).

Method: a child process (``python -m bench.instructions WORKLOAD N``) warms the workload up, then runs
it N times; callgrind counts the whole process. Run with N and 2N, the difference over N is the
instructions per call, without start-up and warm-up. Counts do not depend on load, so the children
run a core each at a time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable

from bench import codec_roundtrip
from bench.chat_server import chat_request, echo_frames
from bench.report import SectionResult, table
from e2a_grpc.backends.echo import EchoBackend
from e2a_grpc.grpc.chat_servicer import ChatServicer
from e2a_grpc.settings import ServerSettings

#: Calls counted per measurement (the difference between 2N and N of them).
CALLS = 2_000
#: Chat requests per measurement; each is one echo stream of ``chat_server.WORDS`` + 1 frames.
CHAT_STREAMS = 2
WARMUP_CALLS = 200
#: (ours, baseline, what the wall-time target asks of ours / baseline)
CODEC_PAIRS = (
    (codec_roundtrip.RECORD_JSON, codec_roundtrip.JSON, "<= 1.00"),
    (codec_roundtrip.RECORD_BYTES, codec_roundtrip.JSON, "<= 1.00"),
    (codec_roundtrip.RECORD_BYTES, codec_roundtrip.RAW_UPB, "none"),
)
CODEC_HEADER = (
    "Workload",
    "ours",
    "instructions/call",
    "baseline",
    "instructions/call",
    "ours/baseline",
    "wall-time target",
)
_COLLECTED = re.compile(r"Collected : (\d+)")


class _NoClient:
    """A Chat call's context whose client takes every frame at once: the servicer's own work only."""

    async def write(self, frame: bytes) -> None:
        pass


def _chat_servicer() -> ChatServicer:
    return ChatServicer(EchoBackend(), ServerSettings(log_frames=False))


def _bench_frames(servicer: ChatServicer) -> list[bytes]:
    """The frames of the chat section's request, serialized."""
    return [frame.SerializeToString() for frame in asyncio.run(echo_frames(servicer, chat_request()))]


def _chat_loop(bare: bool) -> Callable[[int], None]:
    """``run(n)``: n Chat calls of the bench request through the servicer (or n bare writes of their frames)."""
    servicer = _chat_servicer()
    request = chat_request()
    context = _NoClient()
    frames = _bench_frames(servicer)

    async def calls(n: int) -> None:
        for _ in range(n):
            if bare:
                for frame in frames:
                    await context.write(frame)
            else:
                await servicer.Chat(request, context)  # type: ignore[arg-type]  # only write is used

    return lambda n: asyncio.run(calls(n))


def _codec_loop(workload_index: int, contestant: str) -> Callable[[int], None]:
    workload = codec_roundtrip.workloads()[workload_index]
    call = dict(codec_roundtrip.contestants(workload))[contestant]

    def run(n: int) -> None:
        for _ in range(n):
            call()

    return run


def _loop(name: str) -> Callable[[int], None]:
    kind, _, rest = name.partition(":")
    if kind == "chat":
        return _chat_loop(bare=rest == "bare")
    index, _, contestant = rest.partition(":")
    return _codec_loop(int(index), contestant)


def _instructions(name: str, calls: int) -> int:
    """Instructions a child process running ``name`` ``calls`` times executes in all."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-m",
            __name__,
            name,
            str(calls),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count for {name}: {done.stderr[-500:]}")
    return int(found.group(1))


def per_call(name: str, calls: int) -> float:
    """Instructions per call of ``name``: the runs of ``2 * calls`` and ``calls`` told apart."""
    return (_instructions(name, 2 * calls) - _instructions(name, calls)) / calls


def _measure_all(names: list[str]) -> dict[str, float]:
    """``per_call`` of each name (Chat's per stream), a child per core at a time."""

    def measure(name: str) -> float:
        return per_call(name, CHAT_STREAMS if name.startswith("chat:") else CALLS)

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        return dict(zip(names, pool.map(measure, names), strict=True))


def run() -> SectionResult:
    heading = "## Instructions (callgrind)"
    if shutil.which("valgrind") is None:
        return SectionResult(f"{heading}\n\nSkipped: valgrind is not installed (`apt-get install valgrind`).\n", ())
    codec_names = [
        (f"codec:{index}:{ours}", f"codec:{index}:{baseline}")
        for index in range(len(codec_roundtrip.workloads()))
        for ours, baseline, _ in CODEC_PAIRS
    ]
    codec_paths = dict.fromkeys(name for pair in codec_names for name in pair)  # a path in two pairs, once
    measured = _measure_all([*codec_paths, "chat:servicer", "chat:bare"])
    codec_rows = []
    for index, workload in enumerate(codec_roundtrip.workloads()):
        for ours, baseline, target in CODEC_PAIRS:
            mine = measured[f"codec:{index}:{ours}"]
            theirs = measured[f"codec:{index}:{baseline}"]
            codec_rows.append(
                [
                    workload.name,
                    f"`{ours}`",
                    f"{mine:,.0f}",
                    f"`{baseline}`",
                    f"{theirs:,.0f}",
                    f"{mine / theirs:.2f}",
                    target,
                ]
            )
    frames = len(_bench_frames(_chat_servicer()))
    chat = measured["chat:servicer"] / frames
    bare = measured["chat:bare"] / frames
    chat_rows = [["Chat servicer (echo backend)", f"{chat:,.0f}"], ["bare writes of the same frames", f"{bare:,.0f}"]]
    markdown = f"""{heading}

Informational: the targets are the wall-time ones. Instructions executed do not depend on what else
runs on the machine, so these figures hold still where the wall-time ratios move. They are not
time: interpreted Python runs fewer instructions per cycle than tight C loops. Each figure is the
difference between callgrind's count for a child process running the workload 2N times and one
running it N times, over N, so start-up and warm-up drop out.

Codec section paths, decode -> read -> change one field -> encode ({CALLS:,} and {2 * CALLS:,} calls after
{WARMUP_CALLS} to warm up):

{table(CODEC_HEADER, codec_rows, right=(2, 4, 5))}

Chat, per frame, in process: `ChatServicer.Chat` of the chat section's request ({frames:,} frames) with a
context whose `write` returns at once, against those frames' `write` alone ({CHAT_STREAMS} and
{2 * CHAT_STREAMS} streams). gRPC's own work per frame, the same for both RPCs, is not in either.

{table(["Path", "instructions/frame"], chat_rows, right=(1,))}

Chat's own work: {chat - bare:,.0f} instructions per frame.
"""
    return SectionResult(markdown=markdown, targets=())


def main() -> None:
    name, calls = sys.argv[1], int(sys.argv[2])
    loop = _loop(name)
    loop(1 if name.startswith("chat") else WARMUP_CALLS)
    loop(calls)


if __name__ == "__main__":
    main()
