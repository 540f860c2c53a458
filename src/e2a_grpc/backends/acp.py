"""The ``acp`` backend: runs an ACP agent command as a subprocess and speaks ACP to it over stdio.

ACP (research/FACTS.md section 4) is JSON-RPC 2.0, one message per line, camelCase on the wire.
Per agent process: ``initialize``, then ``session/new`` (cwd from ``params.workspace_dir`` per spec
11.6, else ``params.cwd``, else the configured default), then one ``session/prompt`` per Chat call,
built from the envelope by the ACP adapters (spec section 7). The ``session/update``
notifications of a prompt turn become events (message and thought text, tool calls; the other kinds
pass through as ``acp.session_update``) and the prompt result the final ``Complete``.

The JSON-RPC client is the ACP SDK's low-level ``Connection`` (request ids, pending requests,
dispatch of the agent's messages), given raw JSON rather than the SDK's typed models so that
updates reach E2A bodies exactly as the agent sent them. It runs on ``_LineTransport`` instead of
the SDK's stdio transport, which decodes with the standard ``json`` module: that one accepts NaN
and Infinity, bounds no line, and lets a line that is not a JSON-RPC message stop its receive loop.

Processes: envelopes with a ``session_id`` share one agent process and ACP session per session id
(a bounded pool, one prompt at a time per session); without a session id, each call gets its own
process, closed after the call (never pooled: a process keeps what a turn left in it, and callers'
turns must not share that). Agent requests to the client are always answered: everything but
permission requests (``fs/*``, ``terminal/*``, ...) with "method not found", which is also what the
capabilities sent in ``initialize`` announce.

Permission requests (README, "Permission questions"): with the ``ask`` policy, a turn of a session
ends with the question (``AgentIds`` naming the turn, then ``InputRequired``) while its
``session/prompt`` stays in flight and the agent's request waits; the session keeps the turn, and
the session's next call either answers it (its ``task_id`` names the turn) and reads the rest of the
turn, or is refused. A question nobody answers within the timeout is answered by the timeout policy
and the turn goes on unattended (its updates dropped), as do the questions of a call without
``session_id`` (no later call could answer them). The ``allow`` / ``deny`` policies answer at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import os
import signal
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from e2a_grpc import jsontext
from e2a_grpc.backends.acp_permissions import (
    CANCELLED,
    outcome_of,
    permission_question,
    policy_outcome,
    question_options,
)
from e2a_grpc.chat.answers import answer_of
from e2a_grpc.chat.coalesce import EventInbox
from e2a_grpc.chat.events import (
    AgentIds,
    BackendError,
    BackendInfo,
    Complete,
    Delta,
    Event,
    InputRequired,
    Passthrough,
)
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.chat.timers import TURN_TIMERS, OffLoopTimer
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import DeltaKind, E2AEnvelope, ErrorCode, ResponseKind, SourceProtocol
from e2a_grpc.protocols import jsonrpc
from e2a_grpc.protocols.acp import PROMPT_KEY, prompt_request_params, wire_request
from e2a_grpc.settings import BackendName, PermissionAnswer, PermissionPolicy, ServerSettings

try:
    from acp import AGENT_METHODS, CLIENT_METHODS, RequestError
    from acp.connection import Connection
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"the acp backend needs the ACP SDK: pip install 'agent-client-protocol==0.12.*' ({exc})"
    ) from exc

log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return importlib.metadata.version("e2a-grpc")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "unknown"


#: The ACP version this client's handling of updates and results is written for.
ACP_PROTOCOL_VERSION = 1
#: How long a cancelled prompt turn may take to answer ``session/cancel`` before its agent is killed.
CANCEL_GRACE_SECONDS = 1.0
#: How long ``initialize`` and ``session/new`` may take (agents may load models or tools first).
START_TIMEOUT_SECONDS = 30.0
#: How long an agent may take to exit once its stdin is closed, and again after SIGTERM.
EXIT_GRACE_SECONDS = 0.5
#: Longest line (one JSON-RPC message) read from an agent; multimodal content makes lines large.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: How much of an agent's stderr is kept to explain a crash.
STDERR_TAIL_BYTES = 4096
#: Server environment variables an agent must not inherit (secrets of this server).
_PRIVATE_ENV = ("E2A_GRPC_TOKEN",)
_CLIENT_INFO = {"name": "e2a-grpc", "title": "E2A gRPC service", "version": _version()}
# This client implements no client-side methods: agents must not call fs/* or terminal/* (they
# get "method not found" if they do).
_CLIENT_CAPABILITIES = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
_SETTINGS = ServerSettings.model_fields

_INITIALIZE = AGENT_METHODS["initialize"]
_SESSION_NEW = AGENT_METHODS["session_new"]
_SESSION_PROMPT = AGENT_METHODS["session_prompt"]
_SESSION_CANCEL = AGENT_METHODS["session_cancel"]
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
class _Question:
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
class _Turn:
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
    asked: deque[_Question] = field(default_factory=deque)
    #: The question the turn waits on: it reached the client, no answer yet.
    waiting: _Question | None = None
    #: Nobody answered its question in time: the timeout policy did, and nobody reads the rest.
    timed_out: bool = False

    def ask(self, params: dict[str, Any], options: tuple[dict[str, Any], ...]) -> asyncio.Future[dict[str, Any]]:
        """Put the agent's permission request in line for the client; the future is its answer."""
        question = _Question(
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

    def questions(self) -> list[_Question]:
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
        self._turn: _Turn | None = None
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

    def start_prompt(self, session_id: str, params: dict[str, Any], events: EventInbox, askable: bool) -> _Turn:
        """Send ``session/prompt``; its updates go to ``events`` until the turn is closed."""
        response = asyncio.create_task(self.call(_SESSION_PROMPT, {**params, "sessionId": session_id}))
        response.add_done_callback(lambda _: events.close())
        # A turn given up on (cancelled, killed) never reads its outcome: asyncio must not report it.
        response.add_done_callback(lambda task: task.cancelled() or task.exception())
        self._turn = _Turn(session_id, events, response, askable)
        return self._turn

    def close_turn(self, turn: _Turn) -> None:
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


#: Prompt content an agent takes only when its ``promptCapabilities`` name it (ACP: every agent takes
#: text and resource links; a client must not send the other kinds unasked).
_GATED_CONTENT = {"image": "image", "audio": "audio", "resource": "embeddedContext"}


def _prompt_capabilities(initialized: dict[str, Any]) -> dict[str, Any]:
    capabilities = initialized.get("agentCapabilities")
    prompt = capabilities.get("promptCapabilities") if isinstance(capabilities, dict) else None
    return prompt if isinstance(prompt, dict) else {}


def unsupported_content(prompt: Any, capabilities: dict[str, Any]) -> str | None:
    """Why the agent cannot take this prompt (a content block of a kind it did not declare), or None."""
    for index, block in enumerate(prompt if isinstance(prompt, list) else ()):
        kind = block.get("type") if isinstance(block, dict) else None
        capability = _GATED_CONTENT.get(kind) if isinstance(kind, str) else None
        if capability is not None and capabilities.get(capability) is not True:
            return (
                f"prompt[{index}] is {kind} content, which the ACP agent does not take "
                f"(its promptCapabilities.{capability} is not true)"
            )
    return None


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


@dataclass
class _Session:
    """A pooled agent process with its ACP session, for one E2A session id."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    agent: AgentProcess | None = None
    acp_session_id: str = ""
    cwd: str = ""
    #: The agent's prompt turn no call is reading: it waits on a question, or (timed out) runs on
    #: unattended. The session's next call answers the question or waits for the unattended turn.
    turn: _Turn | None = None


class AcpBackend:
    """Chat through an ACP agent subprocess."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        default_cwd: Path | None = None,
        permission_policy: PermissionPolicy = _SETTINGS["acp_permission_policy"].default,
        permission_timeout_seconds: float = _SETTINGS["acp_permission_timeout_seconds"].default,
        permission_timeout_policy: PermissionAnswer = _SETTINGS["acp_permission_timeout_policy"].default,
        max_sessions: int = _SETTINGS["acp_max_sessions"].default,
        max_coalesced_bytes: int = _SETTINGS["chat_coalesce_max_bytes"].default,
    ) -> None:
        if not command:
            raise ValueError("the acp backend needs an agent command")
        permission_policy = PermissionPolicy(permission_policy)
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if permission_timeout_seconds <= 0:
            raise ValueError("permission_timeout_seconds must be positive")
        self.info = BackendInfo(name=BackendName.ACP, source_protocol=SourceProtocol.ACP)
        self._command = tuple(command)
        self._default_cwd = (default_cwd or Path.cwd()).resolve()
        self._asks = permission_policy is PermissionPolicy.ASK
        self._timeout_seconds = permission_timeout_seconds
        self._timeout_answer = PermissionAnswer(permission_timeout_policy)
        # Questions that cannot reach the client get the answer of the timeout policy.
        self._own_answer = self._timeout_answer if self._asks else PermissionAnswer(permission_policy)
        self._max_sessions = max_sessions
        self._max_coalesced_bytes = max_coalesced_bytes
        # Least recently used first: the pool evicts from the front.
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._agents: set[AgentProcess] = set()
        #: Closing agents that exited while their turn waited on a question.
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        # A call with a task_id answers a question (its prompt goes nowhere); the others are prompts.
        params = prompt_params(envelope, prompt) if envelope.task_id is None else None
        if envelope.task_id is not None and envelope.session_id not in self._sessions:
            raise _no_question(envelope.task_id, _nothing_waits(envelope.session_id))
        if envelope.session_id is None:
            assert params is not None
            agent, session_id = await self._start_agent(self._session_cwd(envelope.params))
            try:
                own_turn = self._start_turn(agent, session_id, params, None)
                async for event in self._follow(agent, own_turn, None):
                    yield event
            finally:
                await self._close_agent(agent)
            return
        session = await self._pooled_session(envelope.session_id)
        async with session.lock:
            turn = await self._continued_turn(session, envelope, prompt)
            if turn is None:
                assert params is not None  # a call with a task_id continues a turn, or is refused
                turn = await self._new_turn(session, envelope, params)
            assert session.agent is not None  # a session's turn runs on its agent
            async for event in self._follow(session.agent, turn, session):
                yield event

    async def _new_turn(self, session: _Session, envelope: E2AEnvelope, prompt: dict[str, Any]) -> _Turn:
        """The envelope's prompt, sent in the session (its agent started, or a new ACP session for
        another cwd, as needed)."""
        cwd = self._session_cwd(envelope.params)
        if session.agent is None or not session.agent.alive:
            if session.agent is not None:
                await self._close_agent(session.agent)
                session.agent = None
            session.agent, session.acp_session_id = await self._start_agent(cwd)
            session.cwd = cwd
        elif session.cwd != cwd:
            # An ACP session's cwd is fixed by session/new: another workspace needs a new session.
            session.acp_session_id = await self._new_session(session.agent, cwd)
            session.cwd = cwd
        return self._start_turn(session.agent, session.acp_session_id, prompt, session)

    def _start_turn(
        self, agent: AgentProcess, session_id: str, prompt: dict[str, Any], session: _Session | None
    ) -> _Turn:
        """Send the prompt; a turn of a session may ask the client (policy ``ask``)."""
        refusal = unsupported_content(prompt.get("prompt"), agent.prompt_capabilities)
        if refusal is not None:
            raise BackendError(ErrorCode.CONTENT_NOT_SUPPORTED, refusal)
        # Updates that arrive while the servicer writes a frame wait here; text chunks that piled up
        # behind a slow client become one frame (e2a_grpc.chat.coalesce).
        events = EventInbox(self._max_coalesced_bytes)
        turn = agent.start_prompt(session_id, prompt, events, askable=self._asks and session is not None)
        if session is not None:
            turn.response.add_done_callback(lambda _: self._turn_ended(session, agent, turn))
        return turn

    async def _follow(self, agent: AgentProcess, turn: _Turn, session: _Session | None) -> AsyncGenerator[Event, None]:
        """A prompt turn's events from where the last call left it: to its end (``Complete``, or
        BackendError), or to the agent's next question (``AgentIds`` naming the turn, then
        ``InputRequired``), with which the call ends and the turn waits in ``session``.

        If the caller stops early (cancel, deadline, shutdown), the agent gets ``session/cancel``
        and a second to answer the prompt; an agent that does not is killed.
        """
        waits = False
        try:
            async for event in turn.events:
                if isinstance(event, InputRequired):
                    assert session is not None and turn.asked  # only a turn of a session asks
                    question = turn.waiting = turn.asked.popleft()
                    question.timer = TURN_TIMERS.call_later(self._timeout_seconds, self._unanswered, agent, turn)
                    session.turn = turn
                    waits = True
                    if turn.response.done():  # the agent left already: clean up as if it had left now
                        self._turn_ended(session, agent, turn)
                    yield AgentIds(turn.id, None)
                    yield replace(event, result={"content": turn.text_until(question.text_end)})
                    return
                yield event
            result = turn.response.result()
        finally:
            if not waits:
                await self._end_turn(agent, turn)
        yield Complete({"content": turn.text_until(len(turn.text)), "stop_reason": result.get("stopReason")})

    async def _continued_turn(self, session: _Session, envelope: E2AEnvelope, prompt: Prompt) -> _Turn | None:
        """The turn a call on ``session`` goes on with: the one whose question it answers, answered.
        None: the call sends a new prompt. Raises for a call that names no waiting question while one
        waits, an answer that names none of its options, or a ``task_id`` when no question waits."""
        turn = session.turn
        if turn is not None and turn.timed_out:
            if envelope.task_id == turn.id:
                raise _no_question(turn.id, f"nobody answered in time, so the policy answered {self._timeout_answer}")
            # The call's prompt follows the unattended turn, as a call on a busy session waits for it.
            await asyncio.wait({turn.response})
            turn = session.turn = None
        if turn is not None and turn.response.done() and envelope.task_id != turn.id:
            # The agent ended the turn (or exited) while it asked; the call does not want its end.
            turn = session.turn = None
        if turn is None:
            if envelope.task_id is not None:
                raise _no_question(envelope.task_id, _nothing_waits(envelope.session_id))
            return None
        question = turn.waiting
        assert question is not None  # a turn no call reads waits on a question, or timed out
        details = {"task_id": turn.id, "question": _question_of(question)}
        if envelope.task_id != turn.id:
            raise BackendError(
                ErrorCode.INVALID_REQUEST,
                f"a permission question waits on session {envelope.session_id}: answer it with task_id {turn.id} "
                "and params.option_id (or params.cancel) before sending another prompt",
                details,
            )
        if not turn.response.done():  # else: the agent left; the call gets the rest of the turn, and its end
            answer = answer_of(envelope, prompt, question.asked.options)
            if answer is None:
                ids = ", ".join(option["option_id"] for option in question.asked.options)
                raise BackendError(
                    ErrorCode.INVALID_ANSWER,
                    f"the answer names none of the question's options ({ids}): send params.option_id with one "
                    "of them, or params.cancel; the question still waits",
                    details,
                )
            chosen = "cancel" if answer.cancelled else f"option {answer.option_id}"
            log.info("ACP session %s: the client answered a permission request: %s", envelope.session_id, chosen)
            question.answer(outcome_of(answer))
        turn.waiting = None
        session.turn = None
        return turn

    def _unanswered(self, agent: AgentProcess, turn: _Turn) -> None:
        """A question waited ``acp_permission_timeout_seconds``: the timeout policy answers it (and
        every other question of the turn), and the turn goes on, unattended: its updates are dropped."""
        if turn.waiting is None:
            return
        log.info(
            "ACP agent %d: nobody answered its permission request within %g s; answered by policy %s",
            agent.pid,
            self._timeout_seconds,
            self._timeout_answer,
        )
        turn.timed_out = True
        turn.askable = False
        agent.close_turn(turn)
        turn.events.close()
        for question in turn.questions():
            question.answer(policy_outcome(question.asked.options, self._timeout_answer))

    def _turn_ended(self, session: _Session, agent: AgentProcess, turn: _Turn) -> None:
        """The prompt of a session's turn ended: with nobody reading it, its question is withdrawn and
        an agent that exited is closed; the call that answers gets the turn's end."""
        if session.turn is not turn:
            return  # a call reads it
        if turn.waiting is None:  # it ran on unattended: nobody wants its end
            session.turn = None
            return
        if agent.alive:
            turn.waiting.answer(CANCELLED)  # its request needs an answer all the same
        else:  # its JSON-RPC handlers end with the connection
            if turn.waiting.timer is not None:
                turn.waiting.timer.cancel()
            closing = asyncio.create_task(self._close_agent(agent), name=f"acp-agent-{agent.pid}-close")
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def _end_turn(self, agent: AgentProcess, turn: _Turn) -> None:
        """After the turn's last call: stop routing its updates, and cancel a prompt still running."""
        agent.close_turn(turn)
        if turn.response.done():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CANCEL_GRACE_SECONDS):
                await self._withdraw(agent, turn)
                await asyncio.wait({turn.response})
        if not turn.response.done():
            log.warning(
                "ACP agent %d did not answer session/cancel within %g s; killing it", agent.pid, CANCEL_GRACE_SECONDS
            )
            agent.kill()
            await self._close_agent(agent)

    @staticmethod
    async def _withdraw(agent: AgentProcess, turn: _Turn) -> None:
        """``session/cancel``, and (as ACP requires after it) ``cancelled`` for the turn's questions."""
        await agent.notify(_SESSION_CANCEL, {"sessionId": turn.session_id})
        for question in turn.questions():
            question.answer(CANCELLED)

    async def cancel_task(self, task_id: str) -> None:
        """Cancel the turn that waits on a question (``task_id``: its frames'): the question is answered
        ``cancelled`` and the prompt turn cancelled, as for a cancelled call."""
        for session in list(self._sessions.values()):
            turn = session.turn
            if turn is None or turn.id != task_id or turn.waiting is None:
                continue
            async with session.lock:
                if session.turn is turn and session.agent is not None:
                    session.turn = None
                    await self._end_turn(session.agent, turn)
            return
        log.info("no turn of the ACP agent waits as task %s: nothing to cancel", task_id)

    async def _start_agent(self, cwd: str) -> tuple[AgentProcess, str]:
        """A new agent process, initialized, with a new ACP session in ``cwd``."""
        if self._closed:
            raise BackendError(ErrorCode.SERVER_SHUTTING_DOWN, "the server is shutting down")
        agent = await AgentProcess.spawn(self._command, self._own_answer)
        self._agents.add(agent)
        try:
            if self._closed:  # aclose ran while the process started
                raise BackendError(ErrorCode.SERVER_SHUTTING_DOWN, "the server is shutting down")
            initialized = await agent.call(
                _INITIALIZE,
                {
                    "protocolVersion": ACP_PROTOCOL_VERSION,
                    "clientCapabilities": _CLIENT_CAPABILITIES,
                    "clientInfo": _CLIENT_INFO,
                },
                START_TIMEOUT_SECONDS,
            )
            agent.prompt_capabilities = _prompt_capabilities(initialized)
            if initialized.get("protocolVersion") != ACP_PROTOCOL_VERSION:
                raise BackendError(
                    ErrorCode.AGENT_UNSUPPORTED,
                    f"the ACP agent speaks protocol version {initialized.get('protocolVersion')!r}, "
                    f"this client {ACP_PROTOCOL_VERSION}",
                )
            return agent, await self._new_session(agent, cwd)
        except BaseException:
            await self._close_agent(agent)
            raise

    async def _new_session(self, agent: AgentProcess, cwd: str) -> str:
        result = await agent.call(_SESSION_NEW, {"cwd": cwd, "mcpServers": []}, START_TIMEOUT_SECONDS)
        session_id = result.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise BackendError(ErrorCode.AGENT_PROTOCOL_ERROR, "the ACP agent answered session/new without a sessionId")
        return session_id

    async def _close_agent(self, agent: AgentProcess) -> None:
        try:
            await agent.close()
        finally:
            self._agents.discard(agent)

    async def _pooled_session(self, session_id: str) -> _Session:
        """The pool entry for an E2A session id; a new one may evict the least recently used idle one."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
            return session
        if len(self._sessions) >= self._max_sessions:
            idle = next((key for key, entry in self._sessions.items() if not entry.lock.locked()), None)
            if idle is None:
                raise BackendError(
                    ErrorCode.AGENT_BUSY,
                    f"all {self._max_sessions} ACP sessions are busy; retry later or without session_id",
                )
            await self._close_session(self._sessions.pop(idle))
            # Closing may have let another call create this session id meanwhile.
            if session_id in self._sessions:
                return await self._pooled_session(session_id)
        session = self._sessions[session_id] = _Session()
        return session

    def _session_cwd(self, params: dict[str, Any]) -> str:
        """The session cwd (spec 11.6): ``workspace_dir`` (created), else ``cwd``, else the default."""
        workspace = params.get("workspace_dir")
        if isinstance(workspace, str) and workspace:
            path = Path(workspace).resolve()
            try:
                path.mkdir(parents=True, exist_ok=True)
                return str(path)
            except OSError as exc:
                log.warning("workspace_dir %s is unusable (%s); using cwd or the default", path, exc.strerror)
        cwd = params.get("cwd")
        if isinstance(cwd, str) and cwd:
            return str(Path(cwd).resolve())
        return str(self._default_cwd)

    async def _close_session(self, session: _Session) -> None:
        """Close an evicted session's agent; a turn that waits on a question is cancelled first."""
        turn, session.turn = session.turn, None
        if session.agent is not None:
            if turn is not None:
                await self._end_turn(session.agent, turn)
            await self._close_agent(session.agent)

    async def aclose(self) -> None:
        """Close every agent process (server shutdown); new calls fail from now on. The turns that wait
        on a question are cancelled (their questions answered ``cancelled``) just before."""
        self._closed = True
        waiting = [
            asyncio.wait_for(self._withdraw(session.agent, session.turn), CANCEL_GRACE_SECONDS)
            for session in self._sessions.values()
            if session.turn is not None and session.agent is not None and not session.turn.response.done()
        ]
        self._sessions.clear()
        await asyncio.gather(*waiting, return_exceptions=True)
        await asyncio.gather(*self._closing, return_exceptions=True)
        await asyncio.gather(*(self._close_agent(agent) for agent in list(self._agents)), return_exceptions=True)


