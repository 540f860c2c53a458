"""dict <-> protobuf conversion for the E2A messages (paired ``to_proto_x`` / ``from_proto_x``).

The dict side is the canonical E2A form (``to_dict()``: every key present, in protocol order).
Scalar fields map one-to-one (proto3 ``optional`` keeps null apart from ``""``); free-form JSON
fields travel as JSON text (see ``jsontext``); ``jsonrpc_id`` keeps its JSON type in a oneof.
This is the hot path of the service, so the tables below are plain tuples and dicts and the
generated message constructors (implemented in C) do the field assignment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from e2a_grpc import (
    _gen,  # noqa: F401  (makes the generated ``e2a.v1`` modules importable)
    jsontext,
)
from e2a_grpc.constants import E2A_SOURCE_PROTOCOL_E2A
from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name

from e2a.v1 import e2a_pb2  # isort: skip

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_ORIGIN_TO_PROTO: dict[Any, int] = {}
_ORIGIN_FROM_PROTO: dict[int, str] = {}
for _name in ("system", "user", "agent", "service"):
    _number = e2a_pb2.IdentityOrigin.Value(f"IDENTITY_ORIGIN_{_name.upper()}")
    _ORIGIN_FROM_PROTO[_number] = _name
    _ORIGIN_TO_PROTO[_name] = _number
# IdentityOrigin members hash by name, not value: index them too (imported lazily to avoid a cycle).
from e2a_grpc.models import E2AAuth, E2AProvenance, IdentityOrigin  # noqa: E402

_ORIGIN_TO_PROTO.update({origin: _ORIGIN_TO_PROTO[origin.value] for origin in IdentityOrigin})
_ORIGIN_MEMBER_FROM_PROTO = {number: IdentityOrigin(name) for number, name in _ORIGIN_FROM_PROTO.items()}

# Free-form JSON object slots: JSON text on the wire, "" meaning {}.
_ENVELOPE_OBJECTS = ("params", "channel_context", "a2a_metadata", "acp_meta")
_RESPONSE_OBJECTS = ("body", "projections", "channel_context", "metadata", "a2a_metadata", "acp_meta")


def _template(message: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """Every key of the canonical dict, in proto field order (= protocol order), set to None."""
    keys = [f.name for f in message.DESCRIPTOR.fields]
    return {key: defaults.get(key) for key in keys}


_ENVELOPE_DEFAULTS: dict[str, Any] = {"identity_origin": "user", "is_stream": False}
_RESPONSE_DEFAULTS: dict[str, Any] = {
    "identity_origin": "agent",
    "is_stream": False,
    "is_final": False,
    "sequence": 0,
    "status": "",
    "response_kind": "",
}


# --- JSON-RPC id ---------------------------------------------------------------------------------


def to_proto_jsonrpc_id(value: str | int | float, field: str = "jsonrpc_id") -> Any:
    if isinstance(value, str):
        return e2a_pb2.JsonRpcId(string_value=value)
    if isinstance(value, bool):
        raise E2ATypeError(field, "expected a string, number or null, got boolean")
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return e2a_pb2.JsonRpcId(integer_value=value)
        return e2a_pb2.JsonRpcId(big_integer_value=str(value))
    if isinstance(value, float):
        jsontext.check_value(value, field)
        return e2a_pb2.JsonRpcId(number_value=value)
    raise E2ATypeError(field, f"expected a string, number or null, got {type_name(value)}")


def from_proto_jsonrpc_id(message: Any, field: str = "jsonrpc_id") -> str | int | float | None:
    kind = message.WhichOneof("kind")
    if kind is None:
        return None
    value = getattr(message, kind)
    if kind == "number_value" and not math.isfinite(value):
        raise E2AValueError(field, f"number_value {value!r} is not a JSON number")
    if kind == "big_integer_value":
        digits = value[1:] if value.startswith("-") else value
        if not digits.isascii() or not digits.isdigit():
            raise E2AValueError(field, f"big_integer_value {value!r} is not a decimal integer")
        return int(value)
    return value  # type: ignore[no-any-return]


# --- nested messages -----------------------------------------------------------------------------


def _fields_of(value: Any) -> Mapping[str, Any]:
    """A canonical dict, or a model object's attributes."""
    return value if isinstance(value, dict) else vars(value)


