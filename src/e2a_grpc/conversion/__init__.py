"""What the ConversionService RPCs do, as pure functions on E2A records and JSON text.

They build on the protocol adapters (``e2a_grpc.protocols``) and add what a service needs on top:
reading ACP and A2A JSON as peers send it, the agent-to-client ACP direction, the wire (camelCase)
ACP dialect, and A2A projections of the native E2A kinds. Errors are ``E2AFieldError`` with a field
path relative to the RPC request, which the gRPC layer maps to INVALID_ARGUMENT.
"""

from __future__ import annotations

import uuid
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from e2a_grpc import jsontext
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError, type_name
from e2a_grpc.model import E2AEnvelope, E2AProvenance, E2AResponse, IdentityOrigin, utc_now_iso
from e2a_grpc.model.constants import ACP_SESSION_UPDATE
from e2a_grpc.model.enums import ResponseKind, ResponseStatus, SourceProtocol
from e2a_grpc.model.readers import JsonRpcIdValue
from e2a_grpc.protocols import a2a, acp, jsonrpc

_CONVERTER_FROM_ACP_PEER = "e2a_grpc.conversion:from_acp"


@dataclass(frozen=True)
class NotApplicable:
    """A conversion that does not apply to the given record: an answer, not an error."""

    reason: str


# --- ToACP ---------------------------------------------------------------------------------------


def to_acp(
    record: E2AEnvelope | E2AResponse,
    *,
    session_prompt_methods: Container[str] = (),
    wire: bool = False,
) -> dict[str, Any] | NotApplicable:
    """An envelope as an ACP JSON-RPC request (``acp.envelope_to_acp_call``), or a response as an
    ACP JSON-RPC response.

    The default is exactly the reference adapters' shape; ``wire`` gives the camelCase ACP that
    agents expect, and ``session_prompt_methods`` names gateway methods to send as session/prompt.
    """
    if isinstance(record, E2AEnvelope):
        return acp.envelope_to_acp_call(record, session_prompt_methods=session_prompt_methods, wire=wire)
    message = acp.e2a_response_to_acp_jsonrpc_response(record)
    if message is None and wire and record.response_kind == ResponseKind.ACP_SESSION_UPDATE:
        # On the wire a session update is a notification to the client (spec 12.6).
        return jsonrpc.notification(ACP_SESSION_UPDATE, acp.camel_keys(record.body))
    if message is None:
        return NotApplicable(f"response_kind {record.response_kind!r} has no ACP JSON-RPC response")
    if wire and isinstance(message.get("result"), dict):
        message["result"] = acp.camel_keys(message["result"])
    return message


# --- FromACP -------------------------------------------------------------------------------------


def from_acp(
    text: str,
    *,
    channel: str | None = None,
    identity_origin: IdentityOrigin = IdentityOrigin.USER,
) -> list[E2AEnvelope | E2AResponse]:
    """ACP JSON-RPC text (one message or a batch) as E2A records, one per message, in order."""
    document = jsontext.loads(text, "json")
    if isinstance(document, list):
        if not document:
            raise E2AValueError("json", "an empty JSON-RPC batch is invalid")
        return [_from_acp_message(item, f"json[{i}]", channel, identity_origin) for i, item in enumerate(document)]
    return [_from_acp_message(document, "json", channel, identity_origin)]


def _session_id(params: dict[str, Any]) -> str | None:
    for key in ("sessionId", "session_id"):
        value = params.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _from_acp_message(
    message: Any, path: str, channel: str | None, origin: IdentityOrigin
) -> E2AEnvelope | E2AResponse:
    if not isinstance(message, dict):
        raise E2ATypeError(path, f"a JSON-RPC message is an object, got {type_name(message)}")
    jsonrpc.check_version(message, path)
    rpc_id = jsonrpc.message_id(message, path)
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            raise E2ATypeError(f"{path}.method", f"expected a non-empty string, got {type_name(method)}")
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            raise E2ATypeError(f"{path}.params", f"E2A carries ACP params as an object, got {type_name(params)}")
        params = params or {}
        if method == ACP_SESSION_UPDATE:
            return _acp_response(ResponseKind.ACP_SESSION_UPDATE, params, rpc_id, _session_id(params), channel)
        details = None if "id" in message else {"kind": "jsonrpc_notification"}
        try:
            return acp.envelope_from_acp_jsonrpc(
                method,
                params,
                jsonrpc_id=rpc_id,
                session_id=_session_id(params),
                channel=channel,
                identity_origin=origin,
                extra_provenance_details=details,
            )
        except E2AFieldError as exc:
            raise exc.under(path) from None
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error or "id" not in message:
        raise E2AValueError(
            f"{path}.method", "a JSON-RPC message needs a method (request), or an id with a result or an error"
        )
    if has_result:
        result = message["result"]
        if not isinstance(result, dict):
            raise E2ATypeError(f"{path}.result", f"E2A carries an ACP result as an object, got {type_name(result)}")
        return _acp_response(ResponseKind.ACP_PROMPT_RESULT, result, rpc_id, None, channel)
    error = message["error"]
    if not isinstance(error, dict) or not _is_int(error.get("code")) or not isinstance(error.get("message"), str):
        raise E2ATypeError(f"{path}.error", "a JSON-RPC error is an object with an integer code and a string message")
    return _acp_response(ResponseKind.ACP_JSONRPC_ERROR, error, rpc_id, None, channel)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _acp_response(
    kind: ResponseKind, body: dict[str, Any], rpc_id: JsonRpcIdValue, session_id: str | None, channel: str | None
) -> E2AResponse:
    final = kind != ResponseKind.ACP_SESSION_UPDATE
    if kind == ResponseKind.ACP_JSONRPC_ERROR:
        status = ResponseStatus.FAILED
    else:
        status = ResponseStatus.SUCCEEDED if final else ResponseStatus.IN_PROGRESS
    now = utc_now_iso()
    return E2AResponse(
        response_id=str(uuid.uuid4()),
        is_final=final,
        status=status,
        response_kind=kind,
        timestamp=now,
        provenance=E2AProvenance(
            source_protocol=SourceProtocol.ACP,
            converter=_CONVERTER_FROM_ACP_PEER,
            converted_at=now,
            details={"kind": "jsonrpc_response" if final else "jsonrpc_notification"},
        ),
        body=body,
        jsonrpc_id=rpc_id,
        session_id=session_id,
        channel=channel,
    )


