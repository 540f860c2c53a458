"""SIGTERM under continuous load: the drain ends within the grace period, whatever is running.

Callers keep calling on one connection (ToACP, ConvertStream and Transcode streams of a few
messages, short Chat streams) from before the signal until the process has exited, and long Chat
streams and ConvertStreams that their clients hold open are in flight at the signal. Every call
started before the signal is answered (a long Chat stream with its final ``server_shutting_down``
frame); a call started after it is answered, or refused with UNAVAILABLE (each caller then stops,
as a client that retries elsewhere would), never cancelled or lost;
the held streams are cancelled when the grace period is over, with one WARNING giving their count;
and the process exits 0 within grace + 1 s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from e2a.v1 import agent_service_pb2 as agent_pb
from e2a.v1 import agent_service_pb2_grpc as agent_pb_grpc
from e2a.v1 import codec_service_pb2 as codec_pb
from e2a.v1 import codec_service_pb2_grpc as codec_pb_grpc
from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.grpc.status import SHUTTING_DOWN_MESSAGE
from tests.support.processes import running_server_process

GRACE_SECONDS = 3.0
#: Callers of each kind that call again as soon as a call has ended.
CALLERS_PER_KIND = 6
#: ConvertStreams whose clients never end them: the grace period is over before they are.
HELD_STREAMS = 3
#: Long Chat streams in flight at the signal (the echo backend answers word by word).
LONG_CHATS = 4
KINDS = ("ToACP", "ConvertStream", "Transcode", "Chat")
#: Every caller stops by then, whatever the server does.
LOAD_BOUND_SECONDS = 60.0
ECHO_DELAY = 0.02
TO_ACP = pb.ToACPRequest(envelope=E2AEnvelope(method="session/prompt", params={"text": "hi"}).to_proto())
BATCH = pb.ConvertStreamRequest(
    conversions=[pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json='{"message": {"parts": [{"text": "hi"}]}}'))]
)
TRANSCODE = codec_pb.TranscodeRequest(envelope_json='{"method": "chat.send", "params": {"text": "hi"}}')


def _chat(text: str) -> agent_pb.ChatRequest:
    return agent_pb.ChatRequest(envelope=E2AEnvelope(method="chat.send", params={"text": text}).to_proto())


async def _converse(call: grpc.aio.StreamStreamCall[Any, Any], reply_type: type[Message]) -> None:
    """The replies to the three requests of ``call``'s request iterator; raises the call's status if it fails."""
    replies = [reply async for reply in call]
    assert len(replies) == 3 and all(isinstance(reply, reply_type) for reply in replies)
    assert await call.code() == grpc.StatusCode.OK


@dataclasses.dataclass(frozen=True)
class Outcome:
    kind: str
    before_signal: bool
    code: grpc.StatusCode
    details: str


#: What grpc's Python client reports when a write of its meets the end of a call the server has
#: already ended: the call's status is then this, not the server's.
CLIENT_WRITE_AFTER_END = (grpc.StatusCode.INTERNAL, "Internal error from Core")


def _is_refusal(outcome: Outcome) -> bool:
    """The server's refusal: UNAVAILABLE, retry elsewhere (for a request stream the client was still
    writing, grpc's client may say ``CLIENT_WRITE_AFTER_END`` in its place)."""
    if (outcome.code, outcome.details) == (grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN_MESSAGE):
        return True
    return outcome.kind in ("ConvertStream", "Transcode") and (outcome.code, outcome.details) == CLIENT_WRITE_AFTER_END


