"""The acp Chat backend end to end: a real ``e2a-grpc serve --backend acp`` subprocess running real
ACP agent subprocesses built with the official ACP SDK (tests/support/agents/acp_agent.py).

Every stream is read with ``chat_client.chat`` (or, for streams the test cancels, its
StreamChecker), so the spec section 12 invariants are checked on each. Process checks read /proc:
the agents are children of the server process.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc.backends.acp import AcpBackend
from e2a_grpc.chat.events import BackendError, Delta, Event
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.chat.prompt import read_prompt
from e2a_grpc.client.chat import chat
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse, ErrorCode
from tests.support.acp_servers import (
    AGENT,
    TIMEOUT,
    Server,
    acp_server,
    alive,
    content,
    envelope,
    exited,
    frames_of,
    ppid,
    question,
)
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.subprocess,  # e2a-grpc serve and ACP agent processes
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process checks read /proc"),
]


@pytest.fixture(scope="module")
def default_cwd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("acp-default-cwd")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, default_cwd: Path) -> Iterator[Server]:
    """The server for most tests: default permission policy (ask), ``--acp-cwd`` set."""
    with acp_server(tmp_path_factory.mktemp("acp-server"), "--acp-cwd", str(default_cwd)) as running:
        yield running


@pytest.fixture(scope="module")
def shared_session() -> str:
    """A session id for tests that need no agent of their own (each new agent takes a second to start)."""
    return f"shared-{uuid.uuid4()}"


def whoami(server: Server, session_id: str | None) -> tuple[int, str, int]:
    """(agent pid, ACP session id, turn number in that session) as the agent reports them."""
    match = re.fullmatch(r"pid (\d+) session (\w+) turn (\d+)", content(frames_of(server, "whoami", session_id)))
    assert match, "whoami answer"
    return int(match[1]), match[2], int(match[3])


def start_stream(server: Server, text: str, session_id: str | None = None) -> tuple[Any, StreamChecker, int]:
    """A Chat call the test can cancel, read up to the first frame, in which the agent says its pid (the
    first ticks may be merged into that frame: e2a_grpc.chat.coalesce)."""
    request = envelope(text, session_id)
    call = pb_grpc.AgentServiceStub(server.channel).Chat(pb.ChatRequest(envelope=request.to_proto()), timeout=TIMEOUT)
    checker = StreamChecker(request)
    first = E2AResponse.from_proto(next(call).response)
    checker.check(first)
    assert first.body["delta_kind"] == "text"
    match = re.fullmatch(r"pid (\d+) (tick )*", first.body["delta"])
    assert match, first.body
    return call, checker, int(match[1])


def test_each_update_kind_becomes_its_frame(server: Server) -> None:
    agents_before = server.agents()
    frames = frames_of(server, "hello big world image")
    assert all(frame.provenance.source_protocol == "acp" for frame in frames)
    kinds = [(frame.response_kind, frame.body.get("delta_kind")) for frame in frames]
    # The four word chunks are one frame each, unless some arrived while a frame was being written:
    # those are merged (e2a_grpc.chat.coalesce), so there are 1 to 4 text frames.
    text_frames = len(frames) - 6
    assert 1 <= text_frames <= 4
    assert kinds == [
        ("e2a.chunk", "reasoning"),
        ("acp.session_update", None),
        ("e2a.chunk", "tool"),
        ("e2a.chunk", "tool"),
        ("e2a.chunk", "custom"),
        *[("e2a.chunk", "text")] * text_frames,
        ("e2a.complete", None),
    ]
    thought, plan, tool_call, tool_update, image, *words, final = frames
    assert thought.body["delta"] == "thinking about it"
    assert plan.body["update"] == {
        "sessionUpdate": "plan",
        "entries": [{"content": "echo the prompt", "priority": "medium", "status": "in_progress"}],
    }
    assert isinstance(plan.body["sessionId"], str)
    assert tool_call.body["delta"] == {
        "sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Echo", "kind": "other", "status": "pending",
    }  # fmt: skip
    assert tool_update.body["delta"] == {
        "sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed", "rawOutput": {"words": 4},
    }  # fmt: skip
    assert image.body == {
        "delta_kind": "custom",
        "delta": {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
        "mime_type": "image/png",
    }
    assert "".join(frame.body["delta"] for frame in words) == "hello big world image"
    assert final.status == "succeeded"
    assert final.body == {"result": {"content": "hello big world image", "stop_reason": "end_turn"}}
    # Without a session_id the agent process lives for this call only.
    assert wait_until(lambda: server.agents() == agents_before, 2.0), "per-call agent left running"


def test_stop_reason_comes_from_the_prompt_result(server: Server, shared_session: str) -> None:
    assert frames_of(server, "refuse", shared_session)[-1].body == {
        "result": {"content": "no", "stop_reason": "refusal"}
    }


def test_jsonrpc_error_is_a_final_error_and_the_session_survives(server: Server) -> None:
    session = f"error-{uuid.uuid4()}"
    pid, acp_session, _ = whoami(server, session)
    final = frames_of(server, "error", session)[-1]
    assert (final.response_kind, final.status) == ("e2a.error", "failed")
    error = {"code": -32042, "message": "the test agent failed on request", "data": {"trigger": "error"}}
    assert final.body == {
        "code": -32042,
        "message": "the test agent failed on request",
        "details": {"acp_method": "session/prompt", "data": {"trigger": "error"}},
        "external": {"protocol": "acp", "type": "jsonrpc_error", "payload": error},
    }
    assert whoami(server, session) == (pid, acp_session, 3)


def test_agent_crash_is_a_final_error_and_the_session_gets_a_new_agent(server: Server) -> None:
    session = f"crash-{uuid.uuid4()}"
    pid, acp_session, _ = whoami(server, session)
    frames = frames_of(server, "please crash", session)
    assert [frame.response_kind for frame in frames] == ["e2a.chunk", "e2a.error"]
    assert frames[0].body["delta"] == "about to crash"
    final = frames[-1]
    assert final.body["code"] == "agent_crashed"
    assert "exited with status 3" in final.body["message"]
    assert final.body["details"]["exit_status"] == 3
    assert final.body["details"]["stderr_tail"] == "test agent: crashing on request\n"
    assert not alive(pid)
    new_pid, new_session, turn = whoami(server, session)
    assert (new_pid != pid, new_session != acp_session, turn) == (True, True, 1)


def test_permission_requests_ask_the_client_by_default(server: Server, shared_session: str) -> None:
    asked = question(frames_of(server, "permission", shared_session))
    assert asked.body["options"] == [
        {"option_id": "yes", "name": "Allow", "kind": "allow_once"},
        {"option_id": "no", "name": "Reject", "kind": "reject_once"},
    ]
    answered = frames_of(server, "no", shared_session, task_id=asked.task_id)
    assert content(answered) == "permission selected no"


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with the other options: permission policy allow, one pooled session at most."""
    directory = tmp_path_factory.mktemp("acp-small-server")
    with acp_server(directory, "--acp-permission-policy", "allow", "--acp-max-sessions", "1") as running:
        yield running


