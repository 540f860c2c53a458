"""The Chat RPC on the echo backend: section 12 invariants, bad requests, cancel, shutdown, load, logs."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import E2AAuth, E2AEnvelope, E2AResponse
from e2a_grpc.chat.frames import REQUEST_ID_ASSIGNED_KEY
from e2a_grpc.chat.invariants import StreamChecker, StreamInvariantError
from e2a_grpc.client.chat import achat, chat
from tests.conftest import _wait_serving, free_port, open_fds, running_server, stop_process

TEXT = "  Hello,  wide\tworld! 你好 🌍 \n end "


def _envelope(text: str = TEXT, **fields: Any) -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", params={"text": text}, **fields)


def test_echo_streams_the_text_word_by_word(server_address: str) -> None:
    envelope = _envelope(
        request_id="req-1", jsonrpc_id=2**70, correlation_id="corr", task_id="t", context_id="c", session_id="s",
        message_id="m", is_stream=True, channel="web", user_id="u", agent_ref={"id": "a", "n": 1.0},
        source_agent_id="src",
    )  # fmt: skip
    with grpc.insecure_channel(server_address) as channel:
        frames = list(chat(channel, envelope, timeout=30))  # chat() checks every invariant as it goes
    *chunks, final = frames
    assert [f.response_kind for f in chunks] == ["e2a.chunk"] * len(chunks) and len(chunks) > 5
    assert "".join(f.body["delta"] for f in chunks) == TEXT
    assert all(f.body["delta_kind"] == "text" and f.status == "in_progress" for f in chunks)
    assert (final.response_kind, final.status, final.is_final) == ("e2a.complete", "succeeded", True)
    assert final.body == {"result": {"content": TEXT}}
    assert {f.request_id for f in frames} == {"req-1"} and all(f.jsonrpc_id == 2**70 for f in frames)
    assert all(f.provenance.source_protocol == "e2a" and f.identity_origin.value == "agent" for f in frames)
    assert all(REQUEST_ID_ASSIGNED_KEY not in f.metadata for f in frames)


def test_session_prompt_with_content_blocks(server_address: str) -> None:
    envelope = E2AEnvelope(
        method="session/prompt",
        session_id="s1",
        params={
            "content_blocks": [
                {"type": "text", "text": "one "},
                {"type": "image", "data": "AA=="},
                {"type": "text", "text": "two"},
            ]
        },
    )
    with grpc.insecure_channel(server_address) as channel:
        final = list(chat(channel, envelope, timeout=30))[-1]
    assert final.body["result"]["content"] == "one two"


def test_server_assigns_a_request_id_and_says_so(server_address: str) -> None:
    with grpc.insecure_channel(server_address) as channel:
        frames = list(chat(channel, _envelope("a b"), timeout=30))
    (request_id,) = {f.request_id for f in frames}
    assert len(request_id) == 36  # a UUID
    assert all(f.metadata == {REQUEST_ID_ASSIGNED_KEY: True} for f in frames)


@pytest.mark.parametrize(
    ("request_message", "field"),
    [
        (pb.ChatRequest(), "envelope"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="history.get", params='{"text":"x"}')), "envelope.method"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="chat.send")), "envelope.params"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="chat.send", params="[1]")), "envelope.params"),
        (pb.ChatRequest(envelope=e2a_pb2.E2AEnvelope(method="chat.send", params="{oops")), "envelope.params"),
    ],
)
def test_invalid_requests_fail_before_any_frame(server_address: str, request_message: Any, field: str) -> None:
    with grpc.insecure_channel(server_address) as channel:
        replies = pb_grpc.AgentServiceStub(channel).Chat(request_message, timeout=10)
        with pytest.raises(grpc.RpcError) as caught:
            next(iter(replies))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in caught.value.details()


def test_the_checker_catches_broken_streams() -> None:
    envelope = _envelope(request_id="r")
    base = {"request_id": "r", "timestamp": "2026-01-01T00:00:00+00:00", "method": "chat.send"}
    checker = StreamChecker(envelope)
    checker.check(E2AResponse(response_id="a", sequence=0, **base))
    for broken, problem in [
        (E2AResponse(response_id="b", sequence=2, **base), "sequence"),
        (E2AResponse(response_id="a", sequence=1, **base), "response_id"),
        (E2AResponse(response_id="c", sequence=1, **{**base, "request_id": "x"}), "request_id"),
        (E2AResponse(response_id="d", sequence=1, **{**base, "timestamp": "yesterday"}), "timestamp"),
        (E2AResponse(response_id="e", sequence=1, status="succeeded", **base), "status"),
        (
            E2AResponse(response_id="f", sequence=1, is_final=True, status="failed", response_kind="e2a.chunk", **base),
            "e2a.error",
        ),
        (E2AResponse(response_id="g", sequence=1, **{**base, "method": "other"}), "method"),
    ]:
        with pytest.raises(StreamInvariantError, match=problem):
            StreamChecker_copy = StreamChecker(envelope)
            StreamChecker_copy.check(E2AResponse(response_id="a", sequence=0, **base))
            StreamChecker_copy.check(broken)
    with pytest.raises(StreamInvariantError, match="without a final frame"):
        checker.finish()


def test_200_concurrent_streams_all_complete_with_valid_invariants(server_address: str) -> None:
    async def one(channel: grpc.aio.Channel, index: int) -> E2AResponse:
        text = f"stream {index} " + "word " * (index % 7)
        frames = [frame async for frame in achat(channel, _envelope(text, request_id=f"req-{index}"), timeout=120)]
        assert "".join(f.body["delta"] for f in frames[:-1]) == text
        return frames[-1]

    async def run() -> list[E2AResponse]:
        async with grpc.aio.insecure_channel(server_address) as channel:
            return await asyncio.gather(*(one(channel, i) for i in range(200)))

    finals = asyncio.run(run())
    assert len(finals) == 200 and all(f.status == "succeeded" for f in finals)


def _frame_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


def test_frame_log_is_one_json_line_per_frame_without_secrets(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    secret = "tok-very-secret-123"
    envelope = _envelope("log me", request_id="req-log", auth=E2AAuth(bearer_token=secret, extra_headers={"x": secret}))
    with (
        running_server("--log-frames", env={"E2A_GRPC_TOKEN": "server-secret-456"}, log=log) as address,
        grpc.insecure_channel(address) as channel,
    ):
        frames = list(chat(channel, envelope, timeout=30, metadata=(("authorization", "Bearer server-secret-456"),)))
    lines = _frame_lines(log)
    assert [line["sequence"] for line in lines] == [f.sequence for f in frames]
    for line, frame in zip(lines, frames, strict=True):
        assert list(line) == ["request_id", "response_id", "sequence", "is_final", "response_kind", "timestamp"]
        assert (line["request_id"], line["response_id"], line["is_final"], line["response_kind"], line["timestamp"]) == (
            frame.request_id, frame.response_id, frame.is_final, frame.response_kind, frame.timestamp,
        )  # fmt: skip
    text = log.read_text()
    assert secret not in text and "server-secret-456" not in text


def test_client_cancel_stops_the_backend(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with running_server("--log-frames", "--echo-delay-seconds", "0.05", log=log) as address:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            call = stub.Chat(pb.ChatRequest(envelope=_envelope("w " * 500, request_id="req-cancel").to_proto()))
            for index, _ in enumerate(call):
                if index == 3:
                    call.cancel()
                    break
            cancelled_at = time.monotonic()
            time.sleep(1.5)
        produced = [line for line in _frame_lines(log) if line["request_id"] == "req-cancel"]
        assert 4 <= len(produced) <= 4 + 1.0 / 0.05  # the backend stopped within a second
        count = len(produced)
        time.sleep(0.5)
        assert len([line for line in _frame_lines(log) if line["request_id"] == "req-cancel"]) == count
        assert not any(line["is_final"] for line in produced)
        assert time.monotonic() - cancelled_at < 10


def test_cancelled_streams_leak_no_file_descriptors() -> None:
    with running_server("--echo-delay-seconds", "0.02") as address, grpc.insecure_channel(address) as channel:
        stub = pb_grpc.AgentServiceStub(channel)

        def cancel_after_two_frames() -> None:
            call = stub.Chat(pb.ChatRequest(envelope=_envelope("w " * 300).to_proto()))
            for index, _ in enumerate(call):
                if index == 1:
                    call.cancel()
                    break

        cancel_after_two_frames()  # warm up: first-call allocations are not leaks
        time.sleep(0.5)
        before = open_fds(address.pid)
        for _ in range(30):
            cancel_after_two_frames()
        time.sleep(1)
        assert open_fds(address.pid) <= before + 2


def test_deadline_stops_the_stream(server_address: str) -> None:
    with running_server("--echo-delay-seconds", "0.05") as address, grpc.insecure_channel(address) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            list(chat(channel, _envelope("w " * 200), timeout=0.5))
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_shutdown_ends_each_stream_with_a_final_error_frame(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "e2a_grpc",
                "serve",
                "--port",
                str(port),
                "--echo-delay-seconds",
                "0.05",
                "--grace-seconds",
                "5",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_serving(f"127.0.0.1:{port}", process, output, None)

            streams = 5
            started_streams: list[int] = []

            async def stream(channel: grpc.aio.Channel, index: int) -> list[E2AResponse]:
                frames = []
                async for frame in achat(channel, _envelope("w " * 400, request_id=f"r{index}"), timeout=60):
                    frames.append(frame)
                    if len(frames) == 1:
                        started_streams.append(index)
                        if len(started_streams) == streams:  # every stream is in flight: stop the server
                            process.send_signal(signal.SIGTERM)
                return frames

            async def run() -> list[list[E2AResponse]]:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                    return await asyncio.gather(*(stream(channel, i) for i in range(streams)))

            started = time.monotonic()
            results = asyncio.run(run())
            assert time.monotonic() - started < 5
            for frames in results:
                final = frames[-1]
                assert (final.response_kind, final.status) == ("e2a.error", "failed")
                assert final.body["code"] == "server_shutting_down" and "shutting down" in final.body["message"]
            assert process.wait(timeout=10) == 0
        finally:
            stop_process(process)


def test_slow_client_does_not_make_the_server_buffer_without_bound(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    words = 60_000
    with running_server("--log-frames", log=log) as address, grpc.insecure_channel(address) as channel:
        call = pb_grpc.AgentServiceStub(channel).Chat(
            pb.ChatRequest(envelope=_envelope("w " * words, request_id="req-slow").to_proto())
        )
        next(iter(call))
        time.sleep(3)  # a client that stops reading
        produced = len(_frame_lines(log))
        call.cancel()
    # Without flow control the echo backend would have produced all frames in well under 3 s.
    assert produced < words / 2, produced
