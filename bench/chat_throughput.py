"""Section "chat": ``Chat`` frames/s on the echo backend versus a bare server-streaming RPC of the same frames.

The issue's target: ``Chat`` streams at least 0.85x the frames/s of a bare server-streaming baseline that
writes the same number of frames of the same sizes, measured in the same run, i.e. E2A's per-frame work
(backend events, ``FrameBuilder``, the servicer's bookkeeping) adds at most 18 % to gRPC's own cost.

The server (``bench.chat_server``: the real ``E2AServer`` plus the bare stream) runs in its own process;
the streams are read by a Go client (bench/go ``streamload``, via bench/goload.py), which does not hide
the server's cost behind its own. A grpc-go server writing the same frames (bench/go ``ceiling``) shows
the transport's ceiling on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import grpc

from bench import goload, paired, placement
from bench.chat_server import BARE_METHOD, CHAT_METHOD, WORDS, chat_request, chat_text
from bench.report import SectionResult
from bench.serverproc import server_process, wait_serving
from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.model.constants import E2A_RESPONSE_KIND_E2A_COMPLETE

CONCURRENT_STREAMS = 8
#: Mode name -> streams kept in flight at once on the one channel.
MODES = {"1 stream at a time": 1, f"{CONCURRENT_STREAMS} concurrent streams": CONCURRENT_STREAMS}
PAIRS = 10
ROUND_SECONDS = 1.5
WARMUP_SECONDS = 0.5
CEILING_ROUNDS = 3
TARGET_RATIO = 0.85

ECHO = "Chat (echo backend)"
BARE = "bare stream"
_RPCS = {ECHO: CHAT_METHOD, BARE: BARE_METHOD}

#: A stream slower than this means the server is stuck: fail the section rather than hang ``make bench``.
_STREAM_TIMEOUT_SECONDS = 30.0


def _round(
    address: str,
    method: str,
    request: Path,
    streams: int,
    seconds: float,
    server_pid: int,
    client_cpu: int | None = None,
) -> paired.Round:
    """``streamload`` keeps ``streams`` streams in flight for ``seconds``; frames/s counts the frames
    received by then. Each stream starts anew as soon as its last one ends; those open at the
    deadline are cancelled (with several streams sharing the server, one stream of ``WORDS`` frames
    can outlast a round). ``client_cpu``: the one CPU the client runs on."""
    clock = paired.RoundClock(server_pid)
    load = goload.streamload(
        address, method, request, mode=goload.Mode.SERVER_STREAMS, streams=streams, seconds=seconds, cpu=client_cpu
    )
    return clock.stop(load.counted, load.done, load.seconds, load.client_cpu_seconds)


@dataclass(frozen=True)
class Stream:
    """What one stream of the request looks like on the wire (same for both RPCs, checked)."""

    frames: int
    payload_bytes: int


async def _check(channel: grpc.aio.Channel, request: bytes) -> tuple[Stream, list[bytes]]:
    """Refuse to time RPCs that do not do their job, or streams that differ in frame count or sizes;
    returns the stream's shape and the bare stream's frames (for the grpc-go ceiling to write)."""
    envelope = E2AEnvelope.from_proto(pb.ChatRequest.FromString(request).envelope)
    sizes: dict[str, list[int]] = {}
    bare_frames: list[bytes] = []
    for rpc, method in _RPCS.items():
        checker = StreamChecker(envelope)
        frames: list[E2AResponse] = []
        sizes[rpc] = []
        call: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(method)  # no deserializer: bytes
        async for data in call(request, timeout=_STREAM_TIMEOUT_SECONDS):
            frame = E2AResponse.from_proto(pb.ChatResponse.FromString(data).response)
            checker.check(frame)  # section 12: request_id, sequence, unique ids, one final frame last
            frames.append(frame)
            sizes[rpc].append(len(data))
            if rpc == BARE:
                bare_frames.append(data)
        final = checker.finish()
        if rpc == ECHO:
            text = "".join(frame.body["delta"] for frame in frames[:-1])
            if text != chat_text() or final.response_kind != E2A_RESPONSE_KIND_E2A_COMPLETE:
                raise RuntimeError("Chat did not echo the request's text word by word and end with e2a.complete")
    if len(sizes[BARE]) != len(sizes[ECHO]):
        raise RuntimeError(f"the bare stream has {len(sizes[BARE])} frames, Chat {len(sizes[ECHO])}")
    if sizes[BARE] != sizes[ECHO]:
        raise RuntimeError("the bare stream's frames differ in size from Chat's")
    return Stream(frames=len(sizes[ECHO]), payload_bytes=sum(sizes[ECHO])), bare_frames


async def _measure(
    address: str, process: subprocess.Popen[bytes], log: IO[bytes], request_path: Path
) -> tuple[Stream, list[bytes], list[paired.Paired]]:
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, process, log)
        stream, bare_frames = await _check(channel, request_path.read_bytes())
    for method in _RPCS.values():
        _round(address, method, request_path, max(MODES.values()), WARMUP_SECONDS, process.pid)
    measured = []
    for mode, streams in MODES.items():
        with _placed(process.pid, streams) as client_cpu:

            async def run_round(rpc: str, streams: int = streams, client_cpu: int | None = client_cpu) -> paired.Round:
                return _round(address, _RPCS[rpc], request_path, streams, ROUND_SECONDS, process.pid, client_cpu)

            measured.append(await paired.alternate(mode, (ECHO, BARE), ("Chat", "bare"), PAIRS, run_round))
    return stream, bare_frames, measured


@contextlib.contextmanager
def _placed(server_pid: int, streams: int) -> Iterator[int | None]:
    """For one stream at a time, the server on one CPU and the client on another (bench/placement.py);
    yields the client's CPU, None when nothing is pinned."""
    cpus = placement.cpu_pair() if streams == 1 else None
    if cpus is None:
        yield None
        return
    server_cpu, client_cpu = cpus
    with placement.server_on(server_pid, server_cpu):
        yield client_cpu


