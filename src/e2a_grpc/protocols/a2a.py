"""A2A and E2A: the reference adapters (spec section 8) and the A2A projections of E2A's own kinds.

An A2A SendMessage becomes an ``E2AEnvelope``; an ``a2a.stream_event`` response becomes the A2A
``StreamResponse`` JSON it carries; ``e2a.chunk`` / ``e2a.complete`` / ``e2a.error`` frames project
to an artifact update or a final status update. The Chat A2A backend and ToA2AStream share these,
so they agree by construction.
"""

from __future__ import annotations

import uuid
from typing import Any

from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name
from e2a_grpc.model import readers
from e2a_grpc.model.constants import ACP_SESSION_PROMPT
from e2a_grpc.model.enums import A2AStreamBranch, IdentityOrigin, ResponseKind, SourceProtocol, WaitReason
from e2a_grpc.model.parts import E2AProvenance
from e2a_grpc.model.records import E2AEnvelope, E2AResponse, utc_now_iso
from e2a_grpc.protocols import parts

_CONVERTER_FROM_A2A = "e2a_grpc.protocols.a2a:envelope_from_a2a_send_message"

#: JSON-RPC methods that carry SendMessage params (A2A 0.3 names, then A2A 1.0 names).
SEND_METHODS = ("message/send", "message/stream", "SendMessage", "SendStreamingMessage")

#: E2A ``a2a.stream_event`` branch -> key of the A2A ``StreamResponse`` JSON.
STREAM_RESPONSE_KEYS: dict[str, str] = {
    A2AStreamBranch.TASK: "task",
    A2AStreamBranch.MESSAGE: "message",
    A2AStreamBranch.STATUS_UPDATE: "statusUpdate",
    A2AStreamBranch.ARTIFACT_UPDATE: "artifactUpdate",
}


#: What an ``e2a.input_required`` frame waits for -> the A2A task state that says so.
WAITING_STATES: dict[str, str] = {
    WaitReason.INPUT: "TASK_STATE_INPUT_REQUIRED",
    WaitReason.PERMISSION: "TASK_STATE_INPUT_REQUIRED",  # A2A has no state of its own for a choice
    WaitReason.AUTH: "TASK_STATE_AUTH_REQUIRED",
}
#: An A2A task state in which the agent waits for the client -> the reason an E2A frame gives.
WAIT_REASONS: dict[str, WaitReason] = {
    "TASK_STATE_INPUT_REQUIRED": WaitReason.INPUT,
    "TASK_STATE_AUTH_REQUIRED": WaitReason.AUTH,
}


def envelope_from_a2a_send_message(
    *,
    task_id: str | None,
    context_id: str | None,
    message_body: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
    channel: str | None = None,
    identity_origin: IdentityOrigin | str = IdentityOrigin.USER,
    converter: str | None = None,
    extra_provenance_details: dict[str, Any] | None = None,
) -> E2AEnvelope:
    """A2A SendMessage as an envelope: method ``session/prompt``, message and configuration in params.

    ``metadata`` is the A2A request's metadata and lands in ``a2a_metadata`` (not ``channel_context``).
    """
    config = readers.json_object(configuration, "configuration")
    accepted = config.get("acceptedOutputModes")
    details: dict[str, Any] = {"kind": "a2a_send_message", "abstract_operation": "SendMessage"}
    details.update(readers.json_object(extra_provenance_details, "extra_provenance_details"))
    return E2AEnvelope.from_dict(
        {
            "provenance": E2AProvenance(
                source_protocol=SourceProtocol.A2A,
                converter=converter or _CONVERTER_FROM_A2A,
                converted_at=utc_now_iso(),
                details=details,
            ),
            "method": ACP_SESSION_PROMPT,
            "task_id": task_id,
            "context_id": context_id,
            "channel": channel,
            "identity_origin": readers.identity_origin(identity_origin, "identity_origin"),
            "expected_output_modes": [str(mode) for mode in accepted] if isinstance(accepted, list) else [],
            "params": {"message": message_body, "configuration": config},
            "a2a_metadata": readers.json_object(metadata, "metadata"),
        }
    )


