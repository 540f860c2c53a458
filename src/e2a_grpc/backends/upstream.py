"""The ``grpc://`` route: an agent served by another E2A service's ``AgentService.Chat``.

The request goes on as the caller sent it, with the request id of the caller's frames (so both
services' logs and frames name one request), the caller's remaining deadline, its trace context
(``chat.call_scope``) and this route's own bearer token (``token_env`` of the route: never the
caller's, which was for this server). The upstream's frames come back through ``chat.relay``: checked
with the section 12 invariants and turned into events, from which the gateway writes its own frames.

However the upstream call ends, the caller's stream ends with one final frame, never a hang:

* the upstream is unreachable before its first frame: ``AgentUnavailableError`` (Chat: UNAVAILABLE,
  which a client retries);
* it ends with another status, or any status after a frame: ``BackendError`` naming the upstream,
  the status and its message (``agent_unavailable`` for UNAVAILABLE, ``upstream_error`` otherwise);
* it breaks an invariant or ends without a final frame: ``chat.relay``'s ``BackendError``;
* it goes silent: the caller's deadline (sent on), the gateway's turn time limit and the channel's
  keepalive (a dead connection is found within ``KEEPALIVE_SECONDS`` + ``KEEPALIVE_TIMEOUT_SECONDS``)
  end it.

A turn that ends early (client cancel, deadline, limit, shutdown) closes the event generator, which
cancels the upstream call: the upstream's backend is stopped as the gateway's would be.

A task of the upstream that waits for its client (a turn that ended ``e2a.input_required``) is
cancelled with the upstream's ``AgentService.CancelTask``, naming this route's agent id, with the
route's bearer token, within ``CANCEL_TASK_TIMEOUT_SECONDS``; its NOT_FOUND ``NO_WAITING_TASK`` means
nothing waits there.

One channel per upstream, made on the first request and reused by every later one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import grpc

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc.address import ServerAddress
from e2a_grpc.chat.call_scope import current_call
from e2a_grpc.chat.events import BackendError, BackendInfo, Event
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.chat.relay import UPSTREAM_DETAIL, relay_frames
from e2a_grpc.errors import NO_WAITING_TASK_REASON, AgentUnavailableError
from e2a_grpc.model import E2AEnvelope, E2AResponse, ErrorCode, SourceProtocol
from e2a_grpc.rich_status import error_info_reason
from e2a_grpc.routing import CaFile

#: Keepalive pings on a channel with calls in flight: 5 min is the least interval gRPC servers accept
#: by default (grpc-core's and grpc-go's ``min_ping_interval``); a peer that sends more often is told
#: ENHANCE_YOUR_CALM and its calls fail. A dead connection is found when a ping goes unanswered.
KEEPALIVE_SECONDS = 300
KEEPALIVE_TIMEOUT_SECONDS = 20
#: How long a cancel of a waiting task may take upstream (it runs outside any Chat call, with no
#: caller's deadline to pass on): the upstream's agent gets a second or so to stop, over a network.
CANCEL_TASK_TIMEOUT_SECONDS = 10.0


class UpstreamBackend:
    """Chat turns of one agent, run by an upstream E2A service."""

    def __init__(
        self,
        agent_id: str,
        upstream: ServerAddress,
        *,
        token: str | None = None,
        tls_ca: CaFile | None = None,
        max_message_bytes: int,
    ) -> None:
        self.agent_id = agent_id
        self.origin = f"{'grpcs' if upstream.tls else 'grpc'}://{upstream.target}"
        self.info = BackendInfo("upstream", SourceProtocol.E2A, {"upstream": self.origin})
        self._upstream = upstream
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        #: TLS upstreams: the route's CA certificates (``tls_ca``); None: the system's.
        self._tls_ca = tls_ca
        self._max_message_bytes = max_message_bytes
        self._channel: grpc.aio.Channel | None = None

    def _stub(self) -> pb_grpc.AgentServiceAsyncStub:
        if self._channel is None:  # made in the event loop that serves the calls
            options: list[tuple[str, Any]] = [
                ("grpc.max_receive_message_length", self._max_message_bytes),
                ("grpc.max_send_message_length", self._max_message_bytes),
                ("grpc.keepalive_time_ms", KEEPALIVE_SECONDS * 1000),
                ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_SECONDS * 1000),
            ]
            target = self._upstream.target
            if self._upstream.tls:  # without the route's CAs, the system's (gRPC's bundled) root certificates
                credentials = grpc.ssl_channel_credentials(None if self._tls_ca is None else self._tls_ca.pem)
                self._channel = grpc.aio.secure_channel(target, credentials, options=options)
            else:
                self._channel = grpc.aio.insecure_channel(target, options=options)
        return pb_grpc.AgentServiceStub(self._channel)

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        # The prompt is the envelope's; the upstream reads it again from the envelope it is sent.
        scope = current_call()
        metadata = self._metadata
        timeout = None
        if scope is not None:
            envelope = dataclasses.replace(envelope, request_id=scope.request_id)
            metadata = (*metadata, *scope.trace_metadata)
            timeout = scope.time_remaining()
        call = self._stub().Chat(
            pb.ChatRequest(envelope=envelope.to_proto()), timeout=timeout, metadata=metadata, wait_for_ready=False
        )
        try:
            async for event in relay_frames(self._frames(call), envelope, self.origin):
                yield event
        finally:
            call.cancel()  # a no-op once the call is over; otherwise the upstream's turn stops too

    async def _frames(
        self, call: grpc.aio.UnaryStreamCall[pb.ChatRequest, pb.ChatResponse]
    ) -> AsyncIterator[E2AResponse]:
        received = 0
        try:
            async for reply in call:
                received += 1
                yield E2AResponse.from_proto(reply.response)
        except grpc.aio.AioRpcError as error:
            raise self._call_failed(error, received) from None

    def _call_failed(self, error: grpc.aio.AioRpcError, frames_received: int) -> Exception:
        code = error.code()
        said = error.details() or code.name
        if code is grpc.StatusCode.UNAVAILABLE and frames_received == 0:
            # Which CAs a TLS upstream was checked with: what a failed handshake's operator asks first.
            tls = ""
            if self._upstream.tls:
                trusted = "the system's" if self._tls_ca is None else f"tls_ca {self._tls_ca.path}"
                tls = f" (TLS, CA certificates: {trusted})"
            return AgentUnavailableError(self.agent_id, f"the upstream {self.origin}{tls} is unavailable: {said}")
        after = f" after {frames_received} frames" if frames_received else ""
        return self._failure(error, f"ended the call{after} with")

    def _failure(self, error: grpc.aio.AioRpcError, what: str) -> BackendError:
        """The upstream's failed call as the agent's error: ``agent_unavailable`` for UNAVAILABLE (the
        same call may work later), else ``upstream_error``; ``what`` says what the upstream did."""
        code = error.code()
        said = error.details() or code.name
        failure = ErrorCode.AGENT_UNAVAILABLE if code is grpc.StatusCode.UNAVAILABLE else ErrorCode.UPSTREAM_ERROR
        return BackendError(
            failure,
            f"the upstream {self.origin} {what} {code.name}: {said}",
            {UPSTREAM_DETAIL: self.origin, "grpc_status": code.name, "grpc_message": said},
        )

    async def cancel_task(self, task_id: str) -> bool:
        scope = current_call()
        metadata = self._metadata if scope is None else (*self._metadata, *scope.trace_metadata)
        request = pb.CancelTaskRequest(agent_id=self.agent_id, task_id=task_id)
        try:
            await self._stub().CancelTask(request, timeout=CANCEL_TASK_TIMEOUT_SECONDS, metadata=metadata)
        except grpc.aio.AioRpcError as error:
            if error.code() is grpc.StatusCode.NOT_FOUND and error_info_reason(error) == NO_WAITING_TASK_REASON:
                return False
            raise self._failure(error, f"did not cancel task {task_id}:") from None
        return True

    async def aclose(self) -> None:
        if self._channel is not None:
            channel, self._channel = self._channel, None
            await channel.close()
