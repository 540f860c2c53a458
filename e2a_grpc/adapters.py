"""Adapters between E2A and the agent protocols it bridges (spec sections 7, 8 and 12.6).

ACP / A2A inputs become ``E2AEnvelope`` with ``provenance`` saying where they came from; an
``E2AEnvelope`` becomes an ACP JSON-RPC call; an ``E2AResponse`` becomes an ACP JSON-RPC response
or an A2A ``StreamResponse`` JSON, or ``None`` when that projection does not apply.
"""

from __future__ import annotations

from typing import Any

from e2a_grpc.constants import (
    E2A_A2A_STREAM_BRANCHES,
    E2A_RESPONSE_KIND_A2A_STREAM_EVENT,
    E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR,
    E2A_RESPONSE_KIND_ACP_PROMPT_RESULT,
    E2A_RESPONSE_KIND_E2A_ERROR,
    E2A_SOURCE_PROTOCOL_A2A,
    E2A_SOURCE_PROTOCOL_ACP,
)
from e2a_grpc.errors import E2ATypeError, type_name
from e2a_grpc.models import (
    E2AEnvelope,
    E2AProvenance,
    E2AResponse,
    IdentityOrigin,
    _identity_origin,
    utc_now_iso,
)

_CONVERTER_FROM_ACP = "e2a_grpc.adapters:envelope_from_acp_jsonrpc"
_CONVERTER_FROM_A2A = "e2a_grpc.adapters:envelope_from_a2a_send_message"

JSONRPC_INTERNAL_ERROR = -32603

#: E2A ``a2a.stream_event`` branch -> key of the A2A ``StreamResponse`` JSON.
A2A_STREAM_RESPONSE_KEYS: dict[str, str] = {
    "task": "task",
    "message": "message",
    "status_update": "statusUpdate",
    "artifact_update": "artifactUpdate",
}
assert tuple(A2A_STREAM_RESPONSE_KEYS) == E2A_A2A_STREAM_BRANCHES


