"""``e2a-grpc chat`` when the agent asks and waits (``e2a.input_required``): answered at a terminal (a
pseudo-terminal, recorded as a transcript), with ``--answer``, or left waiting with exit code 5.

The server runs in the test's event loop (port 0) with a fake agent that asks two questions in a row
(tests/support/fakes.py ``AskingBackend``); the command runs as a subprocess, as a person runs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from e2a_grpc import cli
from e2a_grpc.chat.events import InputRequired
from e2a_grpc.model import WaitReason
from tests.conftest import REPO_ROOT, InProcessServer, in_process_server
from tests.support.fakes import AskingBackend
from tests.support.terminal import Terminal
from tests.support.waiting import within

TRANSCRIPTS = Path(__file__).parent / "transcripts"
PERMISSION = InputRequired(
    WaitReason.PERMISSION,
    "May I write notes.txt?",
    {"content": "let me see"},
    options=(
        {"option_id": "allow", "name": "Allow once", "kind": "allow_once"},
        {"option_id": "deny", "name": "Reject", "kind": "reject_once"},
    ),
)
TEXT = InputRequired(WaitReason.INPUT, "What should it say?", {"content": ""})
OPTIONS_PROMPT = "answer (1-2, an option's id or name, or cancel): "
#: A session the tests name, so that what the command prints about it is the same every run.
SESSION = "s-notes"


@pytest.fixture
def agent() -> AskingBackend:
    return AskingBackend([PERMISSION, TEXT])


@pytest_asyncio.fixture
async def server(agent: AskingBackend) -> AsyncIterator[InProcessServer]:
    async with in_process_server(agent) as running:
        yield running


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "e2a_grpc", *args]


def environment(server: InProcessServer) -> dict[str, str]:
    return {**os.environ, "E2A_GRPC_SERVER": server.address}


async def run(server: InProcessServer, *args: str) -> tuple[int, str, str]:
    """The command with stdin, stdout and stderr not a terminal: its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        *command(*args),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO_ROOT,
        env=environment(server),
    )
    try:
        stdout, stderr = await within(process.communicate())
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def transcript(args: tuple[str, ...], code: int, stdout: str, stderr: str) -> str:
    """As tests/e2e/test_cli.py records a command: the command line, its stdout, stderr and exit code."""
    return f"$ e2a-grpc {shlex.join(args)}\n--- stdout\n{stdout}--- stderr\n{stderr}--- exit {code}\n"


def recorded(name: str) -> str:
    return (TRANSCRIPTS / f"{name}.txt").read_text(encoding="utf-8")


@pytest.mark.asyncio
async def test_a_terminal_shows_each_question_reads_the_answer_and_the_answer_streams_on(
    server: InProcessServer, agent: AskingBackend
) -> None:
    args = ("chat", "write the notes")
    async with Terminal.run(command(*args), environment(server)) as terminal:
        await terminal.expect(OPTIONS_PROMPT)
        terminal.type("maybe\n")  # no option: asked again, nothing sent
        await terminal.expect("'maybe' is none of the options\n" + OPTIONS_PROMPT)
        terminal.type("1\n")
        await terminal.expect("answer: ")
        terminal.type("hello there\n")
        code = await terminal.exit_code()
    # A terminal shows stdout and stderr together: the transcript is the screen.
    assert f"$ e2a-grpc {shlex.join(args)}\n{terminal.screen}--- exit {code}\n" == recorded("chat_question_terminal")
    [(session, task, first), (same_session, same_task, second)] = agent.answers
    assert (first, second) == ("allow", "hello there")
    # The command chose a session of its own, and both answers reached it and the task that asked.
    assert session and (same_session, same_task, task) == (session, task, "task-1")