def test_permission_policy_allow(small_server: Server) -> None:
    assert content(frames_of(small_server, "permission")) == "permission selected yes"


def test_the_session_pool_is_bounded(small_server: Server) -> None:
    first, second = f"pool-{uuid.uuid4()}", f"pool-{uuid.uuid4()}"
    call, _, first_pid = start_stream(small_server, "slow", first)
    busy = frames_of(small_server, "whoami", second)[-1]  # the only pooled session is in use
    assert (busy.response_kind, busy.body["code"]) == ("e2a.error", "agent_busy")
    call.cancel()
    # Once the first session is idle, it makes room: its agent is closed.
    assert wait_until(lambda: frames_of(small_server, "whoami", second)[-1].response_kind == "e2a.complete", 5.0)
    assert not alive(first_pid)


def test_client_methods_are_answered_method_not_found(server: Server, shared_session: str) -> None:
    assert content(frames_of(server, "fs", shared_session)) == (
        "fs error -32601 Method not found\nterminal error -32601 Method not found\next error -32601 Method not found\n"
    )


def test_workspace_dir_is_created_and_becomes_the_session_cwd(
    server: Server, default_cwd: Path, tmp_path: Path
) -> None:
    session = f"ws-{uuid.uuid4()}"
    assert content(frames_of(server, "cwd", session)) == f"cwd {default_cwd.resolve()}"
    workspace = tmp_path / "task-42" / "scratch"
    assert content(frames_of(server, "cwd", session, workspace_dir=str(workspace))) == f"cwd {workspace.resolve()}"
    assert workspace.is_dir()
    assert content(frames_of(server, "cwd", None, workspace_dir=str(workspace))) == f"cwd {workspace.resolve()}"


