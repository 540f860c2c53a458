"""Section "chat": ``Chat`` frames/s on the echo backend versus a bare server-streaming RPC of the same frames.

The issue's target: ``Chat`` streams at least 0.8x the frames/s of a bare server-streaming baseline that
writes the same number of frames of the same sizes, measured in the same run, i.e. E2A's per-frame work
(backend events, ``FrameBuilder``, the servicer's bookkeeping) adds at most 25 % to gRPC's own cost.

The server (``bench.chat_server``: the real ``E2AServer`` plus the bare stream) runs in its own process, so
that client and server each get a core instead of sharing one event loop.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from typing import IO

import grpc

from bench.chat_server import BARE_METHOD, CHAT_METHOD, WORDS, chat_request, chat_text
from bench.report import SectionResult, Target, median_optional, optional, rate, table
from bench.serverproc import cpu_seconds, server_process, wait_serving
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.chat_client import StreamChecker
from e2a_grpc.constants import E2A_RESPONSE_KIND_E2A_COMPLETE

from e2a.v1 import agent_service_pb2 as pb  # isort: skip

CONCURRENT_STREAMS = 8
#: Mode name -> streams kept in flight at once on the one channel.
MODES = {"1 stream at a time": 1, f"{CONCURRENT_STREAMS} concurrent streams": CONCURRENT_STREAMS}
PAIRS = 6
ROUND_SECONDS = 1.5
WARMUP_SECONDS = 0.5
TARGET_RATIO = 0.8

ECHO = "Chat (echo backend)"
BARE = "bare stream"
_RPCS = {ECHO: CHAT_METHOD, BARE: BARE_METHOD}

#: A stream slower than this means the server is stuck: fail the section rather than hang ``make bench``.
_STREAM_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Round:
    """One RPC streamed for one round with a mode's number of streams in flight.

    ``server_us_per_frame`` is the server's CPU time per frame; ``server_cores`` and ``client_cores``
    are each process's CPU seconds per wall second (about 1.0: that process was the bottleneck).
    """

    frames_per_s: float
    server_us_per_frame: float | None
    server_cores: float | None
    client_cores: float


async def _round(
    call: grpc.aio.UnaryStreamMultiCallable, request: bytes, streams: int, seconds: float, server_pid: int
) -> Round:
    """Keep ``streams`` streams in flight for ``seconds``; frames/s counts the frames received by then.

    Each worker starts a new stream as soon as its last one ends, and cancels its open stream at the
    deadline: with several streams sharing the server, one stream of ``WORDS`` frames can outlast a
    round, and letting it finish would stretch the round well past the time it is measured over.
    """
    frames = 0
    server_before, client_before = cpu_seconds(server_pid), time.process_time()
    start = time.perf_counter()
    deadline = start + seconds

    async def worker() -> None:
        nonlocal frames
        while True:
            stream = call(request, timeout=_STREAM_TIMEOUT_SECONDS)
            async for _ in stream:
                if time.perf_counter() > deadline:
                    stream.cancel()
                    return
                frames += 1

    async with asyncio.TaskGroup() as workers:
        for _ in range(streams):
            workers.create_task(worker())
    wall = time.perf_counter() - start
    if not frames:
        raise RuntimeError(f"no frame arrived within a {seconds} s round: the bench server is stuck")
    server_after, client_after = cpu_seconds(server_pid), time.process_time()
    server = None if server_before is None or server_after is None else server_after - server_before
    return Round(
        frames_per_s=frames / seconds,
        server_us_per_frame=None if server is None else server / frames * 1e6,
        server_cores=None if server is None else server / wall,
        client_cores=(client_after - client_before) / wall,
    )


@dataclass(frozen=True)
class Measured:
    """A mode's rounds per RPC; round ``i`` of echo and of the bare stream ran back to back."""

    mode: str
    rounds: dict[str, list[Round]]

    def rates(self, rpc: str) -> list[float]:
        return [one.frames_per_s for one in self.rounds[rpc]]

    @property
    def ratios(self) -> list[float]:
        return [echo / bare for echo, bare in zip(self.rates(ECHO), self.rates(BARE), strict=True)]

    @property
    def median_ratio(self) -> float:
        """The target figure: robust to drift over several rounds, which a ratio of medians is not."""
        return statistics.median(self.ratios)

    def median_server_us(self, rpc: str) -> float | None:
        return median_optional([one.server_us_per_frame for one in self.rounds[rpc]])


