"""What the ConversionService RPCs do, as pure functions on E2A records and JSON.

They reuse the reference adapters (``e2a_grpc.adapters``) and add what a service needs on top:
reading ACP and A2A JSON as peers send it, the agent-to-client ACP direction, the wire (camelCase)
ACP dialect, and A2A projections of the native E2A kinds. Errors are ``E2AFieldError`` with a field
path relative to the RPC request, which the service maps to INVALID_ARGUMENT.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

import orjson

from e2a_grpc import codec, jsontext
from e2a_grpc.adapters import (
    acp_jsonrpc_call,
    acp_method,
    acp_params_unchanged,
    e2a_response_to_a2a_stream_payload,
    e2a_response_to_acp_jsonrpc_response,
    envelope_from_a2a_send_message,
    envelope_from_acp_jsonrpc,
    envelope_to_acp_jsonrpc_call,
)
from e2a_grpc.constants import (
    E2A_RESPONSE_KIND_A2A_STREAM_EVENT,
    E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR,
    E2A_RESPONSE_KIND_ACP_PROMPT_RESULT,
    E2A_RESPONSE_KIND_ACP_SESSION_UPDATE,
    E2A_RESPONSE_KIND_E2A_CHUNK,
    E2A_RESPONSE_KIND_E2A_COMPLETE,
    E2A_RESPONSE_KIND_E2A_ERROR,
    E2A_RESPONSE_STATUS_FAILED,
    E2A_RESPONSE_STATUS_IN_PROGRESS,
    E2A_RESPONSE_STATUS_SUCCEEDED,
    E2A_SOURCE_PROTOCOL_ACP,
)
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError, type_name
from e2a_grpc.models import E2AEnvelope, E2AProvenance, E2AResponse, IdentityOrigin, utc_now_iso

ACP_SESSION_PROMPT = "session/prompt"
ACP_SESSION_UPDATE = "session/update"
# The fields of ACP's PromptRequest (schema v1); wire-dialect session/prompt params keep only these.
_ACP_PROMPT_REQUEST_KEYS = ("sessionId", "prompt", "_meta")
_CONVERTER_FROM_ACP_PEER = "e2a_grpc.conversion:from_acp"
_A2A_SEND_METHODS = ("message/send", "message/stream", "SendMessage", "SendStreamingMessage")


@dataclass(frozen=True)
class NotApplicable:
    """A conversion that does not apply to the given record: an answer, not an error."""

    reason: str


def prefixed(error: E2AFieldError, prefix: str) -> E2AFieldError:
    """The same error with its field path placed under ``prefix`` (the RPC request field)."""
    field = error.field if error.field != "$" else ""
    path = f"{prefix}.{field}" if field and not field.startswith("[") else f"{prefix}{field}"
    return type(error)(path, error.problem)


# --- ToACP ---------------------------------------------------------------------------------------


def to_acp(
    record: E2AEnvelope | E2AResponse,
    *,
    session_prompt_methods: tuple[str, ...] = (),
    wire: bool = False,
) -> dict[str, Any] | NotApplicable:
    """An envelope as an ACP JSON-RPC request, or a response as an ACP JSON-RPC response.

    The default is exactly the reference adapters' shape; ``wire`` gives the camelCase ACP that
    agents expect, and ``session_prompt_methods`` names gateway methods to send as session/prompt.
    """
    if isinstance(record, E2AEnvelope):
        if record.method in session_prompt_methods:
            record = replace(record, method=ACP_SESSION_PROMPT)
        call = envelope_to_acp_jsonrpc_call(record)
        return _wire_request(call) if wire else call
    message = e2a_response_to_acp_jsonrpc_response(record)
    if message is None and wire and record.response_kind == E2A_RESPONSE_KIND_ACP_SESSION_UPDATE:
        # On the wire a session update is a notification to the client (spec 12.6).
        return {"jsonrpc": "2.0", "method": ACP_SESSION_UPDATE, "params": _camel_keys(record.body)}
    if message is None:
        return NotApplicable(f"response_kind {record.response_kind!r} has no ACP JSON-RPC response")
    if wire and isinstance(message.get("result"), dict):
        message["result"] = _camel_keys(message["result"])
    return message


def envelope_message_to_acp_json(
    message: Any,
    *,
    session_prompt_methods: tuple[str, ...] = (),
    wire: bool = False,
) -> str:
    """``to_acp`` of ``E2AEnvelope.from_proto(message)`` as E2A wire JSON text: ToACP's hot path.

    Where ToACP leaves ``params`` as they are (default dialect, and any method but a session/prompt
    whose prompt has to be merged in), the caller's params JSON text is checked and forwarded as it
    is, not decoded and re-encoded: that is most of the work, and the text stays exactly as its
    writer made it. Anything else, and any error, takes the general path, which gives the reference
    result and the error for bad input; so both paths accept and reject the same messages (up to
    the nesting edge case ``jsontext.object_or_none`` names).
    """
    if not wire:
        text = _call_with_params_forwarded(message, session_prompt_methods)
        if text is not None:
            return text
    envelope = E2AEnvelope.from_proto(message)
    call = to_acp(envelope, session_prompt_methods=session_prompt_methods, wire=wire)
    # Every float in ``call`` was read by a JSON parser or from a checked double field: no NaN guard.
    return jsontext.dumps_document(call, parsed=True)


def _call_with_params_forwarded(message: Any, session_prompt_methods: tuple[str, ...]) -> str | None:
    """The ACP call's JSON text with the params text of ``message`` in it unchanged, or None if
    the general path has to decide (params change, unusual values, or an error).
    """
    try:
        fields = codec.acp_call_fields_from_proto(message)
    except E2AFieldError:
        return None  # the general path raises the same error, or the one for an earlier field
    method, params_text = fields["method"], fields["params"]
    if method in session_prompt_methods:
        method = ACP_SESSION_PROMPT
    if method == ACP_SESSION_PROMPT and '"prompt"' not in params_text:
        return None  # a prompt is merged in (no key "prompt" without that text): not worth a parse
    params = jsontext.object_or_none(params_text)
    if params is None or not acp_params_unchanged(method, params):
        return None
    try:
        codec.check_other_envelope_fields(message)
    except E2AFieldError:
        return None
    call = acp_jsonrpc_call(
        fields["jsonrpc_id"], acp_method(method, fields["ext_method"]), orjson.Fragment(params_text or "{}")
    )
    try:
        return orjson.dumps(call).decode()
    except orjson.JSONEncodeError:
        return None  # a jsonrpc_id beyond 64 bits: the standard encoder writes it


def _camel(key: str) -> str:
    if key.startswith("_") or "_" not in key:
        return key
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _camel_keys(values: dict[str, Any]) -> dict[str, Any]:
    return {_camel(key): value for key, value in values.items()}


def _wire_content_block(block: Any, path: str) -> dict[str, Any]:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise E2ATypeError(path, "an ACP content block is an object with a string 'type'")
    out = _camel_keys(block)
    if isinstance(out.get("resource"), dict):
        out["resource"] = _camel_keys(out["resource"])
    return out


def _wire_request(call: dict[str, Any]) -> dict[str, Any]:
    method = call["method"]
    if not isinstance(method, str) or not method:
        raise E2AValueError("method", "a wire ACP request needs a method")
    params = _camel_keys(call["params"])
    if method == ACP_SESSION_PROMPT:
        if not isinstance(params.get("sessionId"), str) or not params["sessionId"]:
            raise E2AValueError("session_id", "ACP session/prompt needs a session id (session_id or params)")
        prompt = params.get("prompt")
        if not isinstance(prompt, list) or not prompt:
            raise E2AValueError("params", "ACP session/prompt needs a prompt: give prompt, content_blocks or text")
        params["prompt"] = [_wire_content_block(block, f"params.prompt[{i}]") for i, block in enumerate(prompt)]
        params = {key: params[key] for key in _ACP_PROMPT_REQUEST_KEYS if key in params}
    if call["id"] is None:
        return {"jsonrpc": "2.0", "method": method, "params": params}  # a notification has no id
    return {"jsonrpc": "2.0", "id": call["id"], "method": method, "params": params}


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


def _jsonrpc_id(message: dict[str, Any], path: str) -> str | int | float | None:
    value = message.get("id")
    if value is None or isinstance(value, (str, float)) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise E2ATypeError(f"{path}.id", f"a JSON-RPC id is a string, number or null, got {type_name(value)}")


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
    if message.get("jsonrpc") != "2.0":
        raise E2AValueError(f"{path}.jsonrpc", 'must be "2.0"')
    rpc_id = _jsonrpc_id(message, path)
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            raise E2ATypeError(f"{path}.method", f"expected a non-empty string, got {type_name(method)}")
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            raise E2ATypeError(f"{path}.params", f"E2A carries ACP params as an object, got {type_name(params)}")
        params = params or {}
        if method == ACP_SESSION_UPDATE:
            return _acp_response(E2A_RESPONSE_KIND_ACP_SESSION_UPDATE, params, rpc_id, _session_id(params), channel)
        details = None if "id" in message else {"kind": "jsonrpc_notification"}
        try:
            return envelope_from_acp_jsonrpc(
                method,
                params,
                jsonrpc_id=rpc_id,
                session_id=_session_id(params),
                channel=channel,
                identity_origin=origin,
                extra_provenance_details=details,
            )
        except E2AFieldError as exc:
            raise prefixed(exc, path) from None
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error or "id" not in message:
        raise E2AValueError(
            f"{path}.method", "a JSON-RPC message needs a method (request), or an id with a result or an error"
        )
    if has_result:
        result = message["result"]
        if not isinstance(result, dict):
            raise E2ATypeError(f"{path}.result", f"E2A carries an ACP result as an object, got {type_name(result)}")
        return _acp_response(E2A_RESPONSE_KIND_ACP_PROMPT_RESULT, result, rpc_id, None, channel)
    error = message["error"]
    if not isinstance(error, dict) or not _is_int(error.get("code")) or not isinstance(error.get("message"), str):
        raise E2ATypeError(f"{path}.error", "a JSON-RPC error is an object with an integer code and a string message")
    return _acp_response(E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR, error, rpc_id, None, channel)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _acp_response(
    kind: str, body: dict[str, Any], rpc_id: str | int | float | None, session_id: str | None, channel: str | None
) -> E2AResponse:
    final = kind != E2A_RESPONSE_KIND_ACP_SESSION_UPDATE
    failed = kind == E2A_RESPONSE_KIND_ACP_JSONRPC_ERROR
    now = utc_now_iso()
    return E2AResponse(
        response_id=str(uuid.uuid4()),
        is_final=final,
        status=E2A_RESPONSE_STATUS_FAILED
        if failed
        else (E2A_RESPONSE_STATUS_SUCCEEDED if final else E2A_RESPONSE_STATUS_IN_PROGRESS),
        response_kind=kind,
        timestamp=now,
        provenance=E2AProvenance(
            source_protocol=E2A_SOURCE_PROTOCOL_ACP,
            converter=_CONVERTER_FROM_ACP_PEER,
            converted_at=now,
            details={"kind": "jsonrpc_notification" if not final else "jsonrpc_response"},
        ),
        body=body,
        jsonrpc_id=rpc_id,
        session_id=session_id,
        channel=channel,
    )


# --- ToA2AStream ---------------------------------------------------------------------------------


def to_a2a_stream(response: E2AResponse, *, project_native_kinds: bool = False) -> dict[str, Any] | NotApplicable:
    """An A2A StreamResponse JSON for a response: the reference projection of ``a2a.stream_event``,
    and with ``project_native_kinds`` also e2a.chunk / e2a.complete / e2a.error."""
    payload = e2a_response_to_a2a_stream_payload(response)
    if payload is not None:
        return payload
    kind = response.response_kind
    if kind == E2A_RESPONSE_KIND_A2A_STREAM_EVENT:
        return NotApplicable(
            "a2a.stream_event needs body.branch (task, message, status_update, artifact_update) "
            "and an object body.payload"
        )
    if not project_native_kinds:
        return NotApplicable(f"response_kind {kind!r} is not a2a.stream_event (set project_native_kinds for e2a.*)")
    if kind == E2A_RESPONSE_KIND_E2A_CHUNK:
        return _artifact_update(response)
    if kind in (E2A_RESPONSE_KIND_E2A_COMPLETE, E2A_RESPONSE_KIND_E2A_ERROR):
        return _final_status_update(response)
    return NotApplicable(f"response_kind {kind!r} has no A2A stream projection")


def _task_ids(response: E2AResponse) -> dict[str, str]:
    task_id = response.task_id or response.request_id
    if not task_id:
        raise E2AValueError("task_id", "an A2A event needs a task id: set task_id (or request_id)")
    return {"taskId": task_id, "contextId": response.context_id or response.session_id or task_id}


def _artifact_update(response: E2AResponse) -> dict[str, Any]:
    body = response.body
    delta_kind = body.get("delta_kind")
    delta = body.get("delta")
    if isinstance(delta, str):
        part: dict[str, Any] = {"text": delta}
    elif isinstance(delta, (dict, list)):
        part = {"data": delta}
    else:
        raise E2ATypeError("body.delta", f"an e2a.chunk delta is a string or structured JSON, got {type_name(delta)}")
    if isinstance(body.get("mime_type"), str):
        part["mediaType"] = body["mime_type"]
    if isinstance(delta_kind, str):
        part["metadata"] = {"e2a_delta_kind": delta_kind}
    artifact_id = f"e2a-{delta_kind}" if isinstance(delta_kind, str) and delta_kind else "e2a-output"
    return {
        "artifactUpdate": {
            **_task_ids(response),
            "artifact": {"artifactId": artifact_id, "parts": [part]},
            "append": response.sequence > 0,
            "lastChunk": False,
        }
    }


def _final_status_update(response: E2AResponse) -> dict[str, Any]:
    ids = _task_ids(response)
    body = response.body
    status: dict[str, Any]
    if response.response_kind == E2A_RESPONSE_KIND_E2A_COMPLETE:
        status = {"state": "TASK_STATE_COMPLETED"}
        metadata = {"e2a_result": body.get("result")}
    else:
        text = body.get("message")
        status = {
            "state": "TASK_STATE_FAILED",
            "message": {
                "messageId": response.response_id or str(uuid.uuid4()),
                **ids,
                "role": "ROLE_AGENT",
                "parts": [{"text": text if isinstance(text, str) else ""}],
            },
        }
        metadata = {"e2a_error": {"code": body.get("code"), "details": body.get("details")}}
    if response.timestamp:
        status["timestamp"] = response.timestamp
    return {"statusUpdate": {**ids, "status": status, "metadata": metadata}}


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
    path, rpc_id, details = "json", None, None
    if "jsonrpc" in document or "method" in document:
        method = document.get("method")
        if method not in _A2A_SEND_METHODS:
            raise E2AValueError("json.method", f"expected one of {', '.join(_A2A_SEND_METHODS)}, got {method!r}")
        rpc_id = _jsonrpc_id(document, "json")
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
        envelope = envelope_from_a2a_send_message(
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
        raise prefixed(exc, path) from None
    envelope.jsonrpc_id = rpc_id
    if isinstance(message.get("messageId"), str):
        envelope.message_id = message["messageId"]
    return envelope