# --- ToA2AStream ---------------------------------------------------------------------------------


def to_a2a_stream(response: E2AResponse, *, project_native_kinds: bool = False) -> dict[str, Any] | NotApplicable:
    """An A2A StreamResponse JSON for a response: the reference projection of ``a2a.stream_event``,
    and with ``project_native_kinds`` also e2a.chunk / e2a.complete / e2a.error / e2a.input_required."""
    payload = a2a.e2a_response_to_a2a_stream_payload(response)
    if payload is not None:
        return payload
    kind = response.response_kind
    if kind == ResponseKind.A2A_STREAM_EVENT:
        return NotApplicable(
            "a2a.stream_event needs body.branch (task, message, status_update, artifact_update) "
            "and an object body.payload"
        )
    if not project_native_kinds:
        return NotApplicable(f"response_kind {kind!r} is not a2a.stream_event (set project_native_kinds for e2a.*)")
    if kind == ResponseKind.E2A_CHUNK:
        return a2a.artifact_update(response)
    if kind in (ResponseKind.E2A_COMPLETE, ResponseKind.E2A_ERROR, ResponseKind.E2A_INPUT_REQUIRED):
        return a2a.final_status_update(response)
    return NotApplicable(f"response_kind {kind!r} has no A2A stream projection")


# --- FromA2A -------------------------------------------------------------------------------------


def from_a2a(
    text: str,
    *,
    channel: str | None = None,
    identity_origin: IdentityOrigin = IdentityOrigin.USER,
) -> E2AEnvelope:
    """A2A SendMessage params (or a JSON-RPC message/send request carrying them) as an envelope."""
    document = jsontext.loads(text, "json")
    if not isinstance(document, dict):
        raise E2ATypeError("json", f"A2A SendMessage params are an object, got {type_name(document)}")
    path: str = "json"
    rpc_id: JsonRpcIdValue = None
    details = None
    if "jsonrpc" in document or "method" in document:
        method = document.get("method")
        if method not in a2a.SEND_METHODS:
            raise E2AValueError("json.method", f"expected one of {', '.join(a2a.SEND_METHODS)}, got {method!r}")
        rpc_id = jsonrpc.message_id(document, "json")
        details = {"rpc": method}
        document, path = document.get("params"), "json.params"
        if not isinstance(document, dict):
            raise E2ATypeError(path, f"expected an object, got {type_name(document)}")
    message = document.get("message")
    if not isinstance(message, dict):
        raise E2ATypeError(f"{path}.message", f"an A2A SendMessage needs a message object, got {type_name(message)}")
    ids = {}
    for key in ("taskId", "contextId"):
        value = message.get(key)
        if value is not None and not isinstance(value, str):
            raise E2ATypeError(f"{path}.message.{key}", f"expected a string, got {type_name(value)}")
        ids[key] = value
    try:
        envelope = a2a.envelope_from_a2a_send_message(
            task_id=ids["taskId"],
            context_id=ids["contextId"],
            message_body=message,
            metadata=document.get("metadata"),
            configuration=document.get("configuration"),
            channel=channel,
            identity_origin=identity_origin,
            extra_provenance_details=details,
        )
    except E2AFieldError as exc:
        raise exc.under(path) from None
    envelope.jsonrpc_id = rpc_id
    if isinstance(message.get("messageId"), str):
        envelope.message_id = message["messageId"]
    return envelope