def _object_text(value: Any, field: str) -> str:
    if not isinstance(value, dict):
        raise E2ATypeError(field, f"expected an object, got {type_name(value)}")
    return jsontext.dumps(value, field) if value else ""


def to_proto_provenance(value: Any) -> Any:
    return _build(e2a_pb2.E2AProvenance, _provenance_fields(value), "provenance")


def from_proto_provenance(message: Any, field: str = "provenance") -> dict[str, Any]:
    # Attribute reads, not ListFields(): cheaper for a message this small (it is on every record).
    details = message.details
    return {
        "source_protocol": message.source_protocol,
        "converter": message.converter if message.HasField("converter") else None,
        "converted_at": message.converted_at if message.HasField("converted_at") else None,
        "details": jsontext.loads_object(details, f"{field}.details") if details else {},
    }


def _default_provenance() -> dict[str, Any]:
    return {"source_protocol": E2A_SOURCE_PROTOCOL_E2A, "converter": None, "converted_at": None, "details": {}}


def to_proto_auth(value: Any, field: str = "auth") -> Any:
    values = _fields_of(value)
    headers = values["extra_headers"]
    if not isinstance(headers, dict):
        raise E2ATypeError(f"{field}.extra_headers", f"expected an object, got {type_name(headers)}")
    return _build(
        e2a_pb2.E2AAuth,
        {
            "method_id": values["method_id"],
            "bearer_token": values["bearer_token"],
            "api_key_ref": values["api_key_ref"],
            "credential_ref": values["credential_ref"],
            "extra_headers": [
                _build(e2a_pb2.HttpHeader, {"name": name, "value": text}, f"{field}.extra_headers.{name}")
                for name, text in headers.items()
            ],
            "meta": _object_text(values["_meta"], f"{field}._meta"),
        },
        field,
    )


def from_proto_auth(message: Any, field: str = "auth") -> dict[str, Any]:
    return {
        "method_id": message.method_id if message.HasField("method_id") else None,
        "bearer_token": message.bearer_token if message.HasField("bearer_token") else None,
        "api_key_ref": message.api_key_ref if message.HasField("api_key_ref") else None,
        "credential_ref": message.credential_ref if message.HasField("credential_ref") else None,
        "extra_headers": {header.name: header.value for header in message.extra_headers},
        "_meta": jsontext.loads_object(message.meta, f"{field}._meta") if message.meta else {},
    }


def to_proto_file_ref(value: Any, field: str = "file") -> Any:
    values = _fields_of(value)
    return _build(
        e2a_pb2.E2AFileRef,
        {
            "uri": values["uri"],
            "name": values["name"],
            "mime_type": values["mime_type"],
            "size": values["size"],
            "meta": _object_text(values["_meta"], f"{field}._meta"),
        },
        field,
    )


def from_proto_file_ref(message: Any, field: str = "file") -> dict[str, Any]:
    return {
        "uri": message.uri,
        "name": message.name if message.HasField("name") else None,
        "mime_type": message.mime_type if message.HasField("mime_type") else None,
        "size": message.size if message.HasField("size") else None,
        "_meta": jsontext.loads_object(message.meta, f"{field}._meta") if message.meta else {},
    }


# --- envelope and response -----------------------------------------------------------------------


def _provenance_fields(value: Any) -> dict[str, Any]:
    """Provenance as constructor fields (the message constructor builds the submessage in C)."""
    values = value if type(value) is dict else vars(value)
    details = values["details"]
    return {
        "source_protocol": values["source_protocol"],
        "converter": values["converter"],
        "converted_at": values["converted_at"],
        "details": _object_text(details, "provenance.details") if details or type(details) is not dict else "",
    }


