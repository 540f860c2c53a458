"""Protocol constants (spec sections 6 and 12) under the names the protocol document gives them.

The domain values themselves are the enums of ``e2a_grpc.model.enums``; these names alias them.
"""

from __future__ import annotations

from e2a.v1 import e2a_pb2
from e2a_grpc.model.enums import (
    EXTENSION_RESPONSE_KINDS,
    A2AStreamBranch,
    ResponseKind,
    ResponseStatus,
    SourceProtocol,
)
from e2a_grpc.model.fields import field_json_options

#: The protocol version a record defaults to: the schema's default of ``protocol_version``.
E2A_PROTOCOL_VERSION: str = field_json_options(e2a_pb2.E2AEnvelope, "protocol_version").default_value

E2A_SOURCE_PROTOCOL_E2A = SourceProtocol.E2A
E2A_SOURCE_PROTOCOL_ACP = SourceProtocol.ACP
E2A_SOURCE_PROTOCOL_A2A = SourceProtocol.A2A

E2A_RESPONSE_STATUS_SUCCEEDED = ResponseStatus.SUCCEEDED
E2A_RESPONSE_STATUS_FAILED = ResponseStatus.FAILED
E2A_RESPONSE_STATUS_IN_PROGRESS = ResponseStatus.IN_PROGRESS

E2A_RESPONSE_KIND_E2A_COMPLETE = ResponseKind.E2A_COMPLETE
E2A_RESPONSE_KIND_E2A_CHUNK = ResponseKind.E2A_CHUNK
E2A_RESPONSE_KIND_E2A_ERROR = ResponseKind.E2A_ERROR
E2A_RESPONSE_KIND_E2A_INPUT_REQUIRED = ResponseKind.E2A_INPUT_REQUIRED
E2A_RESPONSE_KIND_ACP_SESSION_UPDATE = ResponseKind.ACP_SESSION_UPDATE
E2A_RESPONSE_KIND_ACP_PROMPT_RESULT = ResponseKind.ACP_PROMPT_RESULT
E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR = ResponseKind.ACP_JSONRPC_ERROR
E2A_RESPONSE_KIND_ACP_OUTPUT_REQUEST = ResponseKind.ACP_OUTPUT_REQUEST
E2A_RESPONSE_KIND_A2A_TASK = ResponseKind.A2A_TASK
E2A_RESPONSE_KIND_A2A_MESSAGE = ResponseKind.A2A_MESSAGE
E2A_RESPONSE_KIND_A2A_STREAM_EVENT = ResponseKind.A2A_STREAM_EVENT
E2A_RESPONSE_KIND_CRON = ResponseKind.CRON
E2A_RESPONSE_KIND_PLAN_APPROVAL_REQUIRED = ResponseKind.PLAN_APPROVAL_REQUIRED
E2A_RESPONSE_KIND_EXT = ResponseKind.EXT

#: The kinds of spec section 12.5 (``ResponseKind`` also has this implementation's extensions).
E2A_RESPONSE_KINDS: tuple[str, ...] = tuple(kind for kind in ResponseKind if kind not in EXTENSION_RESPONSE_KINDS)

#: ``body.branch`` values of an ``a2a.stream_event`` response.
E2A_A2A_STREAM_BRANCHES: tuple[str, ...] = tuple(A2AStreamBranch)

ACP_INITIALIZE = "initialize"
ACP_SESSION_NEW = "session/new"
ACP_SESSION_PROMPT = "session/prompt"
ACP_SESSION_CANCEL = "session/cancel"
ACP_SESSION_UPDATE = "session/update"
ACP_SESSION_REQUEST_PERMISSION = "session/request_permission"

ACP_CLIENT_TO_AGENT_METHODS: tuple[str, ...] = (
    ACP_INITIALIZE,
    "authenticate",
    ACP_SESSION_NEW,
    "session/load",
    "session/list",
    "session/set_mode",
    "session/set_config_option",
    ACP_SESSION_PROMPT,
    "session/set_model",
    "session/fork",
    "session/resume",
    "session/close",
    "logout",
)