class Load:
    """The callers, and what they saw."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.conversion: pb_grpc.ConversionServiceAsyncStub = pb_grpc.ConversionServiceStub(channel)
        self.codec: codec_pb_grpc.CodecServiceAsyncStub = codec_pb_grpc.CodecServiceStub(channel)
        self.agent: agent_pb_grpc.AgentServiceAsyncStub = agent_pb_grpc.AgentServiceStub(channel)
        self.signalled = False
        self.exited = asyncio.Event()
        self.outcomes: list[Outcome] = []
        self.long_chat_endings: list[E2AResponse] = []
        self._answered: set[tuple[str, int]] = set()
        self.warm = asyncio.Event()

    def _record(self, kind: str, index: int, before: bool, code: grpc.StatusCode, details: str) -> Outcome:
        outcome = Outcome(kind, before, code, details)
        self.outcomes.append(outcome)
        if code == grpc.StatusCode.OK:
            self._answered.add((kind, index))
            if len(self._answered) == len(KINDS) * CALLERS_PER_KIND:
                self.warm.set()
        return outcome

    async def _one(self, kind: str) -> None:
        if kind == "ToACP":
            reply = await self.conversion.ToACP(TO_ACP, timeout=30)
            assert '"session/prompt"' in reply.jsonrpc
        elif kind == "ConvertStream":
            await _converse(self.conversion.ConvertStream(iter([BATCH] * 3), timeout=30), pb.ConvertStreamResponse)
        elif kind == "Transcode":
            await _converse(self.codec.Transcode(iter([TRANSCODE] * 3), timeout=30), codec_pb.TranscodeResponse)
        else:
            frames = [frame async for frame in self.agent.Chat(_chat("a b"), timeout=30)]
            final = E2AResponse.from_proto(frames[-1].response)
            # A stream in flight at the signal is answered with the final frame that says so.
            assert final.response_kind == "e2a.complete" or final.body["code"] == "server_shutting_down", final

    async def caller(self, kind: str, index: int) -> Outcome:
        """Calls until a call fails after the signal (its client would then call another server); that
        outcome."""
        deadline = time.monotonic() + LOAD_BOUND_SECONDS
        while time.monotonic() < deadline:
            before = not self.signalled
            try:
                await self._one(kind)
            except grpc.aio.AioRpcError as exc:
                outcome = self._record(kind, index, before, exc.code(), exc.details() or "")
            else:
                outcome = self._record(kind, index, before, grpc.StatusCode.OK, "")
            if not before and outcome.code != grpc.StatusCode.OK:
                return outcome
        raise AssertionError(f"a {kind} caller was never refused")

    async def long_chat(self) -> None:
        call = self.agent.Chat(_chat("w " * 1000), timeout=LOAD_BOUND_SECONDS)
        frames = [frame async for frame in call]
        self.long_chat_endings.append(E2AResponse.from_proto(frames[-1].response))
        self._record("long Chat", 0, True, await call.code(), "")

    async def held_stream(self, opened: asyncio.Event) -> grpc.StatusCode:
        stream = self.conversion.ConvertStream(timeout=LOAD_BOUND_SECONDS)
        await stream.write(BATCH)
        assert isinstance(await stream.read(), pb.ConvertStreamResponse)
        opened.set()
        await self.exited.wait()  # never ended by this client
        return await stream.code()


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_a_drain_under_continuous_load_ends_within_the_grace_period(tmp_path: Path, event_loop: str) -> None:
    log = tmp_path / "server.log"
    args = ("--event-loop", event_loop, "--grace-seconds", str(GRACE_SECONDS), "--echo-delay-seconds", str(ECHO_DELAY))
    with running_server_process(*args, log=log) as (address, process, _):

        async def drain_under_load() -> tuple[float, list[grpc.StatusCode], list[Outcome], Load]:
            async with grpc.aio.insecure_channel(address) as channel:
                load = Load(channel)
                held_open = [asyncio.Event() for _ in range(HELD_STREAMS)]
                held = [asyncio.ensure_future(load.held_stream(opened)) for opened in held_open]
                long_chats = [asyncio.ensure_future(load.long_chat()) for _ in range(LONG_CHATS)]
                callers = [
                    asyncio.ensure_future(load.caller(kind, index))
                    for kind in KINDS
                    for index in range(CALLERS_PER_KIND)
                ]
                await asyncio.wait_for(asyncio.gather(load.warm.wait(), *(opened.wait() for opened in held_open)), 60)
                process.send_signal(signal.SIGTERM)
                load.signalled = True
                signalled = time.monotonic()
                refusals = await asyncio.wait_for(asyncio.gather(*callers), 60)
                exit_code = await asyncio.to_thread(process.wait, GRACE_SECONDS + 30)
                took = time.monotonic() - signalled
                load.exited.set()
                assert exit_code == 0
                await asyncio.wait_for(asyncio.gather(*long_chats), 60)
                held_codes = await asyncio.wait_for(asyncio.gather(*held), 60)
                return took, held_codes, refusals, load

        took, held_codes, refusals, load = asyncio.run(drain_under_load())
    assert took <= GRACE_SECONDS + 1, took
    # Not sooner than the grace period: the held streams kept the drain going until it was over.
    assert took >= GRACE_SECONDS - 0.5, took
    # grpc's stop ends them with a GOAWAY that cancels all calls (UNAVAILABLE), or a cancel of each.
    assert set(held_codes) <= {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}, held_codes
    before = [outcome for outcome in load.outcomes if outcome.before_signal]
    after = [outcome for outcome in load.outcomes if not outcome.before_signal]
    assert before and all(outcome.code == grpc.StatusCode.OK for outcome in before), {
        outcome for outcome in before if outcome.code != grpc.StatusCode.OK
    }
    for ending in load.long_chat_endings:
        assert (ending.response_kind, ending.body["code"]) == ("e2a.error", "server_shutting_down")
    assert len(load.long_chat_endings) == LONG_CHATS
    # Every caller went on calling until it was refused, with the status that says to retry elsewhere.
    unexpected = [outcome for outcome in refusals if not _is_refusal(outcome)]
    assert not unexpected, unexpected
    # Every other call after the signal (before the refusals began, the calls grpc had received) was answered.
    assert sum(1 for outcome in after if outcome.code != grpc.StatusCode.OK) == len(refusals)
    text = log.read_text()
    assert text.count("grace period over") == 1, text
    assert f"grace period over with {HELD_STREAMS} calls in flight: cancelling them" in text
    assert "e2a-grpc stopped" in text and "overran" not in text


def test_with_the_a2a_server_the_drain_ends_within_the_grace_period_too(tmp_path: Path) -> None:
    """``--a2a-port``: the A2A server's stop runs first, within the same grace period."""
    log = tmp_path / "server.log"
    args = ("--a2a-port", "0", "--grace-seconds", str(GRACE_SECONDS))
    with running_server_process(*args, log=log) as (address, process, _):

        async def drain_with_a_held_stream() -> tuple[float, grpc.StatusCode]:
            async with grpc.aio.insecure_channel(address) as channel:
                load = Load(channel)
                opened = asyncio.Event()
                held = asyncio.ensure_future(load.held_stream(opened))
                await asyncio.wait_for(opened.wait(), 60)
                process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                exit_code = await asyncio.to_thread(process.wait, GRACE_SECONDS + 30)
                took = time.monotonic() - signalled
                load.exited.set()
                assert exit_code == 0
                return took, await asyncio.wait_for(held, 60)

        took, held_code = asyncio.run(drain_with_a_held_stream())
    assert GRACE_SECONDS - 0.5 <= took <= GRACE_SECONDS + 1, took
    assert held_code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    text = log.read_text()
    assert "A2A agent" in text  # the A2A server ran
    assert "grace period over with 1 calls in flight: cancelling them" in text and "overran" not in text