def _no_question(task_id: str, why: str) -> BackendError:
    return BackendError(
        ErrorCode.NO_QUESTION_PENDING, f"task_id {task_id} names no waiting question: {why}", {"task_id": task_id}
    )


def _nothing_waits(session_id: str | None) -> str:
    if session_id is None:
        return "questions wait in a session, and the call has no session_id"
    return f"no question waits on session {session_id}"


def _question_of(question: _Question) -> dict[str, Any]:
    """The question as its frame put it (``e2a.input_required``'s body, but the turn's text)."""
    body = question.asked.body()
    del body["result"]
    return body


def prompt_params(envelope: E2AEnvelope, prompt: Prompt) -> dict[str, Any]:
    """The wire ``session/prompt`` params for an envelope whose prompt is ``prompt``, without the ACP
    ``sessionId`` (set per agent).

    The envelope's method is whatever Chat accepted (``chat.send`` or ``session/prompt``), so it is
    mapped to ``session/prompt``; the placeholder session id only satisfies the converter. The params
    go without their ``prompt``, which ``prompt`` holds: the reference merge leaves params that have
    one as they are, with no session id (so the converter refused every such call) and no ``acp_meta``.
    """
    params = {key: value for key, value in envelope.params.items() if key != PROMPT_KEY}
    placeholder = replace(envelope, method=_SESSION_PROMPT, session_id=envelope.session_id or "-", params=params)
    try:
        merged = prompt_request_params(placeholder, prompt.blocks or None)
        call = wire_request(jsonrpc.request(placeholder.jsonrpc_id, _SESSION_PROMPT, merged))
    except E2AFieldError as exc:
        raise BackendError(ErrorCode.INVALID_PROMPT, str(exc)) from None
    wire: dict[str, Any] = call["params"]
    return wire