ACP_AGENT_TO_CLIENT_METHODS: tuple[str, ...] = (
    ACP_SESSION_UPDATE,
    ACP_SESSION_REQUEST_PERMISSION,
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/release",
    "terminal/wait_for_exit",
    "terminal/kill",
    "session/elicitation",
)

ACP_NOTIFICATION_NAMES: tuple[str, ...] = (
    ACP_SESSION_CANCEL,
    ACP_SESSION_UPDATE,
    "session/elicitation/complete",
)

#: Values of ``session/update`` ``update.sessionUpdate`` (and of ``session_update_kind``).
ACP_SESSION_UPDATE_KINDS: tuple[str, ...] = (
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "todo_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
)

_INTERNAL_KEYS: tuple[str, ...] = tuple(field_json_options(e2a_pb2.E2AEnvelope, "channel_context").internal_keys)
#: Transport-internal ``metadata`` keys, never copied from legacy ``metadata`` into ``channel_context``:
#: their home is the schema (``internal_keys`` of ``E2AEnvelope.channel_context``).
E2A_WIRE_INTERNAL_METADATA_KEYS: frozenset[str] = frozenset(_INTERNAL_KEYS)
#: The same keys by name: where the agent server ships whole legacy JSON records, and its own marks.
(
    E2A_WIRE_LEGACY_AGENT_RESPONSE_KEY,
    E2A_WIRE_LEGACY_AGENT_CHUNK_KEY,
    E2A_WIRE_SERVER_PUSH_KEY,
    E2A_WIRE_CANCEL_SOURCE_KEY,
) = _INTERNAL_KEYS

__all__ = [
    "E2A_PROTOCOL_VERSION",
    "E2A_SOURCE_PROTOCOL_E2A",
    "E2A_SOURCE_PROTOCOL_ACP",
    "E2A_SOURCE_PROTOCOL_A2A",
    "E2A_RESPONSE_STATUS_SUCCEEDED",
    "E2A_RESPONSE_STATUS_FAILED",
    "E2A_RESPONSE_STATUS_IN_PROGRESS",
    "E2A_RESPONSE_KIND_E2A_COMPLETE",
    "E2A_RESPONSE_KIND_E2A_CHUNK",
    "E2A_RESPONSE_KIND_E2A_ERROR",
    "E2A_RESPONSE_KIND_E2A_INPUT_REQUIRED",
    "E2A_RESPONSE_KIND_ACP_SESSION_UPDATE",
    "E2A_RESPONSE_KIND_ACP_PROMPT_RESULT",
    "E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR",
    "E2A_RESPONSE_KIND_ACP_OUTPUT_REQUEST",
    "E2A_RESPONSE_KIND_A2A_TASK",
    "E2A_RESPONSE_KIND_A2A_MESSAGE",
    "E2A_RESPONSE_KIND_A2A_STREAM_EVENT",
    "E2A_RESPONSE_KIND_CRON",
    "E2A_RESPONSE_KIND_PLAN_APPROVAL_REQUIRED",
    "E2A_RESPONSE_KIND_EXT",
    "E2A_RESPONSE_KINDS",
    "E2A_A2A_STREAM_BRANCHES",
    "ACP_CLIENT_TO_AGENT_METHODS",
    "ACP_AGENT_TO_CLIENT_METHODS",
    "ACP_NOTIFICATION_NAMES",
    "ACP_SESSION_UPDATE_KINDS",
    "E2A_WIRE_LEGACY_AGENT_RESPONSE_KEY",
    "E2A_WIRE_LEGACY_AGENT_CHUNK_KEY",
    "E2A_WIRE_SERVER_PUSH_KEY",
    "E2A_WIRE_CANCEL_SOURCE_KEY",
    "E2A_WIRE_INTERNAL_METADATA_KEYS",
]
