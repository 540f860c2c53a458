"""An ACP agent run by the ``acp`` backend: its subprocess, and ACP spoken to it over stdio.

ACP is JSON-RPC 2.0, one message per line, camelCase on the wire. The ``session/update``
notifications of a prompt turn become events (``event_for``: message and thought text, tool calls;
the other kinds pass through as ``acp.session_update``) for the turn's call (``Turn``).

The JSON-RPC client is the ACP SDK's low-level ``Connection`` (request ids, pending requests,
dispatch of the agent's messages), given raw JSON rather than the SDK's typed models so that
updates reach E2A bodies exactly as the agent sent them. It runs on ``_LineTransport`` instead of
the SDK's stdio transport, which decodes with the standard ``json`` module: that one accepts NaN
and Infinity, bounds no line, and lets a line that is not a JSON-RPC message stop its receive loop.

Agent requests to the client are always answered: permission requests go to the turn's client
(``Turn.ask``) or get the backend's own answer; everything else (``fs/*``, ``terminal/*``, ...)
"method not found", which is also what the capabilities the backend sends in ``initialize`` announce.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2a_grpc import jsontext
from e2a_grpc.backends.acp_permissions import permission_question, policy_outcome, question_options
from e2a_grpc.chat.coalesce import EventInbox
from e2a_grpc.chat.events import BackendError, Delta, Event, InputRequired, Passthrough
from e2a_grpc.chat.timers import OffLoopTimer
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import DeltaKind, ErrorCode, ResponseKind, SourceProtocol
from e2a_grpc.settings import PermissionAnswer

try:
    from acp import AGENT_METHODS, CLIENT_METHODS, RequestError
    from acp.connection import Connection
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"the acp backend needs the ACP SDK: pip install 'agent-client-protocol==0.12.*' ({exc})"
    ) from exc

log = logging.getLogger(__name__)

#: How long an agent may take to exit once its stdin is closed, and again after SIGTERM.
EXIT_GRACE_SECONDS = 0.5
#: Longest line (one JSON-RPC message) read from an agent; multimodal content makes lines large.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: How much of an agent's stderr is kept to explain a crash.
STDERR_TAIL_BYTES = 4096
#: Server environment variables an agent must not inherit (secrets of this server).
_PRIVATE_ENV = ("E2A_GRPC_TOKEN",)

#: The agent's ACP methods this client calls (the backend calls most), and the client's it serves.
INITIALIZE = AGENT_METHODS["initialize"]
SESSION_NEW = AGENT_METHODS["session_new"]
SESSION_PROMPT = AGENT_METHODS["session_prompt"]
SESSION_CANCEL = AGENT_METHODS["session_cancel"]
_SESSION_UPDATE = CLIENT_METHODS["session_update"]
_REQUEST_PERMISSION = CLIENT_METHODS["session_request_permission"]


class _LineTransport:
    """The SDK Connection's transport: one JSON message per line on the agent's stdin and stdout.

    Lines are read with ``jsontext.loads`` (no NaN or Infinity) and only well-formed JSON-RPC
    messages reach the Connection, so nothing an agent writes can break its receive loop.
    """

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._pid = process.pid
        #: Set when the agent's stdout ended; ``failure`` says why if that was not an end of file.
        self.ended = asyncio.Event()
        self.failure: str | None = None

    async def send(self, message: dict[str, Any]) -> None:
        if self._stdin.is_closing():
            raise ConnectionResetError("the ACP agent's stdin is closed")
        self._stdin.write(jsontext.dumps(message, "acp").encode() + b"\n")
        await self._stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        try:
            while line := await self._stdout.readline():
                if (message := self._message(line)) is not None:
                    return message
        except ValueError:  # a line over the limit: the stream cannot be resynchronised
            self.failure = f"the ACP agent sent a message longer than {MAX_MESSAGE_BYTES} bytes"
            log.warning("ACP agent %d: %s; killing it", self._pid, self.failure)
        self.ended.set()
        return None

    async def close(self) -> None:
        self._stdin.close()

    def _message(self, line: bytes) -> dict[str, Any] | None:
        """The JSON-RPC message on a line, or None (logged) for one the Connection must not see."""
        if not line.strip():
            return None
        try:
            message = jsontext.loads(line.decode(), "acp")
        except (UnicodeDecodeError, E2AFieldError):
            log.warning("ACP agent %d wrote a line that is not JSON text; ignored", self._pid)
            return None
        if not isinstance(message, dict):
            log.warning("ACP agent %d wrote JSON that is not a JSON-RPC message; ignored", self._pid)
            return None
        if message.get("method") is not None:
            return message
        request_id = message.get("id")
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            log.warning("ACP agent %d sent a response with an id this client never used; ignored", self._pid)
            return None
        error = message.get("error")
        if "error" in message and not (isinstance(error, dict) and _is_int(error.get("code"))):
            # The Connection fails on an error that is no object and reads a missing code as
            # -32603; a null code is what _agent_error reports as a malformed error.
            message["error"] = {"code": None}
        return message


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(eq=False)
class Question:
    """A permission request of the agent, put to the client: the agent's JSON-RPC request waits for
    ``outcome`` (the SDK Connection runs each request of the agent as a task of its own)."""

    asked: InputRequired
    #: How much of the turn's text the agent had sent when it asked: the frames before the question.
    text_end: int
    outcome: asyncio.Future[dict[str, Any]]
    #: Runs out ``acp_permission_timeout_seconds`` after the question reached the client.
    timer: OffLoopTimer | None = None

    def answer(self, outcome: dict[str, Any]) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if not self.outcome.done():
            self.outcome.set_result(outcome)


@dataclass(eq=False)
class Turn:
    """A prompt turn on an agent process: its ``session/prompt`` call in flight, and where its session
    updates go, as events (read by one Chat call, or by each of the calls that answer its questions)."""

    session_id: str
    events: EventInbox
    response: asyncio.Task[dict[str, Any]]
    #: Its permission requests go to the client; otherwise the backend answers them itself.
    askable: bool
    #: The ``task_id`` of the frames that ask its questions, which a call that answers one names. One
    #: per turn, not per question: the answering call's frames echo it, the next question's too.
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    #: The text of the agent's message chunks so far; each call's result ``content`` is its part.
    text: list[str] = field(default_factory=list)
    #: Where the part of ``text`` of the call now reading the turn begins.
    read_from: int = 0
    #: Questions the agent asked whose ``InputRequired`` waits in ``events``, in that order.
    asked: deque[Question] = field(default_factory=deque)
    #: The question the turn waits on: it reached the client, no answer yet.
    waiting: Question | None = None
    #: Nobody answered its question in time: the timeout policy did, and nobody reads the rest.
    timed_out: bool = False

    def ask(self, params: dict[str, Any], options: tuple[dict[str, Any], ...]) -> asyncio.Future[dict[str, Any]]:
        """Put the agent's permission request in line for the client; the future is its answer."""
        question = Question(
            permission_question(params, options), len(self.text), asyncio.get_running_loop().create_future()
        )
        self.asked.append(question)
        self.events.put(question.asked)
        return question.outcome

    def text_until(self, end: int) -> str:
        """The text of the call reading the turn, up to ``end``, where the next call's begins."""
        text = "".join(self.text[self.read_from : end])
        self.read_from = end
        return text

    def questions(self) -> list[Question]:
        """Every question not answered yet, the one the turn waits on first; none is kept after."""
        pending = [*([self.waiting] if self.waiting is not None else ()), *self.asked]
        self.waiting = None
        self.asked.clear()
        return pending


