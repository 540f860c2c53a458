"""Section "broker": Chat frames published to NATS JetStream and consumed from it, vs Chat over gRPC alone.

Two ``e2a-grpc serve`` processes on the echo backend, one with ``--publish-nats`` to a nats-server
(JetStream, file storage in a temporary directory) started here, one without. A round runs
``STREAMS_PER_ROUND`` Chat streams one after the other; on the publishing server a subscriber
(``read_streams``, as ``e2a-grpc subscribe`` runs it) follows the round's streams from the broker
at the same time. Rounds of the two servers alternate per pair (``bench.paired``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import grpc

from bench import paired
from bench.report import SectionResult, rate, table
from bench.serverproc import wait_serving
from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope
from e2a_grpc.broker.stream_reader import read_streams
from e2a_grpc.settings import ServerSettings
from tests.support.nats_server import running_nats_server
from tests.support.processes import free_port, logged_process

WORDS = 500
STREAMS_PER_ROUND = 4
PAIRS = 5
CHAT_METHOD = "/e2a.v1.AgentService/Chat"
ALONE = "Chat over gRPC alone"
BROKER = "Chat through the broker"
#: Chat on the publishing server with no subscriber in the client's process meanwhile: what the
#: server itself does with publishing on (the subscriber reads the round's frames after it).
PUBLISHING = "Chat with publishing on"
#: A round slower than this means something is stuck: fail the section rather than hang ``make bench``.
_ROUND_TIMEOUT_SECONDS = 120.0
_SETTINGS = ServerSettings()


def _request(session: str, stream: int) -> bytes:
    text = " ".join(f"word{n}" for n in range(WORDS))
    envelope = E2AEnvelope(
        method="chat.send", session_id=session, request_id=f"{session}-{stream}", is_stream=True, params={"text": text}
    )
    return pb.ChatRequest(envelope=envelope.to_proto()).SerializeToString()


async def _chat_streams(channel: grpc.aio.Channel, session: str) -> int:
    """The round's streams, one after the other; frames are counted, not parsed (as in "chat")."""
    call: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(CHAT_METHOD)
    frames = 0
    for stream in range(STREAMS_PER_ROUND):
        async for _ in call(_request(session, stream), timeout=_ROUND_TIMEOUT_SECONDS):
            frames += 1
    return frames


async def _consume(nats_url: str, session: str) -> int:
    frames = 0
    async for _ in read_streams(
        nats_url,
        stream=_SETTINGS.nats_stream,
        subject_prefix=_SETTINGS.nats_subject_prefix,
        session_id=session,
        streams=STREAMS_PER_ROUND,
        idle_timeout=_ROUND_TIMEOUT_SECONDS,
    ):
        frames += 1
    return frames


class _Bench:
    def __init__(self, channels: dict[str, grpc.aio.Channel], pids: dict[str, int], nats_url: str) -> None:
        self._channels = channels
        self._pids = {**pids, PUBLISHING: pids[BROKER]}
        self._nats_url = nats_url
        self._rounds = 0
        #: Frames/s the Chat client saw on the publishing server, per broker round.
        self.chat_rates_publishing: list[float] = []

    async def round(self, rpc: str) -> paired.Round:
        self._rounds += 1
        session = f"bench-{os.getpid()}-{self._rounds}"
        clock = paired.RoundClock(self._pids[rpc])
        if rpc == ALONE:
            frames = await _chat_streams(self._channels[rpc], session)
            return clock.stop(frames, frames, time.perf_counter() - clock.start)
        if rpc == PUBLISHING:
            frames = await _chat_streams(self._channels[BROKER], session)
            chat_seconds = time.perf_counter() - clock.start
            # The round ends once the broker has every frame (its publishing CPU is the round's).
            consumed = await _consume(self._nats_url, session)
            if consumed != frames:
                raise RuntimeError(f"the subscriber got {consumed} frames of {frames}")
            return clock.stop(frames, frames, chat_seconds)
        consumer = asyncio.create_task(_consume(self._nats_url, session))
        frames = await _chat_streams(self._channels[rpc], session)
        self.chat_rates_publishing.append(frames / (time.perf_counter() - clock.start))
        consumed = await consumer
        if consumed != frames:
            raise RuntimeError(f"the subscriber got {consumed} frames of {frames}")
        return clock.stop(consumed, consumed, time.perf_counter() - clock.start)


Processes = dict[str, tuple[subprocess.Popen[bytes], IO[bytes]]]


