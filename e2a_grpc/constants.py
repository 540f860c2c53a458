"""Protocol constants (spec sections 6 and 12): names of sources, statuses, kinds and ACP methods."""

from __future__ import annotations

E2A_PROTOCOL_VERSION = "1.0"

E2A_SOURCE_PROTOCOL_E2A = "e2a"
E2A_SOURCE_PROTOCOL_ACP = "acp"
E2A_SOURCE_PROTOCOL_A2A = "a2a"

E2A_RESPONSE_STATUS_SUCCEEDED = "succeeded"
E2A_RESPONSE_STATUS_FAILED = "failed"
E2A_RESPONSE_STATUS_IN_PROGRESS = "in_progress"

E2A_RESPONSE_KIND_E2A_COMPLETE = "e2a.complete"
E2A_RESPONSE_KIND_E2A_CHUNK = "e2a.chunk"
E2A_RESPONSE_KIND_E2A_ERROR = "e2a.error"
E2A_RESPONSE_KIND_ACP_SESSION_UPDATE = "acp.session_update"
E2A_RESPONSE_KIND_ACP_PROMPT_RESULT = "acp.prompt_result"
E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR = "acp.jsonrpc_error"
E2A_RESPONSE_KIND_ACP_OUTPUT_REQUEST = "acp.output_request"
E2A_RESPONSE_KIND_A2A_TASK = "a2a.task"
E2A_RESPONSE_KIND_A2A_MESSAGE = "a2a.message"
E2A_RESPONSE_KIND_A2A_STREAM_EVENT = "a2a.stream_event"
E2A_RESPONSE_KIND_CRON = "cron"
E2A_RESPONSE_KIND_PLAN_APPROVAL_REQUIRED = "plan.approval_required"
E2A_RESPONSE_KIND_EXT = "ext"

E2A_RESPONSE_KINDS: tuple[str, ...] = (
    E2A_RESPONSE_KIND_E2A_COMPLETE,
    E2A_RESPONSE_KIND_E2A_CHUNK,
    E2A_RESPONSE_KIND_E2A_ERROR,
    E2A_RESPONSE_KIND_ACP_SESSION_UPDATE,
    E2A_RESPONSE_KIND_ACP_PROMPT_RESULT,
    E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR,
    E2A_RESPONSE_KIND_ACP_OUTPUT_REQUEST,
    E2A_RESPONSE_KIND_A2A_TASK,
    E2A_RESPONSE_KIND_A2A_MESSAGE,
    E2A_RESPONSE_KIND_A2A_STREAM_EVENT,
    E2A_RESPONSE_KIND_CRON,
    E2A_RESPONSE_KIND_PLAN_APPROVAL_REQUIRED,
    E2A_RESPONSE_KIND_EXT,
)

#: ``body.branch`` values of an ``a2a.stream_event`` response.
E2A_A2A_STREAM_BRANCHES: tuple[str, ...] = ("task", "message", "status_update", "artifact_update")

ACP_CLIENT_TO_AGENT_METHODS: tuple[str, ...] = (
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/list",
    "session/set_mode",
    "session/set_config_option",
    "session/prompt",
    "session/set_model",
    "session/fork",
    "session/resume",
    "session/close",
    "logout",
)

ACP_AGENT_TO_CLIENT_METHODS: tuple[str, ...] = (
    "session/update",
    "session/request_permission",
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
    "session/cancel",
    "session/update",
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

#: ``metadata`` keys under which the agent server ships whole legacy JSON records.
E2A_WIRE_LEGACY_AGENT_RESPONSE_KEY = "_e2a_wire_legacy_agent_response"
E2A_WIRE_LEGACY_AGENT_CHUNK_KEY = "_e2a_wire_legacy_agent_chunk"
E2A_WIRE_SERVER_PUSH_KEY = "_jiuwenswarm_server_push"
E2A_WIRE_CANCEL_SOURCE_KEY = "_jiuwenswarm_cancel_source"

#: Transport-internal ``metadata`` keys: never copied from legacy ``metadata`` into ``channel_context``.
E2A_WIRE_INTERNAL_METADATA_KEYS: frozenset[str] = frozenset(
    {
        E2A_WIRE_LEGACY_AGENT_RESPONSE_KEY,
        E2A_WIRE_LEGACY_AGENT_CHUNK_KEY,
        E2A_WIRE_SERVER_PUSH_KEY,
        E2A_WIRE_CANCEL_SOURCE_KEY,
    }
)

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
