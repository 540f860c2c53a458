"""Public names and constants as the protocol document (and issue 2) lists them."""

from __future__ import annotations

import re
from datetime import datetime

import e2a_grpc
from e2a_grpc.model import constants
from tests.conftest import REPO_ROOT

KINDS = (
    "e2a.complete", "e2a.chunk", "e2a.error", "acp.session_update", "acp.prompt_result", "acp.jsonrpc_error",
    "acp.output_request", "a2a.task", "a2a.message", "a2a.stream_event", "cron", "plan.approval_required", "ext",
)  # fmt: skip


def test_response_kinds_and_their_names() -> None:
    assert constants.E2A_RESPONSE_KINDS == KINDS
    for kind in KINDS:
        name = "E2A_RESPONSE_KIND_" + re.sub(r"[^A-Z0-9]", "_", kind.upper())
        assert getattr(e2a_grpc, name) == kind, name


def test_tuples() -> None:
    assert (
        constants.E2A_SOURCE_PROTOCOL_E2A,
        constants.E2A_SOURCE_PROTOCOL_ACP,
        constants.E2A_SOURCE_PROTOCOL_A2A,
    ) == ("e2a", "acp", "a2a")
    assert (
        constants.E2A_RESPONSE_STATUS_SUCCEEDED,
        constants.E2A_RESPONSE_STATUS_FAILED,
        constants.E2A_RESPONSE_STATUS_IN_PROGRESS,
    ) == ("succeeded", "failed", "in_progress")
    assert constants.E2A_A2A_STREAM_BRANCHES == ("task", "message", "status_update", "artifact_update")
    assert constants.ACP_CLIENT_TO_AGENT_METHODS == (
        "initialize", "authenticate", "session/new", "session/load", "session/list", "session/set_mode",
        "session/set_config_option", "session/prompt", "session/set_model", "session/fork", "session/resume",
        "session/close", "logout",
    )  # fmt: skip
    assert constants.ACP_AGENT_TO_CLIENT_METHODS == (
        "session/update", "session/request_permission", "fs/read_text_file", "fs/write_text_file", "terminal/create",
        "terminal/output", "terminal/release", "terminal/wait_for_exit", "terminal/kill", "session/elicitation",
    )  # fmt: skip
    assert constants.ACP_NOTIFICATION_NAMES == ("session/cancel", "session/update", "session/elicitation/complete")
    assert constants.ACP_SESSION_UPDATE_KINDS == (
        "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
        "todo_update", "plan", "available_commands_update", "current_mode_update", "config_option_update",
        "session_info_update", "usage_update",
    )  # fmt: skip
    assert constants.E2A_WIRE_LEGACY_AGENT_RESPONSE_KEY == "_e2a_wire_legacy_agent_response"
    assert constants.E2A_WIRE_LEGACY_AGENT_CHUNK_KEY == "_e2a_wire_legacy_agent_chunk"
    assert {
        "_e2a_wire_legacy_agent_response",
        "_e2a_wire_legacy_agent_chunk",
        "_jiuwenswarm_server_push",
        "_jiuwenswarm_cancel_source",
    } == constants.E2A_WIRE_INTERNAL_METADATA_KEYS


def test_internal_wire_keys_never_reach_channel_context() -> None:
    metadata = dict.fromkeys(constants.E2A_WIRE_INTERNAL_METADATA_KEYS, True) | {"kept": 1}
    assert e2a_grpc.E2AEnvelope.from_dict({"metadata": metadata}).channel_context == {"kept": 1}


def test_public_names() -> None:
    for name in (
        "E2AEnvelope", "E2AResponse", "E2AProvenance", "E2AAuth", "E2AFileRef", "IdentityOrigin", "E2A_PROTOCOL_VERSION",
        "utc_now_iso", "merge_params_to_acp_prompt", "envelope_from_acp_jsonrpc", "envelope_from_a2a_send_message",
        "envelope_to_acp_jsonrpc_call", "e2a_response_to_acp_jsonrpc_response", "e2a_response_to_a2a_stream_payload",
    ):  # fmt: skip
        assert hasattr(e2a_grpc, name) and name in e2a_grpc.__all__, name
    assert e2a_grpc.E2A_PROTOCOL_VERSION == "1.0"
    assert [origin.value for origin in e2a_grpc.IdentityOrigin] == ["system", "user", "agent", "service"]


def test_timestamps() -> None:
    now = e2a_grpc.utc_now_iso()
    assert datetime.fromisoformat(now).utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    envelope = e2a_grpc.E2AEnvelope()
    envelope.ensure_timestamp()
    assert envelope.timestamp is not None and datetime.fromisoformat(envelope.timestamp).tzinfo is not None
    kept = e2a_grpc.E2AResponse(timestamp="2026-01-01T00:00:00Z")
    kept.ensure_timestamp()
    assert kept.timestamp == "2026-01-01T00:00:00Z"


def test_readme_lists_every_error_code() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([a-z0-9_]+)` \| ", readme, re.M)
    assert [code for code in listed if code in set(e2a_grpc.ErrorCode)] == [code.value for code in e2a_grpc.ErrorCode]
