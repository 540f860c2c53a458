"""Section "a2a": the A2A server in front of the echo backend versus Chat over gRPC, same process, same backend.

Two figures, each measured against Chat in the same run: non-streaming sends per second (A2A JSON-RPC
``SendMessage``, which returns the completed task, versus a whole Chat stream read to its end), and
streaming first-token latency (A2A ``SendStreamingMessage`` over SSE until the first artifact update,
versus Chat until its first ``e2a.chunk`` frame). No target: the issue asks for the figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import httpx

from bench import paired
from bench.report import SectionResult, table
from bench.serverproc import wait_serving
from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc import E2AEnvelope
from tests.support.processes import free_port, logged_process

WORDS = 20
CONCURRENT_CALLS = 4
PAIRS = 6
ROUND_SECONDS = 1.5
WARMUP_SECONDS = 0.5
LATENCY_SAMPLES = 60
CHAT_METHOD = "/e2a.v1.AgentService/Chat"
_TIMEOUT_SECONDS = 30.0

A2A = "A2A SendMessage (JSON-RPC)"
CHAT = "Chat (gRPC)"


def prompt_text() -> str:
    """The text every A2A send of the bench carries: ``WORDS`` words, a chunk each on the echo backend."""
    return " ".join(f"word{index}" for index in range(WORDS))


def _chat_request() -> bytes:
    envelope = E2AEnvelope(method="chat.send", params={"text": prompt_text()})
    return pb.ChatRequest(envelope=envelope.to_proto()).SerializeToString()


def a2a_body(method: str) -> bytes:
    """A JSON-RPC request of ``method`` (``SendMessage``, ``SendStreamingMessage``) with a new message."""
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": prompt_text()}]}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}).encode()


A2A_HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


async def send_blocking(http: httpx.AsyncClient) -> dict[str, Any]:
    """One JSON-RPC ``SendMessage`` (blocking: the reply is the task once it ended) to ``http``'s base
    URL; the task, which must have completed."""
    reply = await http.post("/", content=a2a_body("SendMessage"), headers=A2A_HEADERS)
    task: dict[str, Any] = reply.json()["result"]["task"]
    if task["status"]["state"] != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"the A2A send did not complete: {task['status']}")
    return task


class _Calls:
    """One call of each kind, checked once before timing."""

    def __init__(self, http: httpx.AsyncClient, channel: grpc.aio.Channel) -> None:
        self._http = http
        self._chat: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(CHAT_METHOD)
        self._chat_request = _chat_request()

    async def a2a_send(self) -> None:
        await send_blocking(self._http)

    async def chat(self) -> None:
        frames = [frame async for frame in self._chat(self._chat_request, timeout=_TIMEOUT_SECONDS)]
        if len(frames) != WORDS + 1:
            raise RuntimeError(f"Chat streamed {len(frames)} frames, expected {WORDS + 1}")

    async def a2a_first_token(self) -> float:
        body = a2a_body("SendStreamingMessage")
        start = time.perf_counter()
        first: float | None = None
        async with self._http.stream("POST", "/", content=body, headers=A2A_HEADERS) as reply:
            async for line in reply.aiter_lines():  # read to the end: the next call starts clean
                if first is None and line.startswith("data:") and "artifactUpdate" in line:
                    first = time.perf_counter() - start
        if first is None:
            raise RuntimeError("the A2A stream ended without an artifact update")
        return first

    async def chat_first_token(self) -> float:
        start = time.perf_counter()
        first: float | None = None
        async for _ in self._chat(self._chat_request, timeout=_TIMEOUT_SECONDS):
            if first is None:
                first = time.perf_counter() - start
        if first is None:
            raise RuntimeError("Chat streamed no frame")
        return first


async def _round(call: Callable[[], Awaitable[None]], seconds: float, server_pid: int) -> paired.Round:
    done = 0
    clock = paired.RoundClock(server_pid)
    deadline = clock.start + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await call()
            done += 1

    async with asyncio.TaskGroup() as workers:
        for _ in range(CONCURRENT_CALLS):
            workers.create_task(worker())
    return clock.stop(done, done, time.perf_counter() - clock.start)


async def _measure(grpc_address: str, http_url: str, server_pid: int) -> tuple[paired.Paired, dict[str, list[float]]]:
    async with (
        httpx.AsyncClient(base_url=http_url, timeout=_TIMEOUT_SECONDS) as http,
        grpc.aio.insecure_channel(grpc_address) as channel,
    ):
        calls = _Calls(http, channel)
        await calls.a2a_send()
        await calls.chat()
        subjects = {A2A: calls.a2a_send, CHAT: calls.chat}
        for call in subjects.values():
            await _round(call, WARMUP_SECONDS, server_pid)

        async def run_round(rpc: str) -> paired.Round:
            return await _round(subjects[rpc], ROUND_SECONDS, server_pid)

        sends = await paired.alternate(
            f"{CONCURRENT_CALLS} concurrent callers", (A2A, CHAT), ("A2A", "Chat"), PAIRS, run_round
        )
        latencies: dict[str, list[float]] = {"A2A SSE": [], "Chat": []}
        for sample in range(LATENCY_SAMPLES):  # one call at a time, alternating which goes first
            order = [("A2A SSE", calls.a2a_first_token), ("Chat", calls.chat_first_token)]
            for name, measure in order if sample % 2 == 0 else reversed(order):
                latencies[name].append(await measure())
    return sends, latencies


def run() -> SectionResult:
    grpc_port, a2a_port = free_port(), free_port()
    command = [
        *(sys.executable, "-m", "e2a_grpc", "serve", "--host", "127.0.0.1", "--port", str(grpc_port)),
        *("--a2a-port", str(a2a_port)),
    ]
    load_before = os.getloadavg()[0]
    with logged_process(command) as (process, log):

        async def measure() -> tuple[paired.Paired, dict[str, list[float]]]:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                await wait_serving(channel, process, log)
            return await _measure(f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{a2a_port}", process.pid)

        sends, latencies = asyncio.run(measure())
    load_after = os.getloadavg()[0]
    latency_rows = [
        [
            name,
            f"{statistics.median(values) * 1e3:.2f}",
            f"{min(values) * 1e3:.2f}",
            f"{max(values) * 1e3:.2f}",
        ]
        for name, values in latencies.items()
    ]
    ratio = statistics.median(latencies["A2A SSE"]) / statistics.median(latencies["Chat"])
    markdown = f"""## A2A front door vs Chat over gRPC (echo backend)