def _encode_shared(values: Mapping[str, Any], fields: dict[str, Any], objects: tuple[str, ...]) -> None:
    """The fields E2AEnvelope and E2AResponse encode alike."""
    fields["provenance"] = _provenance_fields(values["provenance"])
    rpc_id = values["jsonrpc_id"]
    if rpc_id is not None:
        fields["jsonrpc_id"] = to_proto_jsonrpc_id(rpc_id)
    origin = values["identity_origin"]
    try:
        fields["identity_origin"] = _ORIGIN_TO_PROTO[origin]
    except (KeyError, TypeError):
        raise E2AValueError("identity_origin", f"{origin!r} is not one of system, user, agent, service") from None
    agent_ref = values["agent_ref"]
    if agent_ref is not None:
        if type(agent_ref) is not dict:
            raise E2ATypeError("agent_ref", f"expected an object or null, got {type_name(agent_ref)}")
        fields["agent_ref"] = jsontext.dumps(agent_ref, "agent_ref")
    for key in objects:
        value = values[key]
        if type(value) is not dict:
            raise E2ATypeError(key, f"expected an object, got {type_name(value)}")
        if value:
            fields[key] = jsontext.dumps(value, key)
        else:
            del fields[key]  # {} is the wire default: nothing to write


def to_proto_envelope(values: Mapping[str, Any]) -> Any:
    """A canonical envelope dict (or an ``E2AEnvelope``'s attributes) as ``e2a.v1.E2AEnvelope``."""
    # Plain fields pass through (the constructor skips None); _encode_shared replaces the rest.
    fields = dict(values)
    _encode_shared(values, fields, _ENVELOPE_OBJECTS)
    auth = values["auth"]
    if auth is not None:
        fields["auth"] = to_proto_auth(auth)
    return _build(e2a_pb2.E2AEnvelope, fields, "")


def to_proto_response(values: Mapping[str, Any]) -> Any:
    """A canonical response dict (or an ``E2AResponse``'s attributes) as ``e2a.v1.E2AResponse``."""
    fields = dict(values)
    _encode_shared(values, fields, _RESPONSE_OBJECTS)
    return _build(e2a_pb2.E2AResponse, fields, "")


def _decode_origin(number: int, field: str) -> str:
    try:
        return _ORIGIN_FROM_PROTO[number]
    except KeyError:
        raise E2AValueError(field, f"unknown IdentityOrigin value {number}") from None


def _decode_origin_member(number: int, field: str) -> IdentityOrigin:
    try:
        return _ORIGIN_MEMBER_FROM_PROTO[number]
    except KeyError:
        raise E2AValueError(field, f"unknown IdentityOrigin value {number}") from None


_Decoder = Callable[[Any, str], Any]


@dataclass(frozen=True)
class _Decoding:
    """How one message type decodes: ``template`` holds every key in field order with its wire
    default; ``decoders`` maps a field descriptor to (key, decoder or None for values used as they
    are); ``fresh`` names the keys whose unset value is a new mutable object.
    """

    template: dict[str, Any]
    decoders: dict[Any, tuple[str, _Decoder | None]]
    fresh: tuple[tuple[str, Callable[[], Any]], ...]


def _decoding(
    message_type: Any,
    defaults: dict[str, Any],
    special: Mapping[str, _Decoder | None],
    fresh: dict[str, Callable[[], Any]],
) -> _Decoding:
    return _Decoding(
        template=_template(message_type, defaults),
        decoders={fd: (fd.name, special.get(fd.name)) for fd in message_type.DESCRIPTOR.fields},
        fresh=tuple(fresh.items()),
    )


def _decode(message: Any, decoding: _Decoding) -> dict[str, Any]:
    values = decoding.template.copy()
    decoders = decoding.decoders
    for descriptor, value in message.ListFields():
        name, decode = decoders[descriptor]
        values[name] = value if decode is None else decode(value, name)
    for key, new in decoding.fresh:
        if values[key] is None:
            values[key] = new()
    return values


def _provenance_member(message: Any, field: str) -> E2AProvenance:
    return E2AProvenance(**from_proto_provenance(message, field))


def _auth_member(message: Any, field: str) -> E2AAuth:
    return E2AAuth(**from_proto_auth(message, field))