def test_calls_with_the_same_session_id_share_agent_and_acp_session(server: Server) -> None:
    first, second = f"reuse-{uuid.uuid4()}", f"reuse-{uuid.uuid4()}"
    pid, acp_session, turn = whoami(server, first)
    assert turn == 1
    assert pid in server.agents()
    assert whoami(server, first) == (pid, acp_session, 2)
    other_pid, other_session, other_turn = whoami(server, second)
    assert (other_pid != pid, other_session != acp_session, other_turn) == (True, True, 1)


def test_client_cancel_sends_session_cancel_and_ends_the_per_call_agent(server: Server) -> None:
    agents_before, fds_before = server.agents(), server.fd_count()
    call, checker, pid = start_stream(server, "slow")
    for _, reply in zip(range(3), call, strict=False):  # a few more frames: the turn is streaming
        checker.check(E2AResponse.from_proto(reply.response))
    cancelled_at = time.time()
    call.cancel()
    assert wait_until(lambda: bool(server.agent_events(pid, "cancel")), 3.0), "no session/cancel reached the agent"
    assert server.agent_events(pid, "cancel")[0]["t"] - cancelled_at < 1.0
    assert wait_until(lambda: bool(server.agent_events(pid, "turn_end")), 2.0)
    assert server.agent_events(pid, "turn_end")[0]["stop_reason"] == "cancelled"
    assert wait_until(lambda: not alive(pid), 2.0), "the per-call agent outlived the cancelled call"
    assert wait_until(lambda: server.agents() == agents_before and server.fd_count() == fds_before, 2.0), (
        f"left behind: agents {server.agents() - agents_before}, fds {server.fd_count() - fds_before}"
    )


def test_deadline_cancels_the_turn_and_the_pooled_agent_stays(server: Server) -> None:
    session = f"deadline-{uuid.uuid4()}"
    pid, acp_session, _ = whoami(server, session)
    request = envelope("slow", session)
    started = time.time()
    with pytest.raises(grpc.RpcError) as failure:
        for _ in chat(server.channel, request, timeout=2.0):
            pass
    assert failure.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert wait_until(lambda: bool(server.agent_events(pid, "cancel")), 3.0), "no session/cancel reached the agent"
    assert server.agent_events(pid, "cancel")[0]["t"] - (started + 2.0) < 1.0
    assert alive(pid)
    assert whoami(server, session) == (pid, acp_session, 3)


def test_an_agent_that_ignores_session_cancel_is_killed(server: Server) -> None:
    session = f"stubborn-{uuid.uuid4()}"
    call, _, pid = start_stream(server, "stubborn", session)
    cancelled_at = time.monotonic()
    call.cancel()
    assert wait_until(lambda: not alive(pid), 3.0), "the unresponsive agent is still running"
    assert time.monotonic() - cancelled_at > 0.9  # it had its second to answer session/cancel
    new_pid, _, turn = whoami(server, session)
    assert (new_pid != pid, turn) == (True, 1)


def test_no_agent_processes_or_fds_left_after_calls(server: Server) -> None:
    agents_before, fds_before = server.agents(), server.fd_count()
    for text, final_kind in (("error", "e2a.error"), ("crash", "e2a.error"), ("refuse", "e2a.complete")):
        assert frames_of(server, text)[-1].response_kind == final_kind
    assert wait_until(lambda: server.agents() == agents_before and server.fd_count() == fds_before, 2.0), (
        f"left behind: agents {server.agents() - agents_before}, fds {server.fd_count() - fds_before}"
    )


def test_shutdown_ends_streams_with_an_error_frame_and_ends_the_agents(tmp_path: Path) -> None:
    with acp_server(tmp_path) as stopping:
        streams = [start_stream(stopping, "slow"), start_stream(stopping, "slow", f"shutdown-{uuid.uuid4()}")]
        finals: list[E2AResponse] = []

        def drain(call: Any, checker: StreamChecker) -> None:
            for reply in call:
                checker.check(E2AResponse.from_proto(reply.response))
            finals.append(checker.finish())

        # The clients keep reading while the server shuts down.
        readers = [threading.Thread(target=drain, args=(call, checker)) for call, checker, _ in streams]
        for reader in readers:
            reader.start()
        os.kill(stopping.pid, signal.SIGTERM)
        for reader in readers:
            reader.join(timeout=TIMEOUT)
        assert [(final.response_kind, final.body["code"]) for final in finals] == [
            ("e2a.error", "server_shutting_down")
        ] * 2
        assert wait_until(lambda: not alive(stopping.pid), 15.0), "the server did not exit"
        for _, _, pid in streams:
            assert wait_until(functools.partial(exited, pid), 2.0), f"agent {pid} outlived the server"


