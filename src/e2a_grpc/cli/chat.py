"""``e2a-grpc chat``: send text to the service's Chat RPC, print the answer as it streams, and answer
the agent's questions (at the terminal, or with ``--answer``)."""

from __future__ import annotations

import argparse
import collections
import shlex
import sys
import uuid
from pathlib import Path
from typing import Any

import grpc

from e2a_grpc.cli.exits import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_WAITING,
)
from e2a_grpc.cli.options import add_setting_options, settings_from
from e2a_grpc.cli.service import connect
from e2a_grpc.client import ConversionClient, ServiceError, chat
from e2a_grpc.client.chat_text import ChatTextPrinter
from e2a_grpc.client.questions import Question, ask
from e2a_grpc.client.terminal_input import read_line
from e2a_grpc.model import E2AEnvelope, E2AResponse, ResponseStatus
from e2a_grpc.settings import ClientSettings


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "chat",
        help="send text to the service's Chat RPC and print the answer as it streams",
        description="Send TEXT to a running service (AgentService.Chat) and print the answer as it arrives: its "
        "text, then reasoning ('thinking:') and tool calls ('[tool] ...') on lines of their own (in colour on a "
        "terminal). Every frame is checked against the E2A stream invariants (spec section 12). When the agent "
        "asks a question and waits (e2a.input_required), a terminal shows it with its numbered options and "
        "reads the answer (a number, an option's id or name, or 'cancel'; for a question without options, a "
        f"line of text; Ctrl-D leaves it unanswered, exit {EXIT_WAITING}; Ctrl-C too, exit {EXIT_INTERRUPTED}), "
        "then the answer's frames stream on. With --json, or when stdin or stdout is not a terminal, the "
        f"question is printed and the command exits {EXIT_WAITING}, naming the --session-id and --task-id "
        "that answer it.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("text", nargs="?", help="what to say (none with --task-id: the answer is --answer)")
    add_setting_options(parser, ClientSettings, "server")
    parser.add_argument("--method", default="chat.send", help="envelope method (default: %(default)s)")
    parser.add_argument(
        "--agent-id",
        help="the agent to talk to, on a server with a routing table (serve --agents / --agent); default: its "
        "default agent",
    )
    parser.add_argument("--session-id", help="session to continue (default: a new one for this command)")
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="ANSWER",
        help="answer the agent's next question without asking: an option's id or name, 'cancel', or the text "
        "for a question without options; repeat it for questions that follow, in order",
    )
    parser.add_argument(
        "--task-id",
        help="the waiting task a question is on (the task_id of its e2a.input_required frame): the first "
        "--answer answers it; needs --session-id",
    )
    parser.add_argument("--json", action="store_true", help="print each frame as a line of E2A wire JSON instead")
    parser.add_argument(
        "--timeout",
        type=float,
        help=f"deadline in seconds of each call (not the time at a prompt); exit {EXIT_TIMEOUT}",
    )
    add_setting_options(parser, ClientSettings, "token_env")
    parser.add_argument("--tls-ca", type=Path, help="CA certificate (PEM) to reach --server over TLS")
    parser.set_defaults(run=run)


#: Lines of an agent's stderr shown under its error: the end, where the reason usually is.
_STDERR_TAIL_LINES = 10


def _print_agent_error(final: E2AResponse) -> None:
    """The final e2a.error: its code and message, then the end of the agent's stderr if the server sent it."""
    body = final.body if isinstance(final.body, dict) else {}
    print(f"error: {body.get('code')}: {body.get('message')}", file=sys.stderr)
    details = body.get("details")
    stderr_tail = details.get("stderr_tail") if isinstance(details, dict) else None
    if isinstance(stderr_tail, str) and stderr_tail.strip():
        print("agent stderr (last lines):", file=sys.stderr)
        for line in stderr_tail.rstrip("\n").splitlines()[-_STDERR_TAIL_LINES:]:
            print(f"  {line}", file=sys.stderr)