async def _measure(
    addresses: dict[str, str], processes: Processes, nats_url: str
) -> tuple[paired.Paired, list[float], paired.Paired]:
    channels = {rpc: grpc.aio.insecure_channel(address) for rpc, address in addresses.items()}
    try:
        for rpc, channel in channels.items():
            await wait_serving(channel, *processes[rpc])
        bench = _Bench(channels, {rpc: process.pid for rpc, (process, _) in processes.items()}, nats_url)
        for rpc in (ALONE, BROKER):  # warm-up
            await bench.round(rpc)
        bench.chat_rates_publishing.clear()
        result = await paired.alternate(
            f"{STREAMS_PER_ROUND} streams of {WORDS + 1} frames",
            (BROKER, ALONE),
            ("broker", "gRPC"),
            PAIRS,
            bench.round,
        )
        chat_rates = list(bench.chat_rates_publishing)
        server_bound = await paired.alternate(
            f"{STREAMS_PER_ROUND} streams of {WORDS + 1} frames, no subscriber meanwhile",
            (PUBLISHING, ALONE),
            ("publishing", "gRPC"),
            PAIRS,
            bench.round,
        )
        return result, chat_rates, server_bound
    finally:
        for channel in channels.values():
            await channel.close()


def run() -> SectionResult:
    with tempfile.TemporaryDirectory(prefix="e2a-bench-nats-") as store, running_nats_server(Path(store)) as broker:
        ports = {ALONE: free_port(), BROKER: free_port()}
        # One worker process each: the CPU figures are then the server's own (not a parent that only waits).
        serve = [sys.executable, "-m", "e2a_grpc", "serve", "--workers", "1", "--host", "127.0.0.1", "--port"]
        with (
            logged_process([*serve, str(ports[ALONE])]) as alone,
            logged_process([*serve, str(ports[BROKER]), "--publish-nats", broker.url]) as publishing,
        ):
            addresses = {rpc: f"127.0.0.1:{port}" for rpc, port in ports.items()}
            result, chat_rates, server_bound = asyncio.run(
                _measure(addresses, {ALONE: alone, BROKER: publishing}, broker.url)
            )
    alone_rate = statistics.median(result.rates(ALONE))
    rows = [
        [ALONE, "frames the Chat client received", rate(alone_rate), "1.00"],
        [
            BROKER,
            "frames the Chat client received (publishing on)",
            rate(statistics.median(chat_rates)),
            f"{statistics.median(chat_rates) / alone_rate:.2f}",
        ],
        [
            BROKER,
            "frames published and consumed by a subscriber, end to end",
            rate(statistics.median(result.rates(BROKER))),
            f"{result.median_ratio:.2f}",
        ],
        [
            PUBLISHING,
            "frames the Chat client received, no subscriber meanwhile (second set of rounds)",
            rate(statistics.median(server_bound.rates(PUBLISHING))),
            f"{server_bound.median_ratio:.2f}",
        ],
    ]
    markdown = f"""## Chat through NATS JetStream vs Chat over gRPC alone

No target (issue 13 asks for the figures). Two `e2a-grpc serve` processes on the echo backend, one
with `--publish-nats` to a nats-server 2.9 (JetStream, file storage) started by the section on
loopback, one without. A round runs {STREAMS_PER_ROUND} Chat streams of {WORDS:,} words ({WORDS + 1:,}
frames each) one after the other on one channel, the client counting frames without parsing them; on
the publishing server a subscriber in the client's process (`read_streams`, what `e2a-grpc subscribe`
runs: a pull consumer, each frame's CloudEvent read back to its record, reordered by sequence and
checked against spec section 12) follows the round's streams from the broker at the same time, and the
round ends when it has all of them (it must get every frame, or the section fails). After one warm-up
round each, {PAIRS} pairs of rounds, the two servers alternating first. "end to end" counts frames
from the start of the round until the subscriber has the last one, so it is the rate at which frames
were both published (acknowledged by JetStream) and consumed.

{table(["Path", "What is counted", "frames/s (median)", "vs gRPC alone"], rows, right=(2, 3))}

Per server:

{paired.rpcs_table([result, server_bound], "Workload", "frames", ".1f")}

The second set of rounds ({PAIRS} more pairs, alternating likewise) leaves the client's process to
the Chat client while Chat runs: the subscriber reads the round's frames after the last stream (the
round ends when it has them all, so all of the server's publishing CPU is counted), and frames/s
counts Chat alone. With a subscriber in the same process, the client and the broker take the
machine's second core and the Chat rate measures the VM more than the server.

Everything shares this VM's cores (nproc above): the nats-server, the two servers and the client with
its subscriber. "server CPU µs/frame" is the e2a-grpc server's own CPU (for the publishing one it
includes building and publishing each frame's CloudEvent), not the broker's or the subscriber's.
"""
    return SectionResult(markdown=markdown, targets=())