def _optional_object(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise E2ATypeError(field, f"expected an object or null, got {type_name(value)}")
    return dict(value)


def _origin(value: IdentityOrigin | str) -> IdentityOrigin:
    return _identity_origin({"identity_origin": value}, IdentityOrigin.USER)


def merge_params_to_acp_prompt(envelope: E2AEnvelope) -> dict[str, Any]:
    """The ACP ``session/prompt`` params for an envelope (spec section 7); ``envelope`` is not changed.

    Only for ``method == "session/prompt"``: fill ``prompt`` from ``content_blocks`` or the first
    non-empty of ``text`` / ``content`` / ``query`` unless ``prompt`` is there, add ``session_id``
    and merge ``acp_meta`` into ``_meta``. Any other method gets a shallow copy of ``params``.
    """
    params = dict(envelope.params)
    if acp_params_unchanged(envelope.method, params):
        return params
    blocks = params.get("content_blocks")
    if isinstance(blocks, list) and blocks:
        params["prompt"] = list(blocks)
    else:
        text = params.get("text") or params.get("content") or params.get("query")
        if isinstance(text, str) and text:
            params["prompt"] = [{"type": "text", "text": text}]
    if envelope.session_id and "session_id" not in params:
        params["session_id"] = envelope.session_id
    if envelope.acp_meta:
        meta = params.get("_meta", {})
        if not isinstance(meta, dict):
            raise E2ATypeError("params._meta", f"expected an object to merge acp_meta into, got {type_name(meta)}")
        params["_meta"] = {**meta, **envelope.acp_meta}
    return params


def envelope_from_acp_jsonrpc(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    jsonrpc_id: str | int | float | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    identity_origin: IdentityOrigin | str = IdentityOrigin.USER,
    converter: str | None = None,
    extra_provenance_details: dict[str, Any] | None = None,
) -> E2AEnvelope:
    """An ACP JSON-RPC request (method + params) as an envelope with ``source_protocol`` "acp"."""
    if not isinstance(method, str):
        raise E2ATypeError("method", f"expected a string, got {type_name(method)}")
    copied = _optional_object(params, "params")
    resolved_session = session_id or copied.get("session_id")
    details: dict[str, Any] = {"kind": "jsonrpc_request", "jsonrpc_method": method}
    if jsonrpc_id is not None:
        details["jsonrpc_id"] = jsonrpc_id
    details.update(_optional_object(extra_provenance_details, "extra_provenance_details"))
    return E2AEnvelope.from_dict(
        {
            "provenance": E2AProvenance(
                source_protocol=E2A_SOURCE_PROTOCOL_ACP,
                converter=converter or _CONVERTER_FROM_ACP,
                converted_at=utc_now_iso(),
                details=details,
            ),
            "jsonrpc_id": jsonrpc_id,
            "method": method,
            "params": copied,
            "session_id": resolved_session if isinstance(resolved_session, str) else None,
            "channel": channel,
            "identity_origin": _origin(identity_origin),
        }
    )


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
    config = _optional_object(configuration, "configuration")
    accepted = config.get("acceptedOutputModes")
    details: dict[str, Any] = {"kind": "a2a_send_message", "abstract_operation": "SendMessage"}
    details.update(_optional_object(extra_provenance_details, "extra_provenance_details"))
    return E2AEnvelope.from_dict(
        {
            "provenance": E2AProvenance(
                source_protocol=E2A_SOURCE_PROTOCOL_A2A,
                converter=converter or _CONVERTER_FROM_A2A,
                converted_at=utc_now_iso(),
                details=details,
            ),
            "method": "session/prompt",
            "task_id": task_id,
            "context_id": context_id,
            "channel": channel,
            "identity_origin": _origin(identity_origin),
            "expected_output_modes": [str(mode) for mode in accepted] if isinstance(accepted, list) else [],
            "params": {"message": message_body, "configuration": config},
            "a2a_metadata": _optional_object(metadata, "metadata"),
        }
    )


def envelope_to_acp_jsonrpc_call(envelope: E2AEnvelope) -> dict[str, Any]:
    """The envelope as one JSON-RPC 2.0 call. ``provenance`` is not changed.

    A gateway method such as ``chat.send`` is passed through as it is (spec section 2): map it to
    an ACP method first when the peer is a pure ACP agent.
    """
    return acp_jsonrpc_call(
        envelope.jsonrpc_id, acp_method(envelope.method, envelope.ext_method), merge_params_to_acp_prompt(envelope)
    )


def acp_method(method: str | None, ext_method: str | None) -> str | None:
    """The JSON-RPC method of an envelope's ACP call: ``ext_method`` stands in for ``"ext"``."""
    return ext_method if method == "ext" and ext_method else method


def acp_params_unchanged(method: str | None, params: dict[str, Any]) -> bool:
    """Whether ``merge_params_to_acp_prompt`` gives ``params`` as they are: for every method but a
    ``session/prompt`` whose params have no ``prompt`` yet.
    """
    return method != "session/prompt" or "prompt" in params


def acp_jsonrpc_call(rpc_id: str | int | float | None, method: str | None, params: Any) -> dict[str, Any]:
    """The JSON-RPC 2.0 call ``envelope_to_acp_jsonrpc_call`` gives, from its parts."""
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def e2a_response_to_acp_jsonrpc_response(response: E2AResponse) -> dict[str, Any] | None:
    """One JSON-RPC 2.0 response (``result`` or ``error``) for a response, or ``None`` if not applicable.

    A complete ``projections.acp`` response wins; otherwise ``acp.prompt_result`` gives ``result`` =
    body, ``acp.jsonrpc_error`` gives ``error`` = body, and ``e2a.error`` gives a JSON-RPC error
    (non-integer codes become -32603 with the original in ``data.e2a_code``).
    """
    projection = response.projections.get("acp")
    if (
        isinstance(projection, dict)
        and projection.get("jsonrpc") == "2.0"
        and ("result" in projection or "error" in projection)
    ):
        out = dict(projection)
        out.setdefault("id", response.jsonrpc_id)
        return out

    kind = response.response_kind
    body = dict(response.body)
    if kind == E2A_RESPONSE_KIND_ACP_PROMPT_RESULT:
        return {"jsonrpc": "2.0", "id": response.jsonrpc_id, "result": body}
    if kind == E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR:
        return {"jsonrpc": "2.0", "id": response.jsonrpc_id, "error": body}
    if kind != E2A_RESPONSE_KIND_E2A_ERROR:
        return None

    raw_code = body.get("code")
    code_is_int = isinstance(raw_code, int)
    data: dict[str, Any] = {}
    if body.get("details") is not None:
        data["details"] = body["details"]
    if body.get("external") is not None:
        data["external"] = body["external"]
    if raw_code is not None and not code_is_int:
        data["e2a_code"] = raw_code
    error: dict[str, Any] = {
        "code": raw_code if code_is_int else JSONRPC_INTERNAL_ERROR,
        "message": _message_text(body.get("message")),
    }
    if data:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": response.jsonrpc_id, "error": error}


def _message_text(message: Any) -> str:
    if not message:
        return ""
    return message if isinstance(message, str) else str(message)


def e2a_response_to_a2a_stream_payload(response: E2AResponse) -> dict[str, Any] | None:
    """The A2A ``StreamResponse`` JSON (one of task / message / statusUpdate / artifactUpdate) of an
    ``a2a.stream_event`` response, or ``None`` if not applicable.
    """
    if response.response_kind != E2A_RESPONSE_KIND_A2A_STREAM_EVENT:
        return None
    projection = response.projections.get("a2a")
    if (
        isinstance(projection, dict)
        and len(projection) == 1
        and next(iter(projection)) in A2A_STREAM_RESPONSE_KEYS.values()
    ):
        return dict(projection)
    branch = response.body.get("branch")
    payload = response.body.get("payload")
    key = A2A_STREAM_RESPONSE_KEYS.get(branch) if isinstance(branch, str) else None
    if key is None or not isinstance(payload, dict):
        return None
    return {key: payload}
