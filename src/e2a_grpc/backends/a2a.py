"""The ``a2a`` backend: forwards each request to a remote A2A agent with the official ``a2a-sdk`` client.

Each request becomes one streaming ``SendMessage`` (A2A 1.0), or a blocking one when the caller waits
for the answer alone. The transport is the first of ``transports`` (``--a2a-transports``; gRPC, then
JSON-RPC over HTTP + SSE by default) that the agent card offers, chosen by the SDK's client factory:
gRPC's C core does HTTP/2 and protobuf in C, where JSON-RPC costs the proxy httpx's Python and a JSON
parse per answer (BENCHMARKS.md, the a2a-sdk section). Every ``StreamResponse`` the
agent sends is passed on unchanged as an ``a2a.stream_event`` frame (``branch`` + ``payload`` as
A2A JSON), so ``ToA2AStream`` of the frames gives back the agent's own events. Frames carry the
agent's task id and context id from the first event that names them, where the request set none
(``AgentIds``; the rule is in ``e2a_grpc.chat.frames``), so the final frame, projected to A2A, ends
the agent's task rather than a task named after the request id. The final frame
says how the turn ended: ``e2a.complete`` with the agent's text when the task completed or the agent
answered with a Message; ``e2a.input_required`` (reason ``input`` / ``auth``, the status message as
its ``request``) when the task now waits in input-required / auth-required, which a later request
with that ``task_id`` (and its context or session) continues; ``e2a.error`` (``external.protocol ==
"a2a"``) when it failed, was rejected or cancelled, when the stream broke off early, or when the SDK
or the transport failed.

The user's message is the prompt's content blocks, each as its A2A part (``protocols.parts``: text,
data, raw bytes, URLs, as the A2A server received them), or the text; then ``params.files``.

A client cancel or deadline closes the SDK stream (its SSE response or gRPC call) and then asks the
agent to cancel the task (A2A CancelTask): in A2A a task outlives a closed stream, so closing the
stream alone would leave the agent working for nobody.

``a2a-sdk`` is an optional dependency (``pip install 'e2a-grpc[a2a]'``); this module is imported
only when the server is configured with ``--backend a2a``.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import logging
import urllib.parse
import uuid
from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import Any, cast

from e2a_grpc.address import ServerAddress, parse_server_address
from e2a_grpc.chat.events import (
    AgentIds,
    BackendError,
    BackendInfo,
    Complete,
    Event,
    InputRequired,
    Passthrough,
)
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope, E2AFileRef, ErrorCode, ResponseKind, SourceProtocol
from e2a_grpc.protocols import parts as content
from e2a_grpc.protocols.a2a import STREAM_RESPONSE_KEYS, WAIT_REASONS
from e2a_grpc.settings import BackendName

try:
    import grpc
    import httpx

    from e2a_grpc.a2a_sdk_tracing import untrace_when_off

    untrace_when_off()  # before a2a-sdk's client transports are imported: see a2a_sdk_tracing
    from a2a.client import (
        A2ACardResolver,
        A2AClientError,
        A2AClientTimeoutError,
        Client,
        ClientCallContext,
        ClientConfig,
        ClientFactory,
    )
    from a2a.types.a2a_pb2 import (
        AgentCard,
        CancelTaskRequest,
        Message,
        Part,
        Role,
        SendMessageConfiguration,
        SendMessageRequest,
        StreamResponse,
        TaskState,
        TaskStatus,
    )
    from a2a.utils.errors import A2AError, InternalError, TaskNotCancelableError, TaskNotFoundError
    from google.protobuf import json_format
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(f"the a2a backend needs the a2a-sdk package: pip install 'e2a-grpc[a2a]' ({exc})") from exc

log = logging.getLogger(__name__)

#: How long a cancelled request waits for the agent to accept CancelTask: the cancel budget is one second.
REMOTE_CANCEL_TIMEOUT_SECONDS = 1.0
#: How long the end of the agent's stream is waited for once the agent said its last word.
_STREAM_END_SECONDS = 0.1

_TERMINAL_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
# The agent waits for the user: the turn is over and answered, the task goes on in a later turn.
_INTERRUPTED_STATES = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
_FAILED_STATES = {
    TaskState.TASK_STATE_FAILED: ErrorCode.A2A_TASK_FAILED,
    TaskState.TASK_STATE_REJECTED: ErrorCode.A2A_TASK_REJECTED,
    TaskState.TASK_STATE_CANCELED: ErrorCode.A2A_TASK_CANCELED,
}


def message_parts(envelope: E2AEnvelope, prompt: Prompt) -> list[Part]:
    """The parts of the user's message: the prompt's content blocks (``prompt``), each as its A2A part
    (a part that came from A2A comes back as it was: ``protocols.parts``); then the files."""
    parts: list[Part] = []
    for index, block in enumerate(prompt.blocks):
        path = f"envelope.params.{prompt.key}[{index}]"
        try:
            parts.append(json_format.ParseDict(content.a2a_part(block, path), Part()))
        except E2AFieldError as exc:
            raise BackendError(ErrorCode.INVALID_REQUEST, str(exc)) from exc
        except json_format.ParseError as exc:
            raise BackendError(ErrorCode.INVALID_REQUEST, f"{path}: not an A2A part: {exc}") from exc
    for key in ("files", "attachments"):
        refs = envelope.params.get(key)
        if not isinstance(refs, list):
            continue
        for index, raw in enumerate(refs):
            try:
                ref = E2AFileRef.from_dict(raw, f"envelope.params.{key}[{index}]")
            except E2AFieldError as exc:
                raise BackendError(ErrorCode.INVALID_REQUEST, str(exc)) from exc
            parts.append(Part(url=ref.uri, filename=ref.name, media_type=ref.mime_type))
    if not parts:
        raise BackendError(ErrorCode.INVALID_REQUEST, "nothing to send: an A2A message needs text or files")
    return parts


def send_message_request(envelope: E2AEnvelope, prompt: Prompt) -> SendMessageRequest:
    """The A2A SendMessage for an envelope: the user's content and files as one user message."""
    message = Message(
        message_id=envelope.message_id or str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=message_parts(envelope, prompt),
        # A2A groups turns by contextId; a gateway session is the same idea.
        context_id=envelope.context_id or envelope.session_id,
        # Set to continue an existing A2A task: one waiting for input (an ``e2a.input_required`` frame's task_id).
        task_id=envelope.task_id,
    )
    return SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(accepted_output_modes=envelope.expected_output_modes),
        metadata=envelope.a2a_metadata or None,  # the envelope's slot for A2A interop metadata (spec 12.4)
    )