_SHARED_DECODERS: dict[str, _Decoder] = {
    "provenance": from_proto_provenance,
    "jsonrpc_id": from_proto_jsonrpc_id,
    "identity_origin": _decode_origin,
    "agent_ref": jsontext.loads_object,
}
_ENVELOPE_DECODERS: dict[str, _Decoder] = {
    **_SHARED_DECODERS,
    **dict.fromkeys(_ENVELOPE_OBJECTS, jsontext.loads_object),
    "auth": from_proto_auth,
    "expected_output_modes": lambda values, _field: list(values),
}
_RESPONSE_DECODERS: dict[str, _Decoder] = {
    **_SHARED_DECODERS,
    **dict.fromkeys(_RESPONSE_OBJECTS, jsontext.loads_object),
}
# The model classes' attributes differ from the canonical dict only in these: nested model objects
# and the IdentityOrigin member.
_ATTRIBUTE_DECODERS: dict[str, _Decoder] = {
    "provenance": _provenance_member,
    "identity_origin": _decode_origin_member,
    "auth": _auth_member,
}
_ENVELOPE_FRESH: dict[str, Callable[[], Any]] = {
    **dict.fromkeys(_ENVELOPE_OBJECTS, dict),
    "expected_output_modes": list,
    "provenance": _default_provenance,
}
_RESPONSE_FRESH: dict[str, Callable[[], Any]] = {
    **dict.fromkeys(_RESPONSE_OBJECTS, dict),
    "provenance": _default_provenance,
}

_ENVELOPE_DICT = _decoding(e2a_pb2.E2AEnvelope, _ENVELOPE_DEFAULTS, _ENVELOPE_DECODERS, _ENVELOPE_FRESH)
_RESPONSE_DICT = _decoding(e2a_pb2.E2AResponse, _RESPONSE_DEFAULTS, _RESPONSE_DECODERS, _RESPONSE_FRESH)
_ENVELOPE_ATTRIBUTES = _decoding(
    e2a_pb2.E2AEnvelope,
    {**_ENVELOPE_DEFAULTS, "identity_origin": IdentityOrigin.USER},
    {**_ENVELOPE_DECODERS, **_ATTRIBUTE_DECODERS},
    {**_ENVELOPE_FRESH, "provenance": E2AProvenance},
)
_RESPONSE_ATTRIBUTES = _decoding(
    e2a_pb2.E2AResponse,
    {**_RESPONSE_DEFAULTS, "identity_origin": IdentityOrigin.AGENT},
    {**_RESPONSE_DECODERS, **_ATTRIBUTE_DECODERS},
    {**_RESPONSE_FRESH, "provenance": E2AProvenance},
)


def from_proto_envelope(message: Any) -> dict[str, Any]:
    """An ``e2a.v1.E2AEnvelope`` as the canonical envelope dict."""
    return _decode(message, _ENVELOPE_DICT)


def from_proto_response(message: Any) -> dict[str, Any]:
    """An ``e2a.v1.E2AResponse`` as the canonical response dict."""
    return _decode(message, _RESPONSE_DICT)


def _check_object_text(text: str, field: str) -> None:
    """Raise what ``loads_object`` raises for ``text``, without a lossless decode of a good object."""
    if jsontext.object_or_none(text) is None:
        jsontext.loads_object(text, field)


def _check_provenance(message: Any, field: str) -> None:
    if message.details:
        _check_object_text(message.details, f"{field}.details")


# An ACP call whose params pass through needs only these of an envelope (params as JSON text).
_ACP_CALL_KEYS = ("method", "ext_method", "jsonrpc_id", "params")

_Reads = tuple[tuple[str, bool, _Decoder | None], ...]


def _reads(keys: Any, check: Callable[[str], _Decoder | None]) -> _Reads:
    """(field, has presence, check) for these envelope fields, in field order."""
    return tuple(
        (fd.name, fd.has_presence, check(fd.name)) for fd in e2a_pb2.E2AEnvelope.DESCRIPTOR.fields if fd.name in keys
    )


def _envelope_check(key: str) -> _Decoder | None:
    if key == "provenance":
        return _check_provenance
    if key in ("agent_ref", *_ENVELOPE_OBJECTS):
        return _check_object_text  # checked, not decoded losslessly: the value is not kept
    return _ENVELOPE_DECODERS.get(key)


_ACP_CALL_READS = _reads(_ACP_CALL_KEYS, lambda key: None if key == "params" else _ENVELOPE_DECODERS.get(key))
# Every other field from_proto decodes with a check. The plain strings between them need none and
# are not read at all: that is what makes this cheaper than ListFields().
_ENVELOPE_CHECK_READS = _reads(set(_ENVELOPE_DECODERS) - set(_ACP_CALL_KEYS), _envelope_check)


