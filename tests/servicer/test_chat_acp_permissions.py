"""ACP permission questions over Chat, end to end: ``e2a-grpc serve --backend acp`` with the test ACP
agent (tests/support/agents/acp_agent.py), whose ``write`` turn writes a file only when allowed, so
each test sees that the answer reached the agent and took effect (the file, and the outcome the
agent records in its event log).

Every stream is read with ``e2a_grpc.client.chat`` (the section 12 invariants: an answering call's
frames number from 0 again), or for a call the test cancels with its StreamChecker.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc.backends.acp import AcpBackend
from e2a_grpc.chat.events import AgentIds, BackendError, Event, InputRequired
from e2a_grpc.chat.invariants import StreamChecker
from e2a_grpc.chat.prompt import read_prompt
from e2a_grpc.model import E2AResponse, ErrorCode, WaitReason
from e2a_grpc.settings import ServerSettings
from tests.support.acp_servers import (
    AGENT,
    TIMEOUT,
    Server,
    acp_server,
    alive,
    content,
    envelope,
    frames_of,
    question,
)
from tests.support.processes import wait_until
from tests.support.waiting import within

pytestmark = [
    pytest.mark.subprocess,  # e2a-grpc serve and ACP agent processes
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process checks read /proc"),
]

CANCELLED = {"outcome": "cancelled"}
WRITE_OPTIONS = [
    {"option_id": "allow", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "always", "name": "Always allow", "kind": "allow_always"},
    {"option_id": "reject", "name": "Reject", "kind": "reject_once"},
]
#: Bounds the waits for what only the agent's process shows (its event log, its exit).
AGENT_WAIT_SECONDS = 5.0


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("acp-ask-workspaces")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The default permission policy: ask."""
    with acp_server(tmp_path_factory.mktemp("acp-ask-server")) as running:
        yield running


def new_session(workspaces: Path) -> tuple[str, Path]:
    """A fresh session id and a workspace of its own (the agent's cwd, where ``write`` writes)."""
    session = f"ask-{uuid.uuid4()}"
    return session, workspaces / session


def ask(server: Server, text: str, session: str, workspace: Path) -> E2AResponse:
    return question(frames_of(server, text, session, workspace_dir=str(workspace)))


def answer(
    server: Server, session: str, asked: E2AResponse, text: str = "go ahead", **params: Any
) -> list[E2AResponse]:
    """A call answering ``asked``: its text, which ``params.option_id`` or ``params.cancel`` overrides."""
    assert asked.task_id is not None
    return frames_of(server, text, session, task_id=asked.task_id, **params)


def error_of(frames: list[E2AResponse]) -> dict[str, Any]:
    """The body of a stream's only frame, an e2a.error (a refused call reaches no agent)."""
    assert [frame.response_kind for frame in frames] == ["e2a.error"], [frame.body for frame in frames]
    body: dict[str, Any] = frames[0].body
    return body


def agent_pid(server: Server) -> int:
    """The pid of the server's only agent."""
    (pid,) = server.agents()
    return pid


def asking_agent(server: Server, asked: E2AResponse) -> int:
    """The pid of the agent that asked: its event log names the ACP session of each prompt."""
    acp_session = asked.body["request"]["session_id"]
    records = map(json.loads, server.events.read_text(encoding="utf-8").splitlines())
    (pid,) = {record["pid"] for record in records if record["event"] == "prompt" and record["session"] == acp_session}
    assert isinstance(pid, int)
    return pid


def outcomes(server: Server, pid: int) -> list[dict[str, Any]]:
    """The outcomes of the agent's permission requests, as it received them."""
    return [record["outcome"] for record in server.agent_events(pid, "permission")]


def question_body(asked: E2AResponse) -> dict[str, Any]:
    """What error details repeat of a question: its frame's body without the turn's text."""
    return {key: value for key, value in asked.body.items() if key != "result"}