class _Unanswered(Exception):
    """A question stays unanswered here: the command ends with ``exit_code`` and says how to answer it."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


def _chat_usage_error(args: argparse.Namespace) -> str | None:
    if any(not answer.strip() for answer in args.answer):
        return "--answer: an answer is empty"
    if args.task_id is None:
        if args.text is None or not args.text.strip():
            return "nothing to send: give some text"
        return None
    if args.text is not None:
        return "with --task-id the request is the answer: give it as --answer, not as TEXT"
    if not args.answer:
        return "--task-id needs --answer: the answer to the question waiting on that task"
    if not args.session_id:
        return "--task-id needs --session-id: the session the question was asked in"
    return None


def _chat_envelope(
    args: argparse.Namespace,
    params: dict[str, Any],
    *,
    session_id: str | None,
    task_id: str | None = None,
    context_id: str | None = None,
) -> E2AEnvelope:
    envelope = E2AEnvelope(
        method=args.method,
        agent_id=args.agent_id,
        session_id=session_id,
        task_id=task_id,
        context_id=context_id,
        is_stream=True,
        channel="cli",
        params=params,
    )
    envelope.ensure_timestamp()
    return envelope


def _chat_call(
    client: ConversionClient, envelope: E2AEnvelope, args: argparse.Namespace, metadata: tuple[tuple[str, str], ...]
) -> E2AResponse | None:
    """One Chat call, its frames printed as they arrive; its final frame."""
    printer = ChatTextPrinter(sys.stdout, styled=sys.stdout.isatty())
    final = None
    try:
        for frame in chat(client.channel, envelope, timeout=args.timeout, metadata=metadata):
            final = frame
            if args.json:
                sys.stdout.write(frame.to_json() + "\n")
                sys.stdout.flush()
            else:
                printer.frame(frame)
    except grpc.RpcError as error:
        raise ServiceError.from_rpc_error(error) from None
    finally:
        printer.finish()  # an error line, if any, starts on a line of its own
    return final


def _print_how_to_answer(question: Question) -> None:
    if question.session_id is None or question.task_id is None:
        print("the agent waits for an answer (its question names no session or task to answer it in)", file=sys.stderr)
        return
    command = shlex.join(["e2a-grpc", "chat", "--session-id", question.session_id, "--task-id", question.task_id])
    print(
        f"the agent waits for an answer: {command} --answer {'OPTION' if question.options else 'TEXT'}", file=sys.stderr
    )


def _answer_params(question: Question, answers: collections.deque[str], *, interactive: bool) -> dict[str, Any]:
    """The next answer's ``params``: the next ``--answer``, else what the person types at the terminal."""
    if answers:
        given = answers.popleft()
        params = question.answer_params(given)
        if params is None:
            print(f"error: --answer {given!r} is none of the question's options", file=sys.stderr)
            raise _Unanswered(EXIT_BAD_INPUT)
        return params
    if not interactive:
        raise _Unanswered(EXIT_WAITING)
    try:
        return ask(question, read_line, sys.stderr)
    except EOFError:
        print()  # end the prompt's line
        raise _Unanswered(EXIT_WAITING) from None
    except KeyboardInterrupt:
        print()
        raise _Unanswered(EXIT_INTERRUPTED) from None


def run(args: argparse.Namespace) -> int:
    problem = _chat_usage_error(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    answers = collections.deque(args.answer)
    if args.task_id is not None:
        envelope = _chat_envelope(args, {"text": answers.popleft()}, session_id=args.session_id, task_id=args.task_id)
    else:
        # Always a session: a question can only be answered in the session it was asked in (the acp
        # backend stops a call's agent process after a call without one), and the agent asks during
        # the call, too late to choose one then.
        envelope = _chat_envelope(args, {"text": args.text}, session_id=args.session_id or str(uuid.uuid4()))
    token = settings_from(ClientSettings, args).bearer_token()
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    interactive = not args.json and sys.stdin.isatty() and sys.stdout.isatty()
    try:
        # One connection for the whole exchange: the answer reaches the server process (with `serve
        # --workers`, the worker) that holds the question.
        with connect(args) as client:
            while True:
                final = _chat_call(client, envelope, args, metadata)
                question = Question.of(final)
                if question is None:
                    break
                try:
                    params = _answer_params(question, answers, interactive=interactive)
                except _Unanswered as unanswered:
                    _print_how_to_answer(question)
                    return unanswered.exit_code
                envelope = _chat_envelope(
                    args,
                    params,
                    session_id=question.session_id,
                    task_id=question.task_id,
                    context_id=question.context_id,
                )
    except ServiceError as error:
        if error.code != grpc.StatusCode.DEADLINE_EXCEEDED or args.timeout is None:
            raise
        print(f"error: no complete answer within --timeout {args.timeout:g} s (DEADLINE_EXCEEDED)", file=sys.stderr)
        return EXIT_TIMEOUT
    if final is not None and final.status == ResponseStatus.FAILED:
        _print_agent_error(final)
        return EXIT_FAILED
    return EXIT_OK
