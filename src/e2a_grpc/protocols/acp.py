"""ACP (Agent Client Protocol) and E2A: the reference adapters (spec sections 7, 8 and 12.6) and the
wire dialect.

The reference adapters turn an ACP JSON-RPC request into an ``E2AEnvelope`` (``provenance`` saying
it came from ACP), an envelope into an ACP JSON-RPC call, and a response into an ACP JSON-RPC
response (or ``None`` when that does not apply). Their output keeps E2A's snake_case keys; the wire
dialect (``wire_request``, ``camel_keys``) gives the camelCase ACP that real agents expect.
"""

from __future__ import annotations

import functools
from collections.abc import Container, Mapping
from typing import Any

from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name
from e2a_grpc.model import readers
from e2a_grpc.model.constants import ACP_SESSION_PROMPT
from e2a_grpc.model.enums import IdentityOrigin, ResponseKind, SourceProtocol
from e2a_grpc.model.parts import E2AProvenance
from e2a_grpc.model.readers import JsonRpcIdValue
from e2a_grpc.model.records import E2AEnvelope, E2AResponse, utc_now_iso
from e2a_grpc.protocols import jsonrpc

_CONVERTER_FROM_ACP = "e2a_grpc.protocols.acp:envelope_from_acp_jsonrpc"
#: The fields of ACP's PromptRequest (schema v1); wire-dialect session/prompt params keep only these.
_PROMPT_REQUEST_KEYS = ("sessionId", "prompt", "_meta")


# --- ACP -> E2A ----------------------------------------------------------------------------------


def envelope_from_acp_jsonrpc(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    jsonrpc_id: JsonRpcIdValue = None,
    session_id: str | None = None,
    channel: str | None = None,
    identity_origin: IdentityOrigin | str = IdentityOrigin.USER,
    converter: str | None = None,
    extra_provenance_details: dict[str, Any] | None = None,
) -> E2AEnvelope:
    """An ACP JSON-RPC request (method + params) as an envelope with ``source_protocol`` "acp"."""
    if not isinstance(method, str):
        raise E2ATypeError("method", f"expected a string, got {type_name(method)}")
    copied = readers.json_object(params, "params")
    resolved_session = session_id or copied.get("session_id")
    details: dict[str, Any] = {"kind": "jsonrpc_request", "jsonrpc_method": method}
    if jsonrpc_id is not None:
        details["jsonrpc_id"] = jsonrpc_id
    details.update(readers.json_object(extra_provenance_details, "extra_provenance_details"))
    return E2AEnvelope.from_dict(
        {
            "provenance": E2AProvenance(
                source_protocol=SourceProtocol.ACP,
                converter=converter or _CONVERTER_FROM_ACP,
                converted_at=utc_now_iso(),
                details=details,
            ),
            "jsonrpc_id": jsonrpc_id,
            "method": method,
            "params": copied,
            "session_id": resolved_session if isinstance(resolved_session, str) else None,
            "channel": channel,
            "identity_origin": readers.identity_origin(identity_origin, "identity_origin"),
        }
    )


# --- E2A -> ACP ----------------------------------------------------------------------------------


#: The key of the prompt in ``session/prompt`` params.
PROMPT_KEY = "prompt"
#: The E2A key of a prompt's content blocks, when ``prompt`` is not set.
CONTENT_BLOCKS_KEY = "content_blocks"
#: The keys of a prompt's text, when it has no content blocks: the first one set is the text.
PROMPT_TEXT_KEYS = ("text", "content", "query")
#: The envelope method whose ACP call takes its JSON-RPC method from ``ext_method``.
EXT_METHOD = "ext"


def params_unchanged(method: str | None, keys: Container[str]) -> bool:
    """Whether ``merge_params_to_acp_prompt`` gives params with these ``keys`` as they are: for every
    method but a ``session/prompt`` whose params have no ``prompt`` yet.
    """
    return method != ACP_SESSION_PROMPT or PROMPT_KEY in keys