def test_cancel_ends_a_wrapped_agent_and_its_wrapper(tmp_path: Path) -> None:
    # The agent ignores both session/cancel and the end of its stdin: only signals end it, and they
    # must reach it although it is not the server's child.
    with acp_server(tmp_path, agent_args=("--linger",), in_shell=True) as wrapped:
        call, _, pid = start_stream(wrapped, "stubborn")
        (wrapper,) = wrapped.agents()
        assert ppid(pid) == wrapper  # the agent is the shell's child, not the server's
        call.cancel()
        assert wait_until(lambda: not alive(pid) and not alive(wrapper), 3.0), "agent or wrapper still running"


async def _events_until_error(backend: AcpBackend, request: E2AEnvelope) -> tuple[list[Event], BackendError]:
    events: list[Event] = []
    with pytest.raises(BackendError) as failure:
        async for event in backend.stream(request, read_prompt(request)):
            events.append(event)
    return events, failure.value


@pytest.mark.asyncio
async def test_agent_stderr_is_logged_at_debug_and_kept_for_the_crash_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="e2a_grpc.backends.acp_agent")
    backend = AcpBackend([sys.executable, str(AGENT)], default_cwd=tmp_path)
    try:
        _, error = await _events_until_error(backend, envelope("crash"))
    finally:
        await backend.aclose()
    assert error.details["stderr_tail"] == "test agent: crashing on request\n"
    (record,) = [record for record in caplog.records if record.getMessage().startswith("agent stderr")]
    assert record.levelno == logging.DEBUG
    assert re.fullmatch(r"agent stderr \(pid \d+\): test agent: crashing on request", record.getMessage())


# An agent without the SDK, to write what an SDK agent cannot: for each prompt, session updates
# with NaN, a line that is not JSON, JSON that is no message, an integer beyond 64 bits, then the
# prompt's answer as the prompt text asks ("error": a JSON-RPC error without data, "malformed": an
# error that is not an object).
RAW_AGENT = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    method, request_id = request.get("method"), request.get("id")
    if method == "initialize":
        answer = {"result": {"protocolVersion": 1}}
    elif method == "session/new":
        answer = {"result": {"sessionId": "raw"}}
    elif method == "session/prompt":
        update = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"raw","update":%s}}'
        tool = '{"sessionUpdate":"tool_call","toolCallId":"t","title":"T","rawInput":{"n":%s}}'
        for n in ("NaN", "Infinity", "1e400"):
            print(update % (tool % n))
        print("not json")
        print("[1, 2]")
        print('{"jsonrpc":"2.0","id":[%d],"result":{}}' % request_id)
        print(update % (tool % "123456789012345678901234567890123"))
        text = request["params"]["prompt"][0]["text"]
        answer = {"error": {"code": 7, "message": "raw failure"} if text == "error" else "malformed"}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": request_id, **answer}), flush=True)
"""


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("text", "code", "details", "external"),
    [
        (
            "error",
            7,
            {"acp_method": "session/prompt"},
            {"protocol": "acp", "type": "jsonrpc_error", "payload": {"code": 7, "message": "raw failure"}},
        ),
        ("malformed", ErrorCode.AGENT_PROTOCOL_ERROR, {}, None),
    ],
)
async def test_agent_output_is_read_strictly_and_exactly(
    tmp_path: Path, text: str, code: Any, details: dict[str, Any], external: Any
) -> None:
    backend = AcpBackend([sys.executable, "-c", RAW_AGENT], default_cwd=tmp_path)
    try:
        events, error = await _events_until_error(backend, envelope(text))
    finally:
        await backend.aclose()
    # Non-finite numbers, non-JSON and non-messages are skipped; the big integer arrives exact.
    assert events == [
        Delta(
            DeltaKind.TOOL,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "t",
                "title": "T",
                "rawInput": {"n": 123456789012345678901234567890123},
            },
        )
    ]
    assert (error.code, error.details, error.external) == (code, details, external)