def e2a_response_to_a2a_stream_payload(response: E2AResponse) -> dict[str, Any] | None:
    """The A2A ``StreamResponse`` JSON (one of task / message / statusUpdate / artifactUpdate) of an
    ``a2a.stream_event`` response, or ``None`` if not applicable.
    """
    if response.response_kind != ResponseKind.A2A_STREAM_EVENT:
        return None
    projection = response.projections.get("a2a")
    if (
        isinstance(projection, dict)
        and len(projection) == 1
        and next(iter(projection)) in STREAM_RESPONSE_KEYS.values()
    ):
        return dict(projection)
    branch = response.body.get("branch")
    payload = response.body.get("payload")
    key = STREAM_RESPONSE_KEYS.get(branch) if isinstance(branch, str) else None
    if key is None or not isinstance(payload, dict):
        return None
    return {key: payload}


# --- projections of E2A's own kinds --------------------------------------------------------------


def _task_ids(response: E2AResponse) -> dict[str, str]:
    task_id = response.task_id or response.request_id
    if not task_id:
        raise E2AValueError("task_id", "an A2A event needs a task id: set task_id (or request_id)")
    return {"taskId": task_id, "contextId": response.context_id or response.session_id or task_id}


def artifact_update(response: E2AResponse) -> dict[str, Any]:
    """An ``e2a.chunk`` frame as an A2A artifact update (``delta_artifact_update``)."""
    body = response.body
    return delta_artifact_update(
        body.get("delta_kind"), body.get("delta"), body.get("mime_type"), _task_ids(response), response.sequence > 0
    )


def delta_artifact_update(
    delta_kind: Any, delta: Any, mime_type: Any, ids: dict[str, str], append: bool
) -> dict[str, Any]:
    """The A2A artifact update of an ``e2a.chunk``'s body fields (one artifact per delta kind). A delta
    that is an ACP content block carrying a file (an agent's image, audio or resource) becomes a file part."""
    if isinstance(delta, str):
        part: dict[str, Any] = {"text": delta}
    elif isinstance(delta, dict) and delta.get("type") in parts.FILE_BLOCK_TYPES:
        part = parts.a2a_part(delta, "body.delta")
    elif isinstance(delta, (dict, list)):
        part = {"data": delta}
    else:
        raise E2ATypeError("body.delta", f"an e2a.chunk delta is a string or structured JSON, got {type_name(delta)}")
    if isinstance(mime_type, str):
        part.setdefault("mediaType", mime_type)
    return {
        "artifactUpdate": {
            **ids,
            "artifact": {"artifactId": delta_artifact_id(delta_kind), "parts": [part]},
            "append": append,
            "lastChunk": False,
        }
    }


def delta_artifact_id(delta_kind: Any) -> str:
    """The artifact of a delta kind's chunks: it names the kind, and a part carries no copy of it (the
    task holds every part)."""
    return f"e2a-{delta_kind}" if isinstance(delta_kind, str) and delta_kind else "e2a-output"


def final_status_update(response: E2AResponse) -> dict[str, Any]:
    """An ``e2a.complete`` / ``e2a.error`` / ``e2a.input_required`` frame as the A2A status update that
    ends the turn: the task completed, failed, or waiting for the client (its question as the status
    message: the text, and a data part with the reason and options for a program to answer)."""
    ids = _task_ids(response)
    body = response.body
    status: dict[str, Any]
    kind = response.response_kind
    if kind == ResponseKind.E2A_COMPLETE:
        status = {"state": "TASK_STATE_COMPLETED"}
        metadata = {"e2a_result": body.get("result")}
    elif kind == ResponseKind.E2A_INPUT_REQUIRED:
        reason = body.get("reason")
        state = WAITING_STATES.get(reason) if isinstance(reason, str) else None
        if state is None:
            raise E2AValueError("body.reason", f"expected one of {', '.join(WAITING_STATES)}, got {reason!r}")
        parts: list[dict[str, Any]] = [{"text": _text_of(body.get("message"))}]
        question = {key: body[key] for key in ("reason", "options", "request") if key in body}
        if "options" in question or "request" in question:
            parts.append({"data": question, "mediaType": "application/json"})
        status = {"state": state, "message": _agent_message(response, ids, parts)}
        metadata = {"e2a_result": body.get("result")}
    else:
        parts = [{"text": _text_of(body.get("message"))}]
        status = {"state": "TASK_STATE_FAILED", "message": _agent_message(response, ids, parts)}
        metadata = {"e2a_error": {"code": body.get("code"), "details": body.get("details")}}
    if response.timestamp:
        status["timestamp"] = response.timestamp
    return {"statusUpdate": {**ids, "status": status, "metadata": metadata}}


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _agent_message(response: E2AResponse, ids: dict[str, str], parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"messageId": response.response_id or str(uuid.uuid4()), **ids, "role": "ROLE_AGENT", "parts": parts}