def prompt_source(params: Mapping[str, Any]) -> tuple[str, Any] | None:
    """Which key of ``params`` holds the prompt, and its value (spec section 7): the one rule of what a
    request's prompt is, for the ACP call, Chat's validation, every Chat backend and the prompt size.

    ``prompt`` whatever it holds; else ``content_blocks`` when a non-empty list; else the first of
    ``text`` / ``content`` / ``query`` that is set (not empty, null, 0 or false), whatever it holds.
    ``None`` when params carry none of them.
    """
    if PROMPT_KEY in params:
        return PROMPT_KEY, params[PROMPT_KEY]
    blocks = params.get(CONTENT_BLOCKS_KEY)
    if isinstance(blocks, list) and blocks:
        return CONTENT_BLOCKS_KEY, blocks
    for key in PROMPT_TEXT_KEYS:
        value = params.get(key)
        if value:
            return key, value
    return None


def prompt_of(key: str, value: Any) -> Any:
    """The ``session/prompt`` prompt for a ``prompt_source``: ``prompt`` as it is, a copy of the
    ``content_blocks``, or a text block of a string text; ``None`` for a text that is not a string."""
    if key == PROMPT_KEY:
        return value
    if key == CONTENT_BLOCKS_KEY:
        return list(value)
    return [{"type": "text", "text": value}] if isinstance(value, str) else None


def merge_params_to_acp_prompt(envelope: E2AEnvelope, *, as_session_prompt: bool = False) -> dict[str, Any]:
    """The ACP ``session/prompt`` params for an envelope (spec section 7); ``envelope`` is not changed.

    Only for ``method == "session/prompt"`` (or any method with ``as_session_prompt``: a gateway
    method sent as session/prompt): fill ``prompt`` by ``prompt_source`` / ``prompt_of`` unless
    ``prompt`` is there, add ``session_id`` and merge ``acp_meta`` into ``_meta``. Any other method
    gets a shallow copy of ``params``.
    """
    if params_unchanged(ACP_SESSION_PROMPT if as_session_prompt else envelope.method, envelope.params):
        return dict(envelope.params)
    source = prompt_source(envelope.params)
    return prompt_request_params(envelope, None if source is None else prompt_of(*source))


def prompt_request_params(envelope: E2AEnvelope, prompt: Any) -> dict[str, Any]:
    """The ``session/prompt`` params of ``merge_params_to_acp_prompt`` for params that need a prompt,
    with the envelope's prompt read already (``prompt_of``; ``None``: it has none), as a Chat call
    reads it once."""
    params = dict(envelope.params)
    if prompt is not None:
        params[PROMPT_KEY] = prompt
    if envelope.session_id and "session_id" not in params:
        params["session_id"] = envelope.session_id
    if envelope.acp_meta:
        meta = params.get("_meta", {})
        if not isinstance(meta, dict):
            raise E2ATypeError("params._meta", f"expected an object to merge acp_meta into, got {type_name(meta)}")
        params["_meta"] = {**meta, **envelope.acp_meta}
    return params


def call_method(method: str | None, ext_method: str | None) -> str | None:
    """The JSON-RPC method of an envelope's ACP call: ``ext_method`` stands in for ``"ext"``."""
    return ext_method if method == EXT_METHOD and ext_method else method


def envelope_to_acp_jsonrpc_call(envelope: E2AEnvelope) -> dict[str, Any]:
    """The envelope as one JSON-RPC 2.0 call (the reference shape). ``provenance`` is not changed.

    A gateway method such as ``chat.send`` is passed through as it is (spec section 2): map it to
    an ACP method first when the peer is a pure ACP agent (``envelope_to_acp_call``).
    """
    return envelope_to_acp_call(envelope)


def envelope_to_acp_call(
    envelope: E2AEnvelope, *, session_prompt_methods: Container[str] = (), wire: bool = False
) -> dict[str, Any]:
    """The ACP JSON-RPC call for an envelope: ToACP's call policy, the one place it is written.

    - A method in ``session_prompt_methods`` (a gateway method such as ``chat.send``) is sent as
      ``session/prompt`` (spec section 2).
    - ``ext`` takes its JSON-RPC method from ``ext_method`` when that is set (``call_method``).
    - ``session/prompt`` params get the prompt, ``session_id`` and ``acp_meta`` merged in
      (``merge_params_to_acp_prompt``); any other method's params are forwarded as they are, ``{}``
      when the envelope has none.
    - ``wire`` gives the camelCase ACP that agents expect (``wire_request``), else the reference shape.

    ``envelope`` is not changed.
    """
    method = envelope.method
    as_session_prompt = method in session_prompt_methods
    if as_session_prompt:
        method = ACP_SESSION_PROMPT
    params = merge_params_to_acp_prompt(envelope, as_session_prompt=as_session_prompt)
    method = call_method(method, envelope.ext_method)
    if wire:
        return _wire_call(envelope.jsonrpc_id, method, params)
    return jsonrpc.request(envelope.jsonrpc_id, method, params)


