"""``e2a-grpc serve`` as a real process: what only a process shows.

Signals (SIGTERM/SIGINT end every Chat stream with a final ``server_shutting_down`` frame, let the
unary calls in flight finish, then the process exits 0), one server per port, TLS, bearer-token auth set up through the CLI's ``--token-file``, and file
descriptors left open by cancelled streams. Everything else about the servicers is tested in process
(tests/servicer/).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from e2a.v1 import agent_service_pb2 as agent_pb
from e2a.v1 import agent_service_pb2_grpc as agent_pb_grpc
from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AAuth, E2AEnvelope, E2AResponse
from e2a_grpc.client.chat import achat
from tests.support.certificates import loopback_server_certificate, make_ca
from tests.support.processes import REPO_ROOT, open_fds, running_server, running_server_process, wait_until

INITIALIZE = pb.FromACPRequest(json='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')


def _long_chat(**fields: Any) -> E2AEnvelope:
    """A Chat request the echo backend answers word by word: with a delay per word, it stays in flight."""
    return E2AEnvelope(method="chat.send", params={"text": "w " * 400}, **fields)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_every_stream_with_a_final_frame_then_the_process_exits(
    tmp_path: Path, signum: signal.Signals
) -> None:
    log = tmp_path / "server.log"
    streams = 5
    with running_server_process("--echo-delay-seconds", "0.05", "--grace-seconds", "5", log=log) as (
        address,
        process,
        _,
    ):
        all_in_flight = asyncio.Event()
        started: set[int] = set()

        async def stream(channel: grpc.aio.Channel, index: int) -> list[E2AResponse]:
            frames = []
            async for frame in achat(channel, _long_chat(request_id=f"r{index}"), timeout=60):  # checks the invariants
                frames.append(frame)
                started.add(index)
                if len(started) == streams:
                    all_in_flight.set()
            return frames

        async def signal_when_all_in_flight() -> list[list[E2AResponse]]:
            async with grpc.aio.insecure_channel(address) as channel:
                calls = asyncio.gather(*(stream(channel, index) for index in range(streams)))
                await asyncio.wait_for(all_in_flight.wait(), 30)
                process.send_signal(signum)
                return await asyncio.wait_for(calls, 30)

        results = asyncio.run(signal_when_all_in_flight())
        assert process.wait(timeout=10) == 0
    for frames in results:
        final = frames[-1]
        assert (final.response_kind, final.status, final.is_final) == ("e2a.error", "failed", True)
        assert final.body["code"] == "server_shutting_down" and "shutting down" in final.body["message"]
        assert len(frames) < 400  # ended by the signal, not by running out of words
    text = log.read_text()
    assert "shutting down" in text and "stopped" in text


def test_sigterm_lets_in_flight_unary_calls_finish_and_ends_chat_streams_then_exits(tmp_path: Path) -> None:
    """64 ToACP calls and 100 Chat streams in flight at SIGTERM: every call is answered, every stream
    gets its final frame, and the process exits 0 within the grace period.

    The unary calls are kept in flight by their size, not by anything test-only: each carries a
    1 MB prompt, which takes the server milliseconds to convert, one call at a time on its event
    loop; the signal goes out as soon as the first answer is back, so the others are still queued in
    the server (grpc accepted them, no handler has run them yet) or being converted.
    """
    grace_seconds = 20.0
    unary_calls, chat_streams = 64, 100
    big = pb.ToACPRequest(envelope=E2AEnvelope(method="session/prompt", params={"text": "w " * 500_000}).to_proto())
    log = tmp_path / "server.log"
    with running_server_process("--echo-delay-seconds", "0.2", "--grace-seconds", str(grace_seconds), log=log) as (
        address,
        process,
        _,
    ):
        all_streaming, first_answer = asyncio.Event(), asyncio.Event()
        streaming: set[int] = set()
        answered: list[pb.ToACPResponse] = []

        async def stream(channel: grpc.aio.Channel, index: int) -> list[E2AResponse]:
            frames = []
            async for frame in achat(channel, _long_chat(request_id=f"r{index}"), timeout=120):
                frames.append(frame)
                streaming.add(index)
                if len(streaming) == chat_streams:
                    all_streaming.set()
            return frames

        signal_sent: list[tuple[int, float]] = []

        async def convert(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
            answered.append(await stub.ToACP(big, timeout=120))
            if not signal_sent:  # at the first answer itself: answers read in one batch do not count as in flight
                process.send_signal(signal.SIGTERM)
                signal_sent.append((unary_calls - len(answered), time.monotonic()))
            first_answer.set()

        async def signal_with_calls_in_flight() -> tuple[list[list[E2AResponse]], int, float]:
            async with (
                grpc.aio.insecure_channel(address) as chat_channel,
                grpc.aio.insecure_channel(address) as unary_channel,
            ):
                streams = asyncio.gather(*(stream(chat_channel, index) for index in range(chat_streams)))
                await asyncio.wait_for(all_streaming.wait(), 60)
                stub: pb_grpc.ConversionServiceAsyncStub = pb_grpc.ConversionServiceStub(unary_channel)
                calls = asyncio.gather(*(convert(stub) for _ in range(unary_calls)))
                await asyncio.wait_for(first_answer.wait(), 60)
                ((in_flight_at_signal, signalled),) = signal_sent
                results = await asyncio.wait_for(streams, 60)
                await asyncio.wait_for(calls, 60)  # raises if any call failed
                return results, in_flight_at_signal, signalled

        results, in_flight_at_signal, signalled = asyncio.run(signal_with_calls_in_flight())
        assert process.wait(timeout=grace_seconds) == 0
        stopped_after = time.monotonic() - signalled
    # Typically 50 or more; a quarter is plenty to show that answered calls had been in flight.
    assert in_flight_at_signal >= unary_calls // 4, in_flight_at_signal
    assert len(answered) == unary_calls and all('"session/prompt"' in reply.jsonrpc for reply in answered)
    for frames in results:
        final = frames[-1]
        assert (final.response_kind, final.status, final.is_final) == ("e2a.error", "failed", True)
        assert final.body["code"] == "server_shutting_down"
    assert stopped_after < grace_seconds
    text = log.read_text()
    assert "stopped" in text and "cancelling" not in text


def test_serve_on_a_taken_port_says_so_in_one_line(tmp_path: Path) -> None:
    """A port held by another program, or by a running e2a-grpc (which does not share it)."""

    def serve_on(port: int) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "e2a_grpc", "serve", "--host", "127.0.0.1", "--port", str(port)]
        return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=20)

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        held_port = int(holder.getsockname()[1])
        by_another_program = serve_on(held_port)
    with running_server() as address:
        by_e2a_grpc = serve_on(int(address.rsplit(":", 1)[1]))
    for result, port in [(by_another_program, held_port), (by_e2a_grpc, int(address.rsplit(":", 1)[1]))]:
        assert result.returncode == 1, result.stderr
        assert result.stderr.splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: address already in use"]
        assert result.stdout == ""


def test_token_file_requires_the_bearer_token_except_for_health(tmp_path: Path) -> None:
    token = "s3cret-token-value"
    token_file = tmp_path / "token"
    token_file.write_text(f"{token}\n", encoding="utf-8")
    log = tmp_path / "server.log"
    with (
        running_server("-v", "--token-file", str(token_file), log=log) as address,
        grpc.insecure_channel(address) as channel,
    ):
        stub = pb_grpc.ConversionServiceStub(channel)
        for metadata in [(), (("authorization", "Bearer wrong"),), (("authorization", token),)]:
            with pytest.raises(grpc.RpcError) as caught:
                stub.FromACP(INITIALIZE, metadata=metadata, timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        authorized = (("authorization", f"Bearer {token}"),)
        assert stub.FromACP(INITIALIZE, metadata=authorized, timeout=10).records
        # A credential inside the converted record is not logged either, also when the call fails.
        envelope = E2AEnvelope(
            method="session/prompt", params={"text": "hi"}, auth=E2AAuth(bearer_token="envelope-token-789")
        )
        assert stub.ToACP(pb.ToACPRequest(envelope=envelope.to_proto()), metadata=authorized, timeout=10).jsonrpc
        bad = pb.ToACPRequest(envelope_json='{"auth": {"bearer_token": "envelope-token-789"}, "params": 1}')
        with pytest.raises(grpc.RpcError) as caught:
            stub.ToACP(bad, metadata=authorized, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        health_stub = health_pb2_grpc.HealthStub(channel)
        health = health_stub.Check(health_pb2.HealthCheckRequest(), timeout=5)  # type: ignore[attr-defined]  # the stubs list no methods
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    text = log.read_text()
    assert "listening on" in text and "auth=bearer token" in text
    assert token not in text and "envelope-token-789" not in text


def test_tls(tmp_path: Path) -> None:
    ca = make_ca(tmp_path, "e2a-test-ca")
    cert, key = loopback_server_certificate(ca, tmp_path)
    with running_server("--tls-cert", str(cert), "--tls-key", str(key), health_tls_ca=ca.cert) as address:
        credentials = grpc.ssl_channel_credentials(ca.cert.read_bytes())
        with grpc.secure_channel(address, credentials) as channel:
            reply = pb_grpc.ConversionServiceStub(channel).FromACP(INITIALIZE, timeout=10)
            assert len(reply.records) == 1
        with grpc.insecure_channel(address) as plain, pytest.raises(grpc.RpcError) as caught:
            pb_grpc.ConversionServiceStub(plain).FromACP(INITIALIZE, timeout=3)
        assert caught.value.code() in {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


def test_cancelled_streams_leak_no_file_descriptors() -> None:
    with running_server("--echo-delay-seconds", "0.02") as address, grpc.insecure_channel(address) as channel:
        stub = agent_pb_grpc.AgentServiceStub(channel)

        def cancel_after_two_frames() -> None:
            call = stub.Chat(agent_pb.ChatRequest(envelope=_long_chat().to_proto()), timeout=30)
            for index, _ in enumerate(call):
                if index == 1:
                    call.cancel()
                    return
            raise AssertionError("the stream ended before it could be cancelled")

        cancel_after_two_frames()  # warm up: first-call allocations are not leaks
        before = open_fds(address.pid)
        for _ in range(30):
            cancel_after_two_frames()
        # The server still answers, on the connection that carried the cancels.
        short = E2AEnvelope(method="chat.send", params={"text": "still here"})
        reply = list(stub.Chat(agent_pb.ChatRequest(envelope=short.to_proto()), timeout=30))
        assert E2AResponse.from_proto(reply[-1].response).response_kind == "e2a.complete"
        # Each leaked stream would hold a descriptor; the server releases them on its own schedule.
        assert wait_until(lambda: open_fds(address.pid) <= before + 2, timeout=5), (open_fds(address.pid), before)