def _text(parts: Iterable[Part]) -> str:
    return "\n".join(part.text for part in parts if part.WhichOneof("content") == "text")


class _Turn:
    """What the agent's events say so far: ids, the task state, and its text for ``result.content``."""

    def __init__(self) -> None:
        self.task_id: str | None = None
        self.context_id: str | None = None
        self.state: TaskState | None = None
        self.status_text = ""  # the agent's message on the latest status, e.g. why a task failed
        self.status_message: dict[str, Any] | None = None  # that message, as A2A JSON
        self.replied = False  # the agent answered with a Message: no task, the turn is over
        self.last: dict[str, Any] = {}
        # One entry per artifact or agent message, in the order they first appeared: a task
        # snapshot repeats artifacts and messages already streamed, and must not repeat their text.
        self._texts: dict[str, str] = {}

    def observe(self, response: StreamResponse, wire: dict[str, Any]) -> None:
        self.last = wire
        branch = response.WhichOneof("payload")
        if branch == "task":
            task = response.task
            self._ids(task.id, task.context_id)
            for message in task.history:
                self._message(message)
            for artifact in task.artifacts:
                self._texts[f"artifact:{artifact.artifact_id}"] = _text(artifact.parts)
            self._status(task.status)
        elif branch == "message":
            self.replied = True
            self._ids(response.message.task_id, response.message.context_id)
            self._message(response.message)
        elif branch == "status_update":
            event = response.status_update
            self._ids(event.task_id, event.context_id)
            self._status(event.status)
        elif branch == "artifact_update":
            update = response.artifact_update
            self._ids(update.task_id, update.context_id)
            key = f"artifact:{update.artifact.artifact_id}"
            chunk = _text(update.artifact.parts)
            self._texts[key] = self._texts.get(key, "") + chunk if update.append else chunk

    def _ids(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id

    def _status(self, status: TaskStatus) -> None:
        self.state = status.state
        self.status_text = _text(status.message.parts)
        self.status_message = json_format.MessageToDict(status.message) if status.HasField("message") else None
        if status.HasField("message"):
            self._message(status.message)

    def _message(self, message: Message) -> None:
        if message.role == Role.ROLE_AGENT:
            self._texts[f"message:{message.message_id}"] = _text(message.parts)

    @property
    def over(self) -> bool:
        """The agent said its last word for this turn; no further event is expected."""
        return self.replied or self.state in _TERMINAL_STATES or self.state in _INTERRUPTED_STATES

    @property
    def summary(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "context_id": self.context_id,
            "state": None if self.state is None else TaskState.Name(self.state),
        }

    def result(self) -> dict[str, Any]:
        # Streamed chunks of one artifact concatenate as they are; separate artifacts and messages
        # (and the text parts of one of them, as in the SDK's get_message_text) are joined by newlines.
        return {"content": "\n".join(text for text in self._texts.values() if text), **self.summary}


async def _read_to_end(responses: AsyncGenerator[StreamResponse, None]) -> None:
    """Read the end of the agent's stream after its last word, ignoring anything more it sends.

    An agent ends the stream right after its last event. Reading that end, rather than closing the
    stream before it, lets httpx put the connection back in the pool: closed with its body unread,
    the connection is dropped, and every turn paid for a new one (TCP connect, and a new connection
    in the agent's server). Bounded: a stream still open after ``_STREAM_END_SECONDS`` is closed as before.
    """
    with contextlib.suppress(TimeoutError, A2AError):
        async with asyncio.timeout(_STREAM_END_SECONDS):
            async for _ in responses:
                pass


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that refuses every cookie (no domain may set one: the standard library's policy)."""
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


#: The port of an ``http(s)://`` gRPC interface URL that names none.
_URL_DEFAULT_PORTS = {"http": 80, "https": 443}


def grpc_interface_address(url: str) -> ServerAddress:
    """Where to dial an agent card's gRPC interface, and whether with TLS.

    ``host:port``, as the SDK's own agents write it, is dialled in plaintext. A2A 1.0 asks production
    cards for an absolute ``https://`` URL on every interface, gRPC's included: TLS with the system's root
    certificates, port 443 unless it names one. A path is left out: a gRPC call's path is its method's.
    Raises ValueError naming what is wrong.
    """
    scheme, separator, _ = url.partition("://")
    if not separator:
        return parse_server_address(url)
    parts = urllib.parse.urlsplit(url)
    default_port = _URL_DEFAULT_PORTS.get(scheme.lower())
    if default_port is None or not parts.netloc:
        raise ValueError(f"gRPC interface URL {url!r}: give host:port, http://host[:port] or https://host[:port]")
    netloc = parts.netloc if parts.port else f"{parts.netloc}:{default_port}"
    return parse_server_address(f"{scheme}://{netloc}")


def _agent_failure(exc: A2AError) -> A2AError:
    """The SDK's error, or the A2A InternalError the agent meant when its gRPC server said UNKNOWN.

    a2a-sdk 1.3's ``GrpcHandler`` lets an exception of the agent's executor that is no A2A error escape
    to grpc, which ends the call UNKNOWN ("Unexpected <class ...>: ..."), where its JSON-RPC handler
    answers InternalError; the SDK's gRPC client then reports a transport failure (A2AClientError).
    Read as the agent's InternalError, a failing agent maps the same on both transports.
    """
    cause = exc.__cause__
    if (
        type(exc) is A2AClientError
        and isinstance(cause, grpc.aio.AioRpcError)
        and cause.code() == grpc.StatusCode.UNKNOWN
    ):
        return InternalError(cause.details() or "the agent failed")
    return exc


def _sdk_error(exc: A2AError, turn: _Turn) -> BackendError:
    if isinstance(exc, A2AClientTimeoutError):
        code = ErrorCode.A2A_TIMEOUT
    elif isinstance(exc, A2AClientError):
        code = ErrorCode.A2A_UNAVAILABLE  # transport: connection, HTTP status, undecodable stream, card
    else:
        code = ErrorCode.A2A_AGENT_ERROR  # the agent answered with an A2A error (JSON-RPC error object)
    return BackendError(
        code,
        f"A2A agent: {exc.message}",
        details=turn.summary,
        external={"protocol": "a2a", "type": type(exc).__name__, "payload": {"message": exc.message, "data": exc.data}},
    )


class A2ABackend:
    """Streams each request to the A2A agent at ``url`` (its base URL, where the agent card is served).

    ``timeout_seconds`` bounds the silence on the agent's stream, connecting, and plain requests over
    HTTP (the card, JSON-RPC); a gRPC call has no read timeout. ``max_message_bytes`` is the largest
    message the agent may send over gRPC.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_seconds: float,
        answer_timeout_seconds: float,
        transports: Sequence[str],
        max_message_bytes: int,
    ) -> None:
        self.info = BackendInfo(name=BackendName.A2A, source_protocol=SourceProtocol.A2A)
        self._url = url
        self._transports = list(transports)
        # grpc's channels take 4 MiB at most by default, where JSON-RPC's reads have no bound: an event the
        # server may pass on (its own --max-message-bytes) must not fail the call over gRPC alone.
        self._channel_options = [("grpc.max_receive_message_length", max_message_bytes)]
        #: The gRPC channels by interface URL: both SDK clients (streaming, blocking) share the agent's one.
        self._channels: dict[str, grpc.aio.Channel] = {}
        # One connection pool for the card and all streams. The SDK does not close an httpx client
        # it is given, so aclose() does. It keeps no cookie: httpx's client stores every Set-Cookie of
        # a response and sends it with every later request, and this client's requests are every
        # user's, so one user's session cookie from the agent would reach the agent with others' turns.
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(timeout_seconds), cookies=_no_cookies())
        #: A blocking send waits for the agent's whole answer: as long as a turn may run, not a silence.
        self._answer_context = ClientCallContext(timeout=answer_timeout_seconds)
        #: The SDK clients made from the agent card: the streaming one, and the blocking one.
        self._clients: dict[bool, Client] = {}
        self._connecting = asyncio.Lock()
        self._streams = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def _connect(self, streaming: bool = True) -> Client:
        """An SDK client (``streaming`` or blocking), made from the agent card on first use (and again
        after a failure).

        Not at startup: the agent may come up after this server, and a request is the first moment
        an unreachable agent matters.
        """
        async with self._connecting:
            if not self._clients:
                try:
                    card = await A2ACardResolver(self._http, self._url).get_agent_card()
                    self._clients = {mode: self._client(card, streaming=mode) for mode in (True, False)}
                except A2AError as exc:
                    raise _sdk_error(exc, _Turn()) from exc
                except ValueError as exc:  # the card offers no transport this client speaks
                    raise BackendError(ErrorCode.A2A_UNSUPPORTED_AGENT, f"A2A agent at {self._url}: {exc}") from exc
            return self._clients[streaming]

    def _client(self, card: AgentCard, *, streaming: bool) -> Client:
        config = ClientConfig(
            streaming=streaming,
            httpx_client=self._http,
            grpc_channel_factory=self._channel,
            supported_protocol_bindings=self._transports,
            # Our order, not the card's: the operator's preference says which transport costs this server least.
            use_client_preference=True,
        )
        return ClientFactory(config).create(card)

    def _channel(self, url: str) -> grpc.aio.Channel:
        # Kept until aclose(), also when a failure drops the clients: a stream of theirs may still use it,
        # and an agent back at the same URL is reached on it again.
        channel = self._channels.get(url)
        if channel is None:
            address = grpc_interface_address(url)  # its ValueError: the card offers nothing this client can dial
            if address.tls:
                credentials = grpc.ssl_channel_credentials()
                channel = grpc.aio.secure_channel(address.target, credentials, options=self._channel_options)
            else:
                channel = grpc.aio.insecure_channel(address.target, options=self._channel_options)
            self._channels[url] = channel
        return channel

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        self._streams += 1
        self._idle.clear()
        turn = _Turn()
        try:
            request = send_message_request(envelope, prompt)
            # A caller that waits for the answer alone gets it as a blocking send, the agent's task as
            # it ended (or a Message): what the agent does to stream its progress is not paid for.
            client = await self._connect(streaming=incremental)
            try:
                # send_message is an async generator (the SDK annotates it as an iterator): closing it
                # explicitly closes the HTTP stream now rather than whenever it is garbage collected.
                responses = cast(
                    AsyncGenerator[StreamResponse, None],
                    client.send_message(request, context=None if incremental else self._answer_context),
                )
                async with contextlib.aclosing(responses):
                    async for response in responses:
                        branch = response.WhichOneof("payload")
                        if branch is None:  # an event kind of a newer A2A version: the SDK dropped its content
                            log.warning("skipped an A2A stream event without a known payload: %s", response)
                            continue
                        # MessageToDict gives A2A's JSON (camelCase names, enum names), as on the wire.
                        wire = json_format.MessageToDict(response)
                        ids_before = (turn.task_id, turn.context_id)
                        turn.observe(response, wire)
                        if (turn.task_id, turn.context_id) != ids_before:
                            # Frames name the agent's task from this one on (where the request named none).
                            yield AgentIds(turn.task_id, turn.context_id)
                        payload = wire[STREAM_RESPONSE_KEYS[branch]]
                        yield Passthrough(
                            ResponseKind.A2A_STREAM_EVENT, {"branch": branch, "payload": payload}, native=response
                        )
                        if turn.over:
                            await _read_to_end(responses)
                            break
            except A2AError as raised:
                exc = _agent_failure(raised)
                if isinstance(exc, A2AClientError) and client in self._clients.values():
                    # The agent may have moved or changed its card: the next request fetches it again.
                    self._clients = {}
                raise _sdk_error(exc, turn) from raised
            except (asyncio.CancelledError, GeneratorExit):
                # The client cancelled, its deadline passed or the server is shutting down; the
                # stream is closed by now, but the agent's task runs on until it is cancelled.
                if turn.task_id is not None and not turn.over:
                    await self._cancel_remote(client, turn.task_id)
                raise
            yield self._final(turn)
        finally:
            self._streams -= 1
            if not self._streams:
                self._idle.set()

    @staticmethod
    def _final(turn: _Turn) -> Complete | InputRequired:
        code = _FAILED_STATES.get(turn.state) if turn.state is not None else None
        if turn.state in _INTERRUPTED_STATES:
            # The task waits for the client: a request with its task id continues it.
            return InputRequired(
                WAIT_REASONS[TaskState.Name(turn.state)],
                turn.status_text,
                turn.result(),
                request=turn.status_message,
            )
        if code is None and turn.over:
            return Complete(turn.result())
        state = turn.summary["state"] or "no event"
        if code is None:
            code, message = ErrorCode.A2A_STREAM_ENDED_EARLY, f"the A2A stream ended before the task finished ({state})"
        else:
            message = f"the A2A task ended in {state}" + (f": {turn.status_text}" if turn.status_text else "")
        raise BackendError(
            code, message, details=turn.summary, external={"protocol": "a2a", "type": state, "payload": turn.last}
        )

    async def cancel_task(self, task_id: str) -> bool:
        """Cancel a task of the agent that waits for the client (no stream of ours is open on it)."""
        client = await self._connect()
        try:
            await client.cancel_task(CancelTaskRequest(id=task_id))
        except (TaskNotFoundError, TaskNotCancelableError):
            return False  # unknown to the agent, or over already: nothing waits there
        except A2AError as exc:
            raise _sdk_error(_agent_failure(exc), _Turn()) from exc
        return True

    async def _cancel_remote(self, client: Client, task_id: str) -> None:
        """Ask the agent to stop a task this request no longer wants; best effort, bounded in time."""
        try:
            async with asyncio.timeout(REMOTE_CANCEL_TIMEOUT_SECONDS):
                await client.cancel_task(CancelTaskRequest(id=task_id))
        except Exception as exc:  # cleanup must not replace the cancellation that got us here
            log.warning("A2A CancelTask for task %s failed: %r", task_id, exc)

    async def aclose(self) -> None:
        """Close the SDK clients and their connections, after in-flight streams finished their cleanup.

        On shutdown the streams have just been cancelled and are sending CancelTask: closing the
        connections first would cut those off.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(REMOTE_CANCEL_TIMEOUT_SECONDS + 1):
                await self._idle.wait()
        for client in self._clients.values():
            await client.close()
        for channel in self._channels.values():  # also those of clients dropped after a failure
            await channel.close()
        await self._http.aclose()