def _read_fields(message: Any, reads: _Reads) -> dict[str, Any]:
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


def acp_call_fields_from_proto(message: Any) -> dict[str, Any]:
    """What an envelope's ACP call reads when its params pass through unchanged: ``method``,
    ``ext_method``, ``jsonrpc_id`` (as ``from_proto`` reads them) and ``params`` as its JSON text,
    unchecked ("" if unset). ``check_other_envelope_fields`` checks the rest.
    """
    return _read_fields(message, _ACP_CALL_READS)


def check_other_envelope_fields(message: Any) -> None:
    """Raise an ``E2AFieldError`` if a field ``acp_call_fields_from_proto`` does not read holds what
    ``from_proto`` rejects (not always the same error: errors are for ``from_proto`` to give).
    """
    _read_fields(message, _ENVELOPE_CHECK_READS)


def envelope_attributes_from_proto(message: Any) -> dict[str, Any]:
    """An ``e2a.v1.E2AEnvelope`` as an ``E2AEnvelope``'s attributes (no canonical dict in between)."""
    return _decode(message, _ENVELOPE_ATTRIBUTES)


def response_attributes_from_proto(message: Any) -> dict[str, Any]:
    """An ``e2a.v1.E2AResponse`` as an ``E2AResponse``'s attributes."""
    return _decode(message, _RESPONSE_ATTRIBUTES)


def parse_envelope(data: bytes) -> Any:
    """Binary protobuf as an ``e2a.v1.E2AEnvelope`` message; errors name the message type."""
    return _parse(e2a_pb2.E2AEnvelope, data)


def parse_response(data: bytes) -> Any:
    return _parse(e2a_pb2.E2AResponse, data)


def envelope_dict_from_bytes(data: bytes) -> dict[str, Any]:
    return from_proto_envelope(_parse(e2a_pb2.E2AEnvelope, data))


def response_dict_from_bytes(data: bytes) -> dict[str, Any]:
    return from_proto_response(_parse(e2a_pb2.E2AResponse, data))


def envelope_dict_to_bytes(values: Mapping[str, Any]) -> bytes:
    return to_proto_envelope(values).SerializeToString()  # type: ignore[no-any-return]


def response_dict_to_bytes(values: Mapping[str, Any]) -> bytes:
    return to_proto_response(values).SerializeToString()  # type: ignore[no-any-return]


def dict_to_json(values: Mapping[str, Any]) -> str:
    """A canonical dict as E2A wire JSON (compact, key order kept, Unicode unescaped)."""
    return jsontext.dumps_document(values)


# --- helpers -------------------------------------------------------------------------------------


def _parse(message_type: Any, data: bytes) -> Any:
    try:
        return message_type.FromString(data)
    except DecodeError as exc:
        raise E2AValueError("$", f"not a valid {message_type.DESCRIPTOR.full_name} message: {exc}") from None


def _build(message_type: Any, fields: dict[str, Any], parent: str) -> Any:
    """Construct a message; on failure, find the field at fault and name it."""
    try:
        return message_type(**fields)
    except (TypeError, ValueError) as exc:
        for key, value in fields.items():
            try:
                message_type(**{key: value})
            except (TypeError, ValueError) as field_exc:
                path = f"{parent}.{key}" if parent else key
                descriptor = message_type.DESCRIPTOR.fields_by_name.get(key)
                if descriptor is None:
                    raise E2AValueError(path, f"is not a field of {message_type.DESCRIPTOR.full_name}") from None
                raise _field_error(path, descriptor, value, field_exc) from None
        raise E2AValueError(parent or "$", str(exc)) from None


_INTEGER_TYPES = {FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_INT32}


def _field_error(path: str, descriptor: Any, value: Any, exc: Exception) -> Exception:
    if isinstance(exc, UnicodeEncodeError):
        return E2AValueError(path, "string is not valid Unicode (lone surrogate); use JSON escapes in a JSON field")
    if descriptor.cpp_type in _INTEGER_TYPES and isinstance(value, int) and not isinstance(value, bool):
        return E2AValueError(path, f"integer {value} is outside the signed 64-bit range")
    return E2ATypeError(path, f"a {type_name(value)} does not fit this field")
