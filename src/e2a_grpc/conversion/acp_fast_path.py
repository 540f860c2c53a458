"""ToACP's hot paths: an ``e2a.v1.E2AEnvelope`` straight to the ACP call's JSON text.

Where ToACP leaves ``params`` as they are (default dialect, and any method but a session/prompt
whose prompt has to be merged in), the caller's params JSON text is checked and forwarded as it is,
not decoded and re-encoded: that is most of the work, and the text stays exactly as its writer made
it. Anything else, and any error, takes the general path (``E2AEnvelope.from_proto`` + ``to_acp``),
which gives the reference result and the error for bad input; so both paths accept and reject the
same messages.

``to_acp_reply`` goes further for the common case, in C: from the serialized ``ToACPRequest`` to the
serialized ``ToACPResponse``, with no message parsed or built in Python. It answers only requests
whose envelope decodes without error and whose params text is as the codec writes it (so forwarding
it is what the general path writes too), and leaves everything else to the servicer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import orjson

from e2a.v1 import conversion_service_pb2, e2a_pb2
from e2a_grpc import _canonical, jsontext
from e2a_grpc.conversion import to_acp
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope
from e2a_grpc.model.constants import ACP_SESSION_PROMPT
from e2a_grpc.model.fields import Kind
from e2a_grpc.model.proto import DECODERS, Decoder
from e2a_grpc.protocols import acp, jsonrpc


def envelope_message_to_acp_json(
    message: e2a_pb2.E2AEnvelope,
    *,
    session_prompt_methods: tuple[str, ...] = (),
    wire: bool = False,
) -> str:
    """``to_acp`` of ``E2AEnvelope.from_proto(message)`` as E2A wire JSON text."""
    if not wire:
        text = _call_with_params_forwarded(message, session_prompt_methods)
        if text is not None:
            return text
    envelope = E2AEnvelope.from_proto(message)
    call = to_acp(envelope, session_prompt_methods=session_prompt_methods, wire=wire)
    # Every float in ``call`` was read by a JSON parser or from a checked double field: no NaN guard.
    return jsontext.dumps(call, parsed=True)


def _check_object_text(text: str, field: str) -> None:
    """Raise what ``loads_object`` raises for ``text``, without a lossless decode of a good object."""
    if jsontext.object_or_none(text) is None:
        jsontext.loads_object(text, field)


def _check_provenance(message: e2a_pb2.E2AProvenance, field: str) -> None:
    if message.details:
        _check_object_text(message.details, f"{field}.details")


# (field, has presence, check) for the fields read, in field order.
_Reads = tuple[tuple[str, bool, Decoder | None], ...]

# An ACP call whose params pass through needs only these of an envelope (params as JSON text).
_CALL_FIELDS = ("method", "ext_method", "jsonrpc_id", "params")
# How the other fields are checked: as ``from_proto`` decodes them, but values that are not kept
# are only checked, not decoded losslessly. Kinds not here need no check, and are not read at all:
# that is what makes this cheaper than ListFields().
_CHECKS: dict[Kind, Decoder] = {
    **DECODERS,
    Kind.OBJECT: _check_object_text,
    Kind.OPTIONAL_OBJECT: _check_object_text,
    Kind.PROVENANCE: _check_provenance,
}
del _CHECKS[Kind.TEXT_LIST]  # any repeated string is valid


def _reads(select: Callable[[Any], bool], check: Callable[[Any], Decoder | None]) -> _Reads:
    return tuple((item.name, item.descriptor.has_presence, check(item)) for item in E2AEnvelope.FIELDS if select(item))


_CALL_READS = _reads(
    lambda item: item.name in _CALL_FIELDS,
    lambda item: None if item.name == "params" else DECODERS.get(item.kind),
)
_CHECK_READS = _reads(
    lambda item: item.name not in _CALL_FIELDS and item.kind in _CHECKS, lambda item: _CHECKS[item.kind]
)


def _read_fields(message: e2a_pb2.E2AEnvelope, reads: _Reads) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, has_presence, check in reads:
        if has_presence and not message.HasField(key):
            values[key] = None
            continue
        value = getattr(message, key)
        if check is not None and (has_presence or value):  # from_proto does not decode a wire default
            value = check(value, key)
        values[key] = value
    return values


_PROMPT_KEYS = (acp.PROMPT_KEY,)
_QUOTED_PROMPT_KEY = f'"{acp.PROMPT_KEY}"'


def _call_with_params_forwarded(message: e2a_pb2.E2AEnvelope, session_prompt_methods: tuple[str, ...]) -> str | None:
    """The ACP call's JSON text with the params text of ``message`` in it unchanged, or None if
    the general path has to decide (params change, unusual values, or an error).
    """
    try:
        fields = _read_fields(message, _CALL_READS)
    except E2AFieldError:
        return None  # the general path raises the same error, or the one for an earlier field
    method, params_text = fields["method"], fields["params"]
    if method in session_prompt_methods:
        method = ACP_SESSION_PROMPT
    if method == ACP_SESSION_PROMPT and _QUOTED_PROMPT_KEY not in params_text:
        return None  # a prompt is merged in (no key "prompt" without that text): not worth a parse
    # Text as orjson writes it is checked in one pass, without a dict made of it; other text is read.
    has_prompt = jsontext.canonical_object_has_key(params_text, acp.PROMPT_KEY) if params_text else None
    if has_prompt is None:
        params = jsontext.object_or_none(params_text)
        if params is None or not acp.params_unchanged(method, params):
            return None
    elif not acp.params_unchanged(method, _PROMPT_KEYS if has_prompt else ()):
        return None
    try:
        _read_fields(message, _CHECK_READS)
    except E2AFieldError:
        return None
    call = jsonrpc.request(
        fields["jsonrpc_id"], acp.call_method(method, fields["ext_method"]), orjson.Fragment(params_text or "{}")
    )
    try:
        return orjson.dumps(call).decode()
    except orjson.JSONEncodeError:
        return None  # a jsonrpc_id beyond 64 bits: the standard encoder writes it


def _reply_plan() -> _canonical.AcpCallPlan:
    """What ``_canonical.acp_call_reply`` needs to know, read from the schema and the modules that own it."""
    request = conversion_service_pb2.ToACPRequest.DESCRIPTOR.fields_by_name
    envelope = e2a_pb2.E2AEnvelope.DESCRIPTOR.fields_by_name
    rpc_id = e2a_pb2.JsonRpcId.DESCRIPTOR.fields_by_name
    # The round-trip check without its required fields: an envelope without identity_origin or
    # provenance decodes to their defaults (a round trip would write them), which the call leaves out.
    fields, _required, any_of = E2AEnvelope.CODEC.wire_plan
    # The call's text around its id, method and params, as ``_call_with_params_forwarded`` writes it.
    marks = (b"\x01", b"\x02", b"\x03")  # never in JSON text as orjson writes it
    template = orjson.dumps(jsonrpc.request(*map(orjson.Fragment, marks)))  # type: ignore[arg-type]
    before_id, rest = template.split(marks[0])
    before_method, rest = rest.split(marks[1])
    before_params, after_params = rest.split(marks[2])
    empty_reply = conversion_service_pb2.ToACPResponse(jsonrpc="").SerializeToString()  # the tag, then length 0
    return (
        (request["envelope"].number, request["session_prompt_methods"].number, request["dialect"].number),
        (fields, 0, any_of),
        (
            envelope["jsonrpc_id"].number,
            envelope["method"].number,
            envelope["params"].number,
            envelope["ext_method"].number,
        ),
        (rpc_id["string_value"].number, rpc_id["integer_value"].number),
        (ACP_SESSION_PROMPT.encode(), acp.EXT_METHOD.encode(), acp.PROMPT_KEY.encode(), orjson.dumps(None)),
        (empty_reply[:-1], before_id, before_method, before_params, after_params),
    )


#: ToACP's serialized reply for a serialized request, or None where the servicer has to answer it.
to_acp_reply: Callable[[bytes], bytes | None] = functools.partial(_canonical.acp_call_reply, _reply_plan())