@dataclass(frozen=True)
class Stream:
    """What one stream of the request looks like on the wire (same for both RPCs, checked)."""

    frames: int
    payload_bytes: int


async def _check(channel: grpc.aio.Channel, request: bytes) -> Stream:
    """Refuse to time RPCs that do not do their job, or streams that differ in frame count or sizes."""
    envelope = E2AEnvelope.from_proto(pb.ChatRequest.FromString(request).envelope)
    sizes: dict[str, list[int]] = {}
    for rpc, method in _RPCS.items():
        checker = StreamChecker(envelope)
        frames: list[E2AResponse] = []
        sizes[rpc] = []
        async for data in channel.unary_stream(method)(request, timeout=_STREAM_TIMEOUT_SECONDS):
            frame = E2AResponse.from_proto(pb.ChatResponse.FromString(data).response)
            checker.check(frame)  # section 12: request_id, sequence, unique ids, one final frame last
            frames.append(frame)
            sizes[rpc].append(len(data))
        final = checker.finish()
        if rpc == ECHO:
            text = "".join(frame.body["delta"] for frame in frames[:-1])
            if text != chat_text() or final.response_kind != E2A_RESPONSE_KIND_E2A_COMPLETE:
                raise RuntimeError("Chat did not echo the request's text word by word and end with e2a.complete")
    if len(sizes[BARE]) != len(sizes[ECHO]):
        raise RuntimeError(f"the bare stream has {len(sizes[BARE])} frames, Chat {len(sizes[ECHO])}")
    if sizes[BARE] != sizes[ECHO]:
        raise RuntimeError("the bare stream's frames differ in size from Chat's")
    return Stream(frames=len(sizes[ECHO]), payload_bytes=sum(sizes[ECHO]))


async def _measure_mode(
    calls: dict[str, grpc.aio.UnaryStreamMultiCallable], request: bytes, server_pid: int, mode: str, streams: int
) -> Measured:
    rounds: dict[str, list[Round]] = {ECHO: [], BARE: []}
    order = [ECHO, BARE]
    for pair in range(PAIRS):
        # Alternate which RPC goes first (E B, B E, ...), so neither always meets the same drift.
        for rpc in order if pair % 2 == 0 else reversed(order):
            rounds[rpc].append(await _round(calls[rpc], request, streams, ROUND_SECONDS, server_pid))
    return Measured(mode, rounds)


async def _measure(address: str, process: subprocess.Popen[bytes], log: IO[bytes]) -> tuple[Stream, list[Measured]]:
    request = chat_request().SerializeToString()
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, process, log)
        stream = await _check(channel, request)
        # No deserializers: the client keeps each frame's bytes, so it spends the same (minimal) CPU
        # per frame on both RPCs and the comparison is about the server.
        calls = {rpc: channel.unary_stream(method) for rpc, method in _RPCS.items()}
        for call in calls.values():
            await _round(call, request, max(MODES.values()), WARMUP_SECONDS, process.pid)
        measured = [await _measure_mode(calls, request, process.pid, mode, n) for mode, n in MODES.items()]
    return stream, measured


def _target_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        echo_us, bare_us = result.median_server_us(ECHO), result.median_server_us(BARE)
        rows.append(
            [
                result.mode,
                rate(statistics.median(result.rates(ECHO))),
                rate(statistics.median(result.rates(BARE))),
                f"{result.median_ratio:.2f}",
                " ".join(f"{ratio:.2f}" for ratio in result.ratios),
                "n/a" if echo_us is None or bare_us is None else f"{echo_us - bare_us:.1f}",
                "n/a" if echo_us is None or bare_us is None else f"{bare_us / echo_us:.2f}",
                "PASS" if result.median_ratio >= TARGET_RATIO else "FAIL",
            ]
        )
    header = [
        "Mode",
        "Chat frames/s (median)",
        "bare frames/s (median)",
        "Chat/bare (median)",
        "Chat/bare per round pair",
        "server CPU µs/frame, Chat - bare",
        "bare/Chat server CPU per frame",
        "Target",
    ]
    return table(header, rows, right=range(1, 7))