def _ceilings(bare_frames: list[bytes], request_path: Path, results: list[paired.Paired]) -> list[paired.Ceiling]:
    """The grpc-go bare stream of the same frames, per mode, read the same way."""
    ceilings = []
    with goload.ceiling_server(bare_frames) as (address, pid):
        _round(address, BARE_METHOD, request_path, max(MODES.values()), WARMUP_SECONDS, pid)
        for (mode, streams), result in zip(MODES.items(), results, strict=True):
            with _placed(pid, streams) as client_cpu:
                rounds = [
                    _round(address, BARE_METHOD, request_path, streams, ROUND_SECONDS, pid, client_cpu)
                    for _ in range(CEILING_ROUNDS)
                ]
            python = {
                "Python bare": statistics.median(result.rates(BARE)),
                "Chat": statistics.median(result.rates(ECHO)),
            }
            ceilings.append(paired.Ceiling(mode, "bare stream", rounds, python))
    return ceilings


def _placement_note() -> str:
    cpus = placement.cpu_pair()
    if cpus is None:
        return "This machine has one CPU: nothing is pinned."
    return (
        f"With one stream, every thread of the server runs on CPU {cpus[0]} and the client on CPU {cpus[1]}"
        " (bench/placement.py: unpinned, whether the scheduler puts gRPC's completion-queue thread and the"
        " event loop's on one CPU or two decides a round, ~23k or ~14k frames/s for the bare stream);"
        " the grpc-go ceiling's one-stream rounds likewise. Several streams are not pinned."
    )