def test_the_readme_shows_the_recorded_terminal_exchange() -> None:
    screen = recorded("chat_question_terminal").removesuffix("--- exit 0\n")
    assert f"```console\n{screen}```" in (REPO_ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.asyncio
async def test_ctrl_d_at_the_prompt_leaves_the_question_waiting_for_a_later_answer(
    server: InProcessServer, agent: AskingBackend
) -> None:
    async with Terminal.run(
        command("chat", "--session-id", SESSION, "write the notes"), environment(server)
    ) as terminal:
        await terminal.expect(OPTIONS_PROMPT)
        terminal.type("\x04")
        assert await terminal.exit_code() == 5
    hint = f"the agent waits for an answer: e2a-grpc chat --session-id {SESSION} --task-id task-1 --answer OPTION\n"
    assert terminal.screen.endswith(OPTIONS_PROMPT + "\n" + hint)
    assert agent.answers == []
    # The question still waits: the command it names answers it, and the next question, in order.
    code, stdout, stderr = await run(
        server, "chat", "--session-id", SESSION, "--task-id", "task-1", "--answer", "Reject", "--answer", "no"
    )
    assert (code, stdout, stderr) == (0, "[input] What should it say?\nanswers: deny, no\n", "")
    assert agent.answers == [(SESSION, "task-1", "deny"), (SESSION, "task-1", "no")]


@pytest.mark.asyncio
async def test_ctrl_c_at_the_prompt_exits_130_without_answering(server: InProcessServer, agent: AskingBackend) -> None:
    async with Terminal.run(
        command("chat", "--session-id", SESSION, "write the notes"), environment(server)
    ) as terminal:
        await terminal.expect(OPTIONS_PROMPT)
        terminal.interrupt()
        assert await terminal.exit_code() == 130
    assert terminal.screen.endswith(f"--session-id {SESSION} --task-id task-1 --answer OPTION\n")
    assert agent.answers == []


@pytest.mark.asyncio
async def test_without_a_terminal_the_question_is_printed_and_the_command_exits_5(
    server: InProcessServer, agent: AskingBackend
) -> None:
    args = ("chat", "--session-id", SESSION, "write the notes")
    assert transcript(args, *await run(server, *args)) == recorded("chat_question_waiting")
    assert agent.answers == []


@pytest.mark.asyncio
async def test_json_prints_the_waiting_frame_and_exits_5(server: InProcessServer) -> None:
    code, stdout, stderr = await run(server, "chat", "--json", "--session-id", SESSION, "write the notes")
    frames = [json.loads(line) for line in stdout.splitlines()]
    assert code == 5 and stderr.startswith("the agent waits for an answer: ")
    waiting = frames[-1]
    assert (waiting["response_kind"], waiting["is_final"], waiting["status"]) == (
        "e2a.input_required",
        True,
        "in_progress",
    )
    assert (waiting["session_id"], waiting["task_id"]) == (SESSION, "task-1")
    assert waiting["body"]["message"] == PERMISSION.message and waiting["body"]["options"] == list(PERMISSION.options)


@pytest.mark.asyncio
async def test_answers_given_with_the_prompt_answer_the_questions_as_they_come(
    server: InProcessServer, agent: AskingBackend
) -> None:
    code, stdout, stderr = await run(server, "chat", "--answer", "allow", "--answer", "hi", "write the notes")
    assert (code, stderr) == (0, "")
    assert stdout == (
        "let me see\n[permission] May I write notes.txt?\n  1. Allow once (allow_once)\n  2. Reject (reject_once)\n"
        "[input] What should it say?\nanswers: allow, hi\n"
    )
    assert [answer for _, _, answer in agent.answers] == ["allow", "hi"]


@pytest.mark.asyncio
async def test_answers_run_out_and_the_next_question_waits(server: InProcessServer, agent: AskingBackend) -> None:
    code, stdout, stderr = await run(server, "chat", "--session-id", SESSION, "--answer", "cancel", "write the notes")
    assert code == 5 and stdout.endswith("[input] What should it say?\n")
    assert (
        stderr
        == f"the agent waits for an answer: e2a-grpc chat --session-id {SESSION} --task-id task-1 --answer TEXT\n"
    )
    assert agent.answers == [(SESSION, "task-1", "cancel")]


@pytest.mark.asyncio
async def test_an_answer_naming_no_option(server: InProcessServer, agent: AskingBackend) -> None:
    # Known options: refused here, nothing sent, the question still waits.
    code, _, stderr = await run(server, "chat", "--session-id", SESSION, "--answer", "perhaps", "write the notes")
    assert code == 2
    assert stderr.splitlines() == [
        "error: --answer 'perhaps' is none of the question's options",
        f"the agent waits for an answer: e2a-grpc chat --session-id {SESSION} --task-id task-1 --answer OPTION",
    ]
    # Options not known here (--task-id): the agent refuses it, and the question stays open.
    code, _, stderr = await run(server, "chat", "--session-id", SESSION, "--task-id", "task-1", "--answer", "perhaps")
    assert (code, stderr) == (1, "error: invalid_answer: the answer names none of the options\n")
    code, stdout, _ = await run(server, "chat", "--session-id", SESSION, "--task-id", "task-1", "--answer", "1")
    assert code == 1  # a number is what the terminal shows, not an option's id or name
    code, stdout, _ = await run(
        server, "chat", "--session-id", SESSION, "--task-id", "task-1", "--answer", "ALLOW", "--answer", "x"
    )
    assert (code, stdout.splitlines()[-1]) == (0, "answers: allow, x")
    assert agent.answers == [(SESSION, "task-1", "allow"), (SESSION, "task-1", "x")]


@pytest.mark.asyncio
async def test_an_answer_for_a_task_that_waits_for_nothing_is_the_agents_error(server: InProcessServer) -> None:
    code, stdout, stderr = await run(
        server, "chat", "--session-id", SESSION, "--task-id", "task-9", "--answer", "allow"
    )
    assert (code, stdout, stderr) == (1, "", "error: no_question_pending: no question waits on task task-9\n")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--task-id", "t", "--answer", "a"), "error: --task-id needs --session-id: the session the question was asked in"),
        (("--task-id", "t", "--session-id", "s"), "error: --task-id needs --answer: the answer to the question waiting on that task"),
        (("--task-id", "t", "--session-id", "s", "--answer", "a", "hi"), "error: with --task-id the request is the answer: give it as --answer, not as TEXT"),
        ((), "error: nothing to send: give some text"),
        (("--answer", "a"), "error: nothing to send: give some text"),
        (("--answer", " ", "hi"), "error: --answer: an answer is empty"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2_before_any_call(
    args: tuple[str, ...], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["chat", "--server", "127.0.0.1:1", *args]) == 2  # no server there: nothing was sent
    assert capsys.readouterr().err == error + "\n"