class AgentProcess:
    """One agent subprocess, the SDK JSON-RPC connection over its stdio, and its stderr tail."""

    def __init__(self, process: asyncio.subprocess.Process, own_answer: PermissionAnswer) -> None:
        self.process = process
        self.pid = process.pid
        #: How the backend answers the permission requests that do not go to the client.
        self._own_answer = own_answer
        self._turn: Turn | None = None
        self._stderr_tail = bytearray()
        self._stderr_reader = asyncio.create_task(self._read_stderr(), name=f"acp-agent-{self.pid}-stderr")
        self._transport = _LineTransport(process)
        self._connection = Connection(self._serve, self._transport)
        self._ended = asyncio.create_task(self._reap(), name=f"acp-agent-{self.pid}-reaper")
        #: What the agent's ``initialize`` said it takes in a prompt beyond text and resource links.
        self.prompt_capabilities: dict[str, Any] = {}

    @classmethod
    async def spawn(cls, command: Sequence[str], own_answer: PermissionAnswer) -> AgentProcess:
        env = {key: value for key, value in os.environ.items() if key not in _PRIVATE_ENV}
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                limit=MAX_MESSAGE_BYTES,
                # Its own process group: closing the agent also ends what it started (shell
                # wrappers, tools), and a Ctrl-C meant for the server does not hit it directly.
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendError(
                ErrorCode.AGENT_UNAVAILABLE, f"cannot start the ACP agent {command[0]!r}: {exc}"
            ) from None
        log.info("started ACP agent %s (pid %d)", Path(command[0]).name, process.pid)
        return cls(process, own_answer)

    @property
    def alive(self) -> bool:
        return not self._ended.done()

    # --- requests --------------------------------------------------------------------------------

    async def call(self, method: str, params: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a request and wait for its result; failures become BackendError."""
        try:
            result = await asyncio.wait_for(self._connection.send_request(method, params), timeout)
        except TimeoutError:
            raise BackendError(
                ErrorCode.AGENT_UNRESPONSIVE, f"the ACP agent did not answer {method} within {timeout:g} s"
            ) from None
        except RequestError as exc:
            raise _agent_error(method, exc) from None
        except ConnectionError:  # the Connection ended: the agent exited or was closed
            await asyncio.wait({self._ended})
            details: dict[str, Any] = {"exit_status": self.process.returncode, "acp_method": method}
            if tail := self.stderr_tail():
                details["stderr_tail"] = tail
            reason = self._transport.failure or (
                f"the ACP agent exited with status {self.process.returncode} during {method}"
            )
            raise BackendError(ErrorCode.AGENT_CRASHED, reason, details) from None
        if not isinstance(result, dict):
            raise BackendError(
                ErrorCode.AGENT_PROTOCOL_ERROR, f"the ACP agent answered {method} without a result object"
            )
        return result

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionError):  # an agent that is gone needs no notification
            await self._connection.send_notification(method, params)

    # --- what the agent sends --------------------------------------------------------------------

    def start_prompt(self, session_id: str, params: dict[str, Any], events: EventInbox, askable: bool) -> Turn:
        """Send ``session/prompt``; its updates go to ``events`` until the turn is closed."""
        response = asyncio.create_task(self.call(SESSION_PROMPT, {**params, "sessionId": session_id}))
        response.add_done_callback(lambda _: events.close())
        # A turn given up on (cancelled, killed) never reads its outcome: asyncio must not report it.
        response.add_done_callback(lambda task: task.cancelled() or task.exception())
        self._turn = Turn(session_id, events, response, askable)
        return self._turn

    def close_turn(self, turn: Turn) -> None:
        if self._turn is turn:
            self._turn = None  # updates that still arrive for it are dropped

    async def _serve(self, method: str, params: Any, is_notification: bool) -> dict[str, Any] | None:
        """The Connection's handler: takes session updates and answers the agent's requests."""
        if is_notification:
            turn = self._turn
            if (
                method == _SESSION_UPDATE
                and turn is not None
                and isinstance(params, dict)
                and params.get("sessionId") == turn.session_id
            ):
                turn.events.put(event_for(params, turn.text))
            return None
        if method == _REQUEST_PERMISSION:
            options = question_options(params)
            turn = self._turn
            if (
                turn is not None
                and turn.askable
                and options
                and not turn.events.closed
                and isinstance(params, dict)
                and params.get("sessionId") == turn.session_id
            ):
                log.info("ACP agent %d asked for permission: the question goes to the client", self.pid)
                return {"outcome": await turn.ask(params, options)}
            outcome = policy_outcome(options, self._own_answer)
            log.info("ACP agent %d asked for permission: %s (policy %s)", self.pid, outcome, self._own_answer)
            return {"outcome": outcome}
        log.info("ACP agent %d called %s: answered method not found", self.pid, method)
        raise RequestError.method_not_found(method)

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while True:
            try:
                line = await stderr.readline()
            except ValueError:  # a line over the limit, already discarded by the reader
                continue
            if not line:
                return
            log.debug("agent stderr (pid %d): %s", self.pid, line.decode(errors="replace").rstrip("\r\n"))
            self._stderr_tail += line
            del self._stderr_tail[:-STDERR_TAIL_BYTES]

    def stderr_tail(self) -> str:
        return self._stderr_tail.decode(errors="replace")

    # --- ending ----------------------------------------------------------------------------------

    async def _reap(self) -> None:
        """Once the agent's stdout ended: its exit (killed if it lingers) and the rest of its stderr."""
        await self._transport.ended.wait()
        if self._transport.failure is not None:
            self.kill()
        try:
            await asyncio.wait_for(self.process.wait(), EXIT_GRACE_SECONDS)
        except TimeoutError:
            self.kill()
            await self.process.wait()
        await asyncio.wait({self._stderr_reader}, timeout=EXIT_GRACE_SECONDS)
        log.info("ACP agent %d exited with status %s", self.pid, self.process.returncode)

    def kill(self) -> None:
        """SIGKILL the agent's process group: the agent and whatever it started."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    async def close(self) -> None:
        """End the agent: EOF on its stdin, then SIGTERM, then SIGKILL, each after a short grace.

        The kill in ``finally`` is synchronous, so the process ends even when this is cancelled.
        It goes to the whole process group even after the agent exited, for what the agent left
        running (which would also keep its stdout open).
        """
        try:
            if self.process.returncode is None:
                await self._transport.close()
                await asyncio.wait({self._ended}, timeout=EXIT_GRACE_SECONDS)
            if self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGTERM)
                await asyncio.wait({self._ended}, timeout=EXIT_GRACE_SECONDS)
        finally:
            self.kill()
        await asyncio.wait({self._ended}, timeout=EXIT_GRACE_SECONDS)
        # A descendant that left the process group can keep the pipes open: stop reading them.
        await self._connection.close()
        for task in (self._ended, self._stderr_reader):
            task.cancel()
        await asyncio.gather(self._ended, self._stderr_reader, return_exceptions=True)


def _agent_error(method: str, error: RequestError) -> BackendError:
    """The agent's own JSON-RPC error, passed through; a malformed one is a protocol error."""
    if not _is_int(error.code):
        return BackendError(ErrorCode.AGENT_PROTOCOL_ERROR, f"the ACP agent answered {method} with a malformed error")
    # The Connection keeps code, message and data; an absent data reads as null, so null is left out.
    payload: dict[str, Any] = {"code": error.code, "message": str(error)}
    details: dict[str, Any] = {"acp_method": method}
    if error.data is not None:
        payload["data"] = details["data"] = error.data
    return BackendError(
        error.code, str(error), details, {"protocol": SourceProtocol.ACP, "type": "jsonrpc_error", "payload": payload}
    )


def event_for(params: dict[str, Any], text: list[str]) -> Event:
    """The event for one ``session/update``; message text is also appended to ``text``."""
    update = params.get("update")
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    if kind in ("agent_message_chunk", "agent_thought_chunk"):
        assert isinstance(update, dict)
        content = update.get("content")
        if isinstance(content, dict) and content.get("type") == "text" and isinstance(content.get("text"), str):
            if kind == "agent_message_chunk":
                text.append(content["text"])
                return Delta(DeltaKind.TEXT, content["text"])
            return Delta(DeltaKind.REASONING, content["text"])
        if isinstance(content, dict):
            mime_type = content.get("mimeType")
            return Delta(DeltaKind.CUSTOM, content, mime_type if isinstance(mime_type, str) else None)
    if kind in ("tool_call", "tool_call_update"):
        assert isinstance(update, dict)
        return Delta(DeltaKind.TOOL, update)
    return Passthrough(ResponseKind.ACP_SESSION_UPDATE, params)