Method: one `e2a-grpc serve --a2a-port` process (echo backend), serving Chat over gRPC and the A2A
server (the a2a-sdk request handler, JSON-RPC under uvicorn, in-memory task store) over the same
backend. The prompt is {WORDS} words, so a turn is {WORDS} `e2a.chunk` frames and a final one.

Non-streaming sends: A2A JSON-RPC `SendMessage` (blocking: the reply is the completed task with its
artifact) against a whole Chat stream read to its end, {CONCURRENT_CALLS} callers each calling back to
back, {PAIRS} pairs of {ROUND_SECONDS} s rounds after a {WARMUP_SECONDS} s warm-up, order alternating per pair.
The client posts pre-built JSON with httpx and keeps Chat frames as bytes, so it adds little of its own.

{paired.target_table([sends], "Load", "calls", ".0f", 0.0).replace(" FAIL |", " - |").replace(" PASS |", " - |")}

{paired.rpcs_table([sends], "Load", "calls", ".0f")}

Streaming first-token latency, one call at a time, {LATENCY_SAMPLES} samples each, alternating: A2A
`SendStreamingMessage` over SSE until the first `artifactUpdate` event arrives, against Chat until its
first frame (an `e2a.chunk`); each stream is then read to its end.

{table(["Stream", "first token ms (median)", "min", "max"], latency_rows, right=range(1, 4))}

A2A/Chat median first-token latency: {ratio:.2f}x. What the A2A path adds per turn: the SDK's task
bookkeeping (a task created, saved on every event, its events fanned out to subscribers), JSON over
HTTP/1.1 instead of protobuf over HTTP/2, and the projection of each frame to an A2A event.

Noise: client and server share this VM's cores; the 1-minute load average was {load_before:.1f} when this
section started and {load_after:.1f} when it ended.
"""
    return SectionResult(markdown=markdown, targets=())
