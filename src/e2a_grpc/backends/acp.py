"""The ``acp`` backend: runs an ACP agent command as a subprocess (``acp_agent``) and chats with it.

Per agent process: ``initialize``, then ``session/new`` (cwd from ``params.workspace_dir`` per spec
11.6, else ``params.cwd``, else the configured default), then one ``session/prompt`` per Chat call,
built from the envelope by the ACP adapters (spec section 7). The ``session/update``
notifications of a prompt turn become events (message and thought text, tool calls; the other kinds
pass through as ``acp.session_update``) and the prompt result the final ``Complete``.

Processes: envelopes with a ``session_id`` share one agent process and ACP session per session id
(a bounded pool, one prompt at a time per session); without a session id, each call gets its own
process, closed after the call (never pooled: a process keeps what a turn left in it, and callers'
turns must not share that).

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
from collections import OrderedDict
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from e2a_grpc.backends.acp_agent import (
    INITIALIZE,
    SESSION_CANCEL,
    SESSION_NEW,
    SESSION_PROMPT,
    AgentProcess,
    Question,
    Turn,
)
from e2a_grpc.backends.acp_permissions import CANCELLED, outcome_of, policy_outcome
from e2a_grpc.chat.answers import answer_of
from e2a_grpc.chat.coalesce import EventInbox
from e2a_grpc.chat.events import (
    AgentIds,
    BackendError,
    BackendInfo,
    Complete,
    Event,
    InputRequired,
)
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.chat.timers import TURN_TIMERS
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope, ErrorCode, SourceProtocol
from e2a_grpc.protocols import jsonrpc
from e2a_grpc.protocols.acp import PROMPT_KEY, prompt_request_params, wire_request
from e2a_grpc.settings import BackendName, PermissionAnswer, PermissionPolicy, ServerSettings

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
_CLIENT_INFO = {"name": "e2a-grpc", "title": "E2A gRPC service", "version": _version()}
# This client implements no client-side methods: agents must not call fs/* or terminal/* (they
# get "method not found" if they do).
_CLIENT_CAPABILITIES = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
_SETTINGS = ServerSettings.model_fields


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


@dataclass
class _Session:
    """A pooled agent process with its ACP session, for one E2A session id."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    agent: AgentProcess | None = None
    acp_session_id: str = ""
    cwd: str = ""
    #: The agent's prompt turn no call is reading: it waits on a question, or (timed out) runs on
    #: unattended. The session's next call answers the question or waits for the unattended turn.
    turn: Turn | None = None


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

    async def _new_turn(self, session: _Session, envelope: E2AEnvelope, prompt: dict[str, Any]) -> Turn:
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
    ) -> Turn:
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

    async def _follow(self, agent: AgentProcess, turn: Turn, session: _Session | None) -> AsyncGenerator[Event, None]:
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

    async def _continued_turn(self, session: _Session, envelope: E2AEnvelope, prompt: Prompt) -> Turn | None:
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

    def _unanswered(self, agent: AgentProcess, turn: Turn) -> None:
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

    def _turn_ended(self, session: _Session, agent: AgentProcess, turn: Turn) -> None:
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

    async def _end_turn(self, agent: AgentProcess, turn: Turn) -> None:
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
    async def _withdraw(agent: AgentProcess, turn: Turn) -> None:
        """``session/cancel``, and (as ACP requires after it) ``cancelled`` for the turn's questions."""
        await agent.notify(SESSION_CANCEL, {"sessionId": turn.session_id})
        for question in turn.questions():
            question.answer(CANCELLED)

    async def cancel_task(self, task_id: str) -> bool:
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
                    return True
        return False

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
                INITIALIZE,
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
        result = await agent.call(SESSION_NEW, {"cwd": cwd, "mcpServers": []}, START_TIMEOUT_SECONDS)
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


def _question_of(question: Question) -> dict[str, Any]:
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
    placeholder = replace(envelope, method=SESSION_PROMPT, session_id=envelope.session_id or "-", params=params)
    try:
        merged = prompt_request_params(placeholder, prompt.blocks or None)
        call = wire_request(jsonrpc.request(placeholder.jsonrpc_id, SESSION_PROMPT, merged))
    except E2AFieldError as exc:
        raise BackendError(ErrorCode.INVALID_PROMPT, str(exc)) from None
    wire: dict[str, Any] = call["params"]
    return wire