def test_the_question_carries_the_tool_call_and_the_options(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    frames = frames_of(server, "write", session, workspace_dir=str(workspace))
    asked = question(frames)
    assert [frame.task_id for frame in frames] == [asked.task_id] * len(frames)
    notes = str(workspace.resolve() / "notes.txt")
    tool_call = asked.body["request"]["tool_call"]
    assert {key: tool_call[key] for key in ("toolCallId", "title", "kind", "locations")} == {
        "toolCallId": "write-notes.txt",
        "title": "Write notes.txt",
        "kind": "edit",
        "locations": [{"path": notes}],
    }
    assert tool_call["content"][0]["type"] == "diff" and tool_call["content"][0]["path"] == notes
    assert isinstance(asked.body["request"]["session_id"], str)
    assert asked.body["reason"] == WaitReason.PERMISSION
    assert asked.body["message"] == "Write notes.txt: allow?"
    assert asked.body["result"] == {"content": ""}
    assert asked.body["options"] == WRITE_OPTIONS
    assert not (workspace / "notes.txt").exists()  # the agent waits for the answer
    answer(server, session, asked, "cancel")  # leaves nothing waiting on the server


@pytest.mark.parametrize(
    ("text", "params", "outcome", "said"),
    [
        ("go ahead", {"option_id": "allow"}, {"outcome": "selected", "optionId": "allow"}, "wrote notes.txt\n"),
        ("always allow", {}, {"outcome": "selected", "optionId": "always"}, "wrote notes.txt\n"),
        (
            "allow",  # params.option_id wins over the text
            {"option_id": "reject"},
            {"outcome": "selected", "optionId": "reject"},
            "did not write notes.txt (reject)\n",
        ),
        ("Reject", {}, {"outcome": "selected", "optionId": "reject"}, "did not write notes.txt (reject)\n"),
        ("go ahead", {"cancel": True}, {"outcome": "cancelled"}, "did not write notes.txt (cancelled)\n"),
        ("", {"option_id": "allow"}, {"outcome": "selected", "optionId": "allow"}, "wrote notes.txt\n"),
    ],
    ids=["option-id", "option-name", "reject", "reject-by-name", "cancel", "option-id-without-prompt"],
)
def test_the_answer_reaches_the_agent_and_the_turn_goes_on(
    server: Server, workspaces: Path, text: str, params: dict[str, Any], outcome: dict[str, Any], said: str
) -> None:
    session, workspace = new_session(workspaces)
    asked = ask(server, "write", session, workspace)
    pid = asking_agent(server, asked)
    frames = answer(server, session, asked, text, **params)
    assert frames[0].sequence == 0  # a new request (chat() checked the rest of section 12)
    assert [frame.task_id for frame in frames] == [asked.task_id] * len(frames)
    assert content(frames) == said
    assert frames[-1].body["result"]["stop_reason"] == "end_turn"
    assert outcomes(server, pid) == [outcome]
    assert (workspace / "notes.txt").exists() == said.startswith("wrote")


def test_two_questions_in_one_turn(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    first = ask(server, "twice", session, workspace)
    assert first.body["message"] == "Write first.txt: allow?"
    frames = answer(server, session, first, option_id="allow")
    # The answering call ends with the turn's next question, under the same task id.
    second = question(frames)
    assert second.task_id == first.task_id
    assert second.body["message"] == "Write second.txt: allow?"
    assert second.body["result"] == {"content": "wrote first.txt\n"}
    assert "".join(frame.body["delta"] for frame in frames[:-1]) == "wrote first.txt\n"
    assert (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    assert content(answer(server, session, second, option_id="reject")) == "did not write second.txt (reject)\n"
    assert not (workspace / "second.txt").exists()


def test_an_answer_naming_no_option_leaves_the_question_open(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    asked = ask(server, "write", session, workspace)
    for text, params in (("allow", {"option_id": "maybe"}), ("perhaps", {})):
        error = error_of(answer(server, session, asked, text, **params))
        assert error["code"] == ErrorCode.INVALID_ANSWER
        assert "allow, always, reject" in error["message"]
        assert error["details"] == {"task_id": asked.task_id, "question": question_body(asked)}
    assert content(answer(server, session, asked, option_id="allow")) == "wrote notes.txt\n"
    assert (workspace / "notes.txt").exists()


def test_a_call_that_does_not_answer_the_waiting_question_is_refused(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    asked = ask(server, "write", session, workspace)
    for task_id in (None, str(uuid.uuid4())):
        error = error_of(frames_of(server, "whoami", session, task_id=task_id))
        assert error["code"] == ErrorCode.INVALID_REQUEST
        assert f"answer it with task_id {asked.task_id}" in error["message"]
        assert error["details"] == {"task_id": asked.task_id, "question": question_body(asked)}
    assert content(answer(server, session, asked, option_id="allow")) == "wrote notes.txt\n"
    # Once answered, the session takes prompts again.
    whoami = frames_of(server, "whoami", session, workspace_dir=str(workspace))
    assert re.fullmatch(r"pid \d+ session \w+ turn 2", content(whoami))


def test_a_task_id_with_no_question_waiting(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    stray = str(uuid.uuid4())
    for session_id in (session, None):
        error = error_of(frames_of(server, "allow", session_id, task_id=stray))
        assert (error["code"], error["details"]) == (ErrorCode.NO_QUESTION_PENDING, {"task_id": stray})
    # An answer to a question answered already: nothing waits.
    asked = ask(server, "write", session, workspace)
    assert content(answer(server, session, asked, option_id="reject")) == "did not write notes.txt (reject)\n"
    assert error_of(answer(server, session, asked, option_id="allow"))["code"] == ErrorCode.NO_QUESTION_PENDING
    assert not (workspace / "notes.txt").exists()


def test_a_call_without_session_id_gets_the_timeout_policy(server: Server, workspaces: Path) -> None:
    # No later call could answer: the per-call agent ends with the call. The timeout policy is deny.
    workspace = workspaces / f"no-session-{uuid.uuid4()}"
    said = content(frames_of(server, "write", None, workspace_dir=str(workspace)))
    assert said == "did not write notes.txt (reject)\n"


def test_the_agent_exiting_while_it_asks(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    fds_before = server.fd_count()
    frames = frames_of(server, "vanish", session, workspace_dir=str(workspace))
    asked = question(frames)
    match = re.fullmatch(r"pid (\d+) about to ask", frames[0].body["delta"])
    assert match, frames[0].body
    pid = int(match[1])
    assert wait_until(lambda: not alive(pid), AGENT_WAIT_SECONDS), "the agent did not exit"
    # The server closes the waiting session's agent (no process, no pipe left) without being called.
    assert wait_until(lambda: pid not in server.agents() and server.fd_count() == fds_before, AGENT_WAIT_SECONDS)
    error = error_of(answer(server, session, asked, option_id="allow"))
    assert error["code"] == ErrorCode.AGENT_CRASHED
    assert error["details"]["exit_status"] == 3
    assert error["details"]["stderr_tail"] == "test agent: leaving while asking\n"
    # The session gets a new agent.
    assert re.fullmatch(r"pid \d+ session \w+ turn 1", content(frames_of(server, "whoami", session)))
    assert not (workspace / "notes.txt").exists()


def test_the_agent_ending_its_turn_while_it_asks(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    asked = ask(server, "withdraw", session, workspace)
    pid = asking_agent(server, asked)
    assert wait_until(lambda: bool(server.agent_events(pid, "turn_end")), AGENT_WAIT_SECONDS)
    # The answer is moot; the call gets the rest of the turn and its end.
    frames = answer(server, session, asked, option_id="allow")
    assert content(frames) == "never mind"
    whoami = frames_of(server, "whoami", session, workspace_dir=str(workspace))
    assert re.fullmatch(rf"pid {pid} session \w+ turn 2", content(whoami))


def test_cancelling_the_answering_call_cancels_the_turn(server: Server, workspaces: Path) -> None:
    session, workspace = new_session(workspaces)
    asked = ask(server, "write slow", session, workspace)
    request = envelope("go ahead", session, task_id=asked.task_id, option_id="allow")
    call = pb_grpc.AgentServiceStub(server.channel).Chat(pb.ChatRequest(envelope=request.to_proto()), timeout=TIMEOUT)
    checker = StreamChecker(request)
    said = ""
    for reply in call:  # the answer, then the slow part of the turn (ended by the cancel)
        frame = E2AResponse.from_proto(reply.response)
        checker.check(frame)
        said += frame.body["delta"]
        if match := re.search(r"pid (\d+) ", said):
            break
    assert match is not None and said.startswith("wrote notes.txt\n")
    pid = int(match[1])
    call.cancel()
    assert wait_until(lambda: bool(server.agent_events(pid, "turn_end")), AGENT_WAIT_SECONDS)
    assert server.agent_events(pid, "turn_end")[-1]["stop_reason"] == "cancelled"
    assert server.agent_events(pid, "cancel")
    whoami = frames_of(server, "whoami", session, workspace_dir=str(workspace))
    assert re.fullmatch(rf"pid {pid} session \w+ turn 2", content(whoami))


def test_draining_answers_waiting_questions_cancelled(tmp_path: Path) -> None:
    with acp_server(tmp_path) as draining:
        session = f"drain-{uuid.uuid4()}"
        question(frames_of(draining, "write", session, workspace_dir=str(tmp_path / "ws")))
        pid = agent_pid(draining)
        os.kill(draining.pid, signal.SIGTERM)
        assert wait_until(lambda: not alive(draining.pid), 15.0), "the server did not exit"
        assert not alive(pid)
        assert outcomes(draining, pid) == [{"outcome": "cancelled"}]
        assert draining.agent_events(pid, "cancel")
        assert not (tmp_path / "ws" / "notes.txt").exists()


def test_eviction_cancels_a_waiting_question(tmp_path: Path) -> None:
    with acp_server(tmp_path, "--acp-max-sessions", "1") as small:
        session, workspace = f"evicted-{uuid.uuid4()}", tmp_path / "ws"
        asked = question(frames_of(small, "write", session, workspace_dir=str(workspace)))
        pid = agent_pid(small)
        # The only pooled session waits on a question, which no call holds: another session evicts it.
        assert content(frames_of(small, "refuse", f"other-{uuid.uuid4()}")) == "no"
        assert not alive(pid)
        assert outcomes(small, pid) == [{"outcome": "cancelled"}]
        assert small.agent_events(pid, "cancel")
        other = agent_pid(small)
        assert error_of(answer(small, session, asked, option_id="allow"))["code"] == ErrorCode.NO_QUESTION_PENDING
        assert small.agents() == {other}  # an answer for a session the pool does not have evicts nothing
        assert not (workspace / "notes.txt").exists()


def test_an_unanswered_question_gets_the_timeout_policy_and_the_turn_goes_on(tmp_path: Path) -> None:
    timeout = 0.5
    with acp_server(
        tmp_path, "--acp-permission-timeout-seconds", str(timeout), "--acp-permission-timeout-policy", "allow"
    ) as impatient:
        session, workspace = f"timeout-{uuid.uuid4()}", tmp_path / "ws"
        asked_at = time.monotonic()
        asked = question(frames_of(impatient, "write", session, workspace_dir=str(workspace)))
        pid = agent_pid(impatient)
        assert wait_until(lambda: bool(impatient.agent_events(pid, "turn_end")), timeout + AGENT_WAIT_SECONDS)
        assert time.monotonic() - asked_at >= timeout
        assert outcomes(impatient, pid) == [{"outcome": "selected", "optionId": "allow"}]
        assert (workspace / "notes.txt").exists()  # the turn went on, unattended
        assert error_of(answer(impatient, session, asked, option_id="reject"))["code"] == ErrorCode.NO_QUESTION_PENDING
        # The rest of that turn is not replayed: the next call is a new prompt on the same agent.
        whoami = frames_of(impatient, "whoami", session, workspace_dir=str(workspace))
        assert re.fullmatch(rf"pid {pid} session \w+ turn 2", content(whoami))


@pytest.mark.parametrize(
    ("policy", "said"), [("allow", "wrote notes.txt\n"), ("deny", "did not write notes.txt (reject)\n")]
)
def test_fixed_policies_answer_without_asking(tmp_path: Path, policy: str, said: str) -> None:
    with acp_server(tmp_path, "--acp-permission-policy", policy) as fixed:
        assert content(frames_of(fixed, "write", f"fixed-{uuid.uuid4()}", workspace_dir=str(tmp_path))) == said


async def _until_question(backend: AcpBackend, session: str, text: str) -> tuple[list[Event], InputRequired]:
    events: list[Event] = []
    request = envelope(text, session)
    async for event in backend.stream(request, read_prompt(request)):
        events.append(event)
    final = events[-1]
    assert isinstance(final, InputRequired)
    return events, final


@pytest.mark.asyncio
async def test_cancel_task_cancels_the_waiting_turn(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    backend = AcpBackend([sys.executable, str(AGENT), "--events", str(log)], default_cwd=tmp_path)
    session = f"cancel-task-{uuid.uuid4()}"
    try:
        events, _ = await within(_until_question(backend, session, "write"))
        ids = events[-2]
        assert isinstance(ids, AgentIds) and ids.task_id
        assert await within(backend.cancel_task(ids.task_id)) is True
        # The agent got "cancelled" and session/cancel, and ended its turn: nothing waits any more.
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        assert [record["outcome"] for record in records if record["event"] == "permission"] == [CANCELLED]
        assert {"cancel", "turn_end"} <= {record["event"] for record in records}
        with pytest.raises(BackendError) as refused:
            answer = envelope("allow", session, task_id=ids.task_id)
            async for _ in backend.stream(answer, read_prompt(answer)):
                pass
        assert refused.value.code == ErrorCode.NO_QUESTION_PENDING
        assert await within(backend.cancel_task(ids.task_id)) is False  # no longer waits: nothing to do
    finally:
        await within(backend.aclose())
    assert not (tmp_path / "notes.txt").exists()


@pytest.mark.asyncio
async def test_cancel_task_of_a_turn_that_does_not_wait_is_a_no_op(tmp_path: Path) -> None:
    backend = AcpBackend([sys.executable, str(AGENT)], default_cwd=tmp_path)
    try:
        assert await within(backend.cancel_task(str(uuid.uuid4()))) is False
    finally:
        await within(backend.aclose())


def test_the_timeout_policy_cannot_be_ask() -> None:
    with pytest.raises(ValueError, match="acp_permission_timeout_policy"):
        ServerSettings(acp_permission_timeout_policy="ask")  # type: ignore[arg-type]