def run() -> SectionResult:
    goload.ensure_tools()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="e2a-bench-") as scratch:
        request_path = goload.request_file(Path(scratch), "chat", chat_request().SerializeToString())
        with server_process("bench.chat_server") as (address, process, log):
            stream, bare_frames, results = asyncio.run(_measure(address, process, log, request_path))
        ceilings = _ceilings(bare_frames, request_path, results)
    load_after = os.getloadavg()[0]
    targets = tuple(result.target("chat", "frames", TARGET_RATIO) for result in results)
    markdown = f"""## Chat frames/s vs bare gRPC stream

Target: `Chat` on the echo backend streams at least {TARGET_RATIO}x the frames/s of a bare
server-streaming RPC that writes the same frames on the same server stack, measured in the same run,
i.e. E2A's per-frame work (backend events, `FrameBuilder`, the servicer's bookkeeping) adds at most
{(1 / TARGET_RATIO - 1) * 100:.0f} % to gRPC's own cost per frame. The request is a `chat.send` envelope
whose `params.text` has {WORDS:,} words: each stream is {stream.frames:,} frames ({WORDS:,} `e2a.chunk`
deltas and the final `e2a.complete`), {stream.payload_bytes:,} bytes of `ChatResponse` payload.

Method: `bench/chat_server.py` runs in its own process: `E2AServer(ServerSettings(host="127.0.0.1",
port=N, backend="echo", log_frames=False))` (the real options, health, reflection;
its startup heap frozen out of the cyclic GC once it serves, as `e2a-grpc serve` does) plus a bench-only
`/e2a.bench.v1.BareStream/Chat` RPC, registered on the same `grpc.aio` server with the `ChatRequest`
/ `ChatResponse` serializers, that writes with `await context.write(...)`, as `Chat` does, a list of
`ChatResponse` frames built once at startup by the server's own echo backend and `FrameBuilder` for
the same request. It pays gRPC's streaming cost and the serialization of frames of the same sizes, and
none of E2A's per-frame work. Before timing, both streams are checked against spec section 12
(request_id, sequence, unique response ids, one final frame, last), the `Chat` deltas to concatenate
to the request's text with a final `e2a.complete`, and the bare stream to have as many frames as
`Chat`, each of the same size. The streams are then read by bench/go's `streamload` (a grpc-go client
on one connection that keeps each frame's bytes unparsed, so its work per frame is the same for both
RPCs). Modes: one stream at a time, and {CONCURRENT_STREAMS} streams in flight, each started anew as
soon as it ends. {_placement_note()}
After a {WARMUP_SECONDS} s warm-up per RPC, per mode {PAIRS} pairs of {ROUND_SECONDS} s rounds,
`Chat` and bare back to back (order alternating per pair). frames/s counts the frames
received within a round; streams still open at its end are cancelled. "Chat/bare (median)" is the
median over pairs of the ratio within a pair; the target uses it. Server CPU (user + system, all
threads, from `/proc`) over the frames of a round gives the server's CPU µs per frame; "cores busy"
is CPU seconds per wall second of a round (the client's: the Go process's own). "bare/Chat server
CPU per frame" is the ratio frames/s would show if the server's CPU were the only limit
(informational).

{paired.target_table(results, "Mode", "frames", ".1f", TARGET_RATIO)}

Per RPC:

{paired.rpcs_table(results, "Mode", "frames", ".1f")}

The transport's ceiling: a grpc-go server (`bench/go/cmd/ceiling`) writing the bare stream's frames
(the same `ChatResponse` bytes, parsed into the generated Go messages once and serialized per write),
read the same way, {CEILING_ROUNDS} rounds of {ROUND_SECONDS} s per mode after the Python rounds; the
last columns are the Python figures above over it.

{paired.ceiling_table(ceilings, "Mode", "frames")}

Noise: client and server share this VM's cores (nproc above) with anything else running; the 1-minute
load average was {load_before:.1f} when this section started and {load_after:.1f} when it ended.
"max/min" is the spread between rounds of one RPC. Server CPU µs per frame does not depend on the
client, so it is the steadier measure of what E2A's per-frame work costs.
"""
    return SectionResult(markdown=markdown, targets=targets)