def _rpcs_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        for rpc in (ECHO, BARE):
            rates, rounds = result.rates(rpc), result.rounds[rpc]
            rows.append(
                [
                    result.mode,
                    rpc,
                    rate(statistics.median(rates)),
                    rate(min(rates)),
                    rate(max(rates)),
                    f"{max(rates) / min(rates):.2f}",
                    optional(result.median_server_us(rpc), ".1f"),
                    optional(median_optional([one.server_cores for one in rounds]), ".2f"),
                    f"{statistics.median(one.client_cores for one in rounds):.2f}",
                ]
            )
    header = [
        "Mode",
        "RPC",
        "frames/s median",
        "min",
        "max",
        "max/min",
        "server CPU µs/frame",
        "server cores busy",
        "client cores busy",
    ]
    return table(header, rows, right=range(2, 9))


def run() -> SectionResult:
    load_before = os.getloadavg()[0]
    with server_process("bench.chat_server") as (address, process, log):
        stream, results = asyncio.run(_measure(address, process, log))
    load_after = os.getloadavg()[0]
    targets = tuple(
        Target(
            name=f"chat {result.mode}",
            passed=result.median_ratio >= TARGET_RATIO,
            summary=(
                f"Chat {rate(statistics.median(result.rates(ECHO)))} frames/s vs bare stream "
                f"{rate(statistics.median(result.rates(BARE)))} frames/s median, "
                f"Chat/bare {result.median_ratio:.2f} (target >= {TARGET_RATIO})"
            ),
        )
        for result in results
    )
    markdown = f"""## Chat frames/s vs bare gRPC stream

Target: `Chat` on the echo backend streams at least {TARGET_RATIO}x the frames/s of a bare
server-streaming RPC that writes the same frames on the same server stack, measured in the same run,
i.e. E2A's per-frame work (backend events, `FrameBuilder`, the servicer's bookkeeping) adds at most
{(1 / TARGET_RATIO - 1) * 100:.0f} % to gRPC's own cost per frame. The request is a `chat.send` envelope
whose `params.text` has {WORDS:,} words: each stream is {stream.frames:,} frames ({WORDS:,} `e2a.chunk`
deltas and the final `e2a.complete`), {stream.payload_bytes:,} bytes of `ChatResponse` payload.

Method: `bench/chat_server.py` runs in its own process: `E2AServer(ServerConfig(host="127.0.0.1",
port=N, backend="echo", log_frames=False))` (the real options, health, reflection) plus a bench-only
`/e2a.bench.v1.BareStream/Chat` RPC, registered on the same `grpc.aio` server with the `ChatRequest`
/ `ChatResponse` serializers, that writes with `await context.write(...)`, as `Chat` does, a list of
`ChatResponse` frames built once at startup by the server's own echo backend and `FrameBuilder` for
the same request. It pays gRPC's streaming cost and the serialization of frames of the same sizes, and
none of E2A's per-frame work. Before timing, both streams are checked against spec section 12
(request_id, sequence, unique response ids, one final frame, last), the `Chat` deltas to concatenate
to the request's text with a final `e2a.complete`, and the bare stream to have as many frames as
`Chat`, each of the same size. The client (this process) uses one `grpc.aio` channel and keeps each
frame's bytes unparsed, so its own work per frame is the same for both RPCs. Modes: one stream at a
time, and {CONCURRENT_STREAMS} coroutines each streaming back to back. After a {WARMUP_SECONDS} s warm-up
per RPC, per mode {PAIRS} pairs of {ROUND_SECONDS} s rounds, `Chat` and bare back to back (order
alternating per pair). frames/s counts the frames received within a round; streams still open at its
end are cancelled. "Chat/bare (median)" is the median over pairs of the ratio within a pair; the
target uses it. Server CPU (user + system, all threads, from `/proc`) over the frames of a round gives
the server's CPU µs per frame; "cores busy" is CPU seconds per wall second of a round. "bare/Chat
server CPU per frame" is the ratio frames/s would show if the server's CPU were the only limit
(informational).

{_target_table(results)}

Per RPC:

{_rpcs_table(results)}

Noise: client and server share this VM's cores (nproc above) with anything else running; the 1-minute
load average was {load_before:.1f} when this section started and {load_after:.1f} when it ended.
"max/min" is the spread between rounds of one RPC. If the client is near 1.0 core busy it, not the
server, limits the bare stream, and the Chat/bare ratio then flatters `Chat`; server CPU µs per frame
does not depend on the client, so it is the steadier measure of what E2A's per-frame work costs.
"""
    return SectionResult(markdown=markdown, targets=targets)