def e2a_response_to_acp_jsonrpc_response(response: E2AResponse) -> dict[str, Any] | None:
    """One JSON-RPC 2.0 response (``result`` or ``error``) for a response, or ``None`` if not applicable.

    A complete ``projections.acp`` response wins; otherwise ``acp.prompt_result`` gives ``result`` =
    body, ``acp.jsonrpc_error`` gives ``error`` = body, and ``e2a.error`` gives a JSON-RPC error
    (non-integer codes become -32603 with the original in ``data.e2a_code``).
    """
    projection = response.projections.get("acp")
    if jsonrpc.is_response(projection):
        out = dict(projection)
        out.setdefault("id", response.jsonrpc_id)
        return out

    kind = response.response_kind
    body = dict(response.body)
    if kind == ResponseKind.ACP_PROMPT_RESULT:
        return jsonrpc.result(response.jsonrpc_id, body)
    if kind == ResponseKind.ACP_JSONRPC_ERROR:
        return jsonrpc.error(response.jsonrpc_id, body)
    if kind != ResponseKind.E2A_ERROR:
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
        "code": raw_code if code_is_int else jsonrpc.ErrorCode.INTERNAL_ERROR.value,
        "message": _message_text(body.get("message")),
    }
    if data:
        error["data"] = data
    return jsonrpc.error(response.jsonrpc_id, error)


def _message_text(message: Any) -> str:
    if not message:
        return ""
    return message if isinstance(message, str) else str(message)


# --- the wire dialect ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)  # the same few keys come in every call; bounded, as callers choose them
def _camel(key: str) -> str:
    if key.startswith("_") or "_" not in key:
        return key
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_keys(values: dict[str, Any]) -> dict[str, Any]:
    """An object's top-level keys in ACP's camelCase (``session_id`` -> ``sessionId``; ``_meta`` stays)."""
    return {_camel(key): value for key, value in values.items()}


def wire_prompt(blocks: list[Any], field: str) -> list[dict[str, Any]]:
    """A prompt's content blocks as an ACP agent takes them (camelCase keys), or an error naming the
    block (under ``field``) that is not an object with a string ``type``."""
    return [_wire_content_block(block, field, index) for index, block in enumerate(blocks)]


def _wire_content_block(block: Any, field: str, index: int) -> dict[str, Any]:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise E2ATypeError(f"{field}[{index}]", "an ACP content block is an object with a string 'type'")
    out = camel_keys(block)
    if isinstance(out.get("resource"), dict):
        out["resource"] = camel_keys(out["resource"])
    return out


def wire_request(call: dict[str, Any]) -> dict[str, Any]:
    """A reference-shape ACP call (``envelope_to_acp_jsonrpc_call``) as an agent expects it on the wire."""
    return _wire_call(call["id"], call["method"], call["params"])


def _wire_call(rpc_id: JsonRpcIdValue, method: str | None, params: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(method, str) or not method:
        raise E2AValueError("method", "a wire ACP request needs a method")
    params = camel_keys(params)
    if method == ACP_SESSION_PROMPT:
        if not isinstance(params.get("sessionId"), str) or not params["sessionId"]:
            raise E2AValueError("session_id", "ACP session/prompt needs a session id (session_id or params)")
        prompt = params.get("prompt")
        if not isinstance(prompt, list) or not prompt:
            raise E2AValueError("params", "ACP session/prompt needs a prompt: give prompt, content_blocks or text")
        params["prompt"] = wire_prompt(prompt, "params.prompt")
        params = {key: params[key] for key in _PROMPT_REQUEST_KEYS if key in params}
    if rpc_id is None:
        return jsonrpc.notification(method, params)
    return jsonrpc.request(rpc_id, method, params)
