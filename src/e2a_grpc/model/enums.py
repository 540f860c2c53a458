"""The protocol's domain values (spec sections 6 and 12) as enums: one home for each spelling.

They are ``StrEnum``s, so a member is also the plain string the wire carries (``ResponseKind.E2A_CHUNK
== "e2a.chunk"``). Record fields that the protocol leaves open (``status``, ``response_kind``) stay
typed ``str``: a peer may send a kind this version does not know, and it must survive a round trip.
"""

from __future__ import annotations

from enum import StrEnum


class IdentityOrigin(StrEnum):
    """Who triggered the request."""

    SYSTEM = "system"
    USER = "user"
    AGENT = "agent"
    SERVICE = "service"


class SourceProtocol(StrEnum):
    """``provenance.source_protocol``: what a record was before it was E2A."""

    E2A = "e2a"
    ACP = "acp"
    A2A = "a2a"


class ResponseStatus(StrEnum):
    """``E2AResponse.status``."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    IN_PROGRESS = "in_progress"


class ResponseKind(StrEnum):
    """``E2AResponse.response_kind`` values that spec section 12 defines."""

    E2A_COMPLETE = "e2a.complete"
    E2A_CHUNK = "e2a.chunk"
    E2A_ERROR = "e2a.error"
    #: The agent asks the client something and waits: the final frame of a turn whose task stays open.
    E2A_INPUT_REQUIRED = "e2a.input_required"
    ACP_SESSION_UPDATE = "acp.session_update"
    ACP_PROMPT_RESULT = "acp.prompt_result"
    ACP_JSONRPC_ERROR = "acp.jsonrpc_error"
    ACP_OUTPUT_REQUEST = "acp.output_request"
    A2A_TASK = "a2a.task"
    A2A_MESSAGE = "a2a.message"
    A2A_STREAM_EVENT = "a2a.stream_event"
    CRON = "cron"
    PLAN_APPROVAL_REQUIRED = "plan.approval_required"
    EXT = "ext"


class DeltaKind(StrEnum):
    """``body.delta_kind`` of an ``e2a.chunk`` frame."""

    TEXT = "text"
    REASONING = "reasoning"
    TOOL = "tool"
    CUSTOM = "custom"


#: Kinds this implementation adds to those of spec section 12.5 (docs/wire-json.md, "Waiting turns").
EXTENSION_RESPONSE_KINDS = frozenset({ResponseKind.E2A_INPUT_REQUIRED})


class WaitReason(StrEnum):
    """``body.reason`` of an ``e2a.input_required`` frame: what the agent waits for."""

    #: More input from the person (A2A ``input-required``).
    INPUT = "input"
    #: Credentials or an authorization (A2A ``auth-required``).
    AUTH = "auth"
    #: A choice among ``body.options``, e.g. whether a tool call may run (ACP ``session/request_permission``).
    PERMISSION = "permission"


class A2AStreamBranch(StrEnum):
    """``body.branch`` of an ``a2a.stream_event`` response: which A2A ``StreamResponse`` case it holds."""

    TASK = "task"
    MESSAGE = "message"
    STATUS_UPDATE = "status_update"
    ARTIFACT_UPDATE = "artifact_update"


class ErrorCode(StrEnum):
    """``body.code`` of the ``e2a.error`` frames this server writes (an agent's own integer JSON-RPC
    codes are passed on as they are). Clients can match on these; the README lists them.
    """

    #: The server is stopping; the request may be retried on another instance.
    SERVER_SHUTTING_DOWN = "server_shutting_down"
    #: The backend ended the stream without a result.
    BACKEND_INCOMPLETE = "backend_incomplete"
    #: The backend produced an event that is not valid E2A.
    BACKEND_INVALID_OUTPUT = "backend_invalid_output"
    #: A bug in this server or a backend; details are in the server log.
    INTERNAL = "internal"
    #: The request cannot be turned into the agent's protocol.
    INVALID_REQUEST = "invalid_request"
    #: The request's prompt cannot be sent as an ACP ``session/prompt``.
    INVALID_PROMPT = "invalid_prompt"
    #: The agent cannot take the request: the ACP agent command could not be started, or the agent a
    #: route reaches (an upstream E2A service) is not reachable or went away mid-turn.
    AGENT_UNAVAILABLE = "agent_unavailable"
    #: The upstream E2A service a route reaches ended the call with a gRPC status, not a final frame.
    UPSTREAM_ERROR = "upstream_error"
    #: The ACP agent exited while a call was waiting for it.
    AGENT_CRASHED = "agent_crashed"
    #: The ACP agent did not answer a setup call in time.
    AGENT_UNRESPONSIVE = "agent_unresponsive"
    #: The ACP agent answered with something that is not valid ACP.
    AGENT_PROTOCOL_ERROR = "agent_protocol_error"
    #: The ACP agent speaks another protocol version.
    AGENT_UNSUPPORTED = "agent_unsupported"
    #: The request has content the ACP agent does not take (its ``promptCapabilities``: image, audio,
    #: embedded resources); no agent saw it.
    CONTENT_NOT_SUPPORTED = "content_not_supported"
    #: An answer to a waiting question names none of its options; the question stays open.
    INVALID_ANSWER = "invalid_answer"
    #: A request answers a question (it names a waiting task), but none is waiting there.
    NO_QUESTION_PENDING = "no_question_pending"
    #: Every pooled ACP session is in use.
    AGENT_BUSY = "agent_busy"
    #: The remote A2A agent did not answer in time.
    A2A_TIMEOUT = "a2a_timeout"
    #: The remote A2A agent could not be reached, or its answer could not be read.
    A2A_UNAVAILABLE = "a2a_unavailable"
    #: The remote A2A agent answered with an A2A error.
    A2A_AGENT_ERROR = "a2a_agent_error"
    #: The remote A2A agent's card offers no transport this client speaks.
    A2A_UNSUPPORTED_AGENT = "a2a_unsupported_agent"
    #: The A2A task ended in the failed state.
    A2A_TASK_FAILED = "a2a_task_failed"
    #: The A2A agent rejected the task.
    A2A_TASK_REJECTED = "a2a_task_rejected"
    #: The A2A task was canceled (by the agent or another client).
    A2A_TASK_CANCELED = "a2a_task_canceled"
    #: The A2A stream ended before the task reached a final or interrupted state.
    A2A_STREAM_ENDED_EARLY = "a2a_stream_ended_early"
    #: The request's prompt is larger than the server's ``chat_max_prompt_bytes``; no agent saw it.
    PROMPT_TOO_LARGE = "prompt_too_large"
    #: The stream reached the server's ``chat_max_frames``; the agent was stopped.
    STREAM_FRAME_LIMIT = "stream_frame_limit"
    #: The stream ran longer than the server's ``chat_max_stream_seconds``; the agent was stopped.
    STREAM_TIME_LIMIT = "stream_time_limit"
    #: The client cancelled the call; the agent was stopped. Only a copy of the stream (``serve
    #: --publish-nats``) ends with it: the client is gone.
    CLIENT_CANCELLED = "client_cancelled"
    #: The call's deadline passed; the agent was stopped. As ``client_cancelled``, in a copy only.
    DEADLINE_EXCEEDED = "deadline_exceeded"
    #: The stream's final frame could not be published to the broker (too large, refused); this frame
    #: stands in for it in the broker's copy of the stream only.
    FRAME_NOT_PUBLISHED = "frame_not_published"
