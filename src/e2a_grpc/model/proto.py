"""Records <-> protobuf messages, driven by the field tables of ``e2a_grpc.model.fields``.

Scalar fields map one-to-one (proto3 ``optional`` keeps null apart from ``""``); free-form JSON
fields travel as JSON text (see ``jsontext``); ``jsonrpc_id`` keeps its JSON type in a oneof. This is
the hot path of the service, so each record type's work is laid out once in a ``Codec`` (plain tuples
and dicts) and the generated message constructors (implemented in C) do the field assignment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from e2a.v1 import e2a_pb2
from e2a_grpc import jsontext
from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name
from e2a_grpc.model.enums import IdentityOrigin
from e2a_grpc.model.fields import Kind, RecordField
from e2a_grpc.model.parts import E2AAuth, E2AProvenance
from e2a_grpc.model.readers import JsonRpcIdValue

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INTEGER_LIMIT = 10**jsontext.MAX_INTEGER_DIGITS  # the smallest integer with one digit too many

# IdentityOrigin <-> e2a.v1.IdentityOrigin. Members hash by name, not by value, so the encoder
# indexes both the members and their strings (a canonical dict holds strings).
_ORIGIN_FROM_PROTO: dict[int, IdentityOrigin] = {
    e2a_pb2.IdentityOrigin.Value(f"IDENTITY_ORIGIN_{origin.name}"): origin for origin in IdentityOrigin
}
_ORIGIN_TO_PROTO: dict[Any, int] = {
    key: number for number, origin in _ORIGIN_FROM_PROTO.items() for key in (origin, origin.value)
}

M = TypeVar("M", bound=Message)
M_co = TypeVar("M_co", bound=Message, covariant=True)


# --- JSON-RPC id ---------------------------------------------------------------------------------


def to_proto_jsonrpc_id(value: str | int | float, field: str = "jsonrpc_id") -> e2a_pb2.JsonRpcId:
    if isinstance(value, str):
        return build(e2a_pb2.JsonRpcId, {"string_value": value}, field)  # names a lone surrogate
    if isinstance(value, bool):
        raise E2ATypeError(field, "expected a string, number or null, got boolean")
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return e2a_pb2.JsonRpcId(integer_value=value)
        if abs(value) >= _INTEGER_LIMIT:
            raise E2AValueError(field, f"an integer of more than {jsontext.MAX_INTEGER_DIGITS} digits")
        return e2a_pb2.JsonRpcId(big_integer_value=str(value))
    if isinstance(value, float):
        jsontext.check_value(value, field)
        return e2a_pb2.JsonRpcId(number_value=value)
    raise E2ATypeError(field, f"expected a string, number or null, got {type_name(value)}")


def from_proto_jsonrpc_id(message: e2a_pb2.JsonRpcId, field: str = "jsonrpc_id") -> JsonRpcIdValue:
    kind = message.WhichOneof("kind")
    if kind is None:
        return None
    if kind == "string_value":
        return message.string_value
    if kind == "integer_value":
        return message.integer_value
    if kind == "number_value":
        number = message.number_value
        if not math.isfinite(number):
            raise E2AValueError(field, f"number_value {number!r} is not a JSON number")
        return number
    digits = message.big_integer_value
    unsigned = digits[1:] if digits.startswith("-") else digits
    if not unsigned.isascii() or not unsigned.isdigit():
        raise E2AValueError(field, f"big_integer_value {digits!r} is not a decimal integer")
    if len(unsigned) > jsontext.MAX_INTEGER_DIGITS:
        raise E2AValueError(
            field, f"big_integer_value has {len(unsigned)} digits, more than {jsontext.MAX_INTEGER_DIGITS}"
        )
    return int(digits)


# --- nested messages -----------------------------------------------------------------------------


def _fields_of(value: Any) -> Mapping[str, Any]:
    """A canonical dict, or a model object's attributes."""
    return value if type(value) is dict else vars(value)


def _object_text(value: Any, field: str) -> str:
    """A free-form object slot as JSON text ("" for ``{}``, the wire default)."""
    if type(value) is not dict:
        raise E2ATypeError(field, f"expected an object, got {type_name(value)}")
    return jsontext.dumps(value, field) if value else ""


def _provenance_fields(value: Any) -> dict[str, Any]:
    """Provenance as constructor fields (the message constructor builds the submessage in C)."""
    values = _fields_of(value)
    return {
        "source_protocol": values["source_protocol"],
        "converter": values["converter"],
        "converted_at": values["converted_at"],
        "details": _object_text(values["details"], "provenance.details"),
    }


def from_proto_provenance(message: e2a_pb2.E2AProvenance, field: str = "provenance") -> E2AProvenance:
    # Attribute reads, not ListFields(): cheaper for a message this small (it is on every record).
    details = message.details
    return E2AProvenance(
        source_protocol=message.source_protocol,
        converter=message.converter if message.HasField("converter") else None,
        converted_at=message.converted_at if message.HasField("converted_at") else None,
        details=jsontext.loads_object(details, f"{field}.details") if details else {},
    )


def to_proto_auth(value: E2AAuth | Mapping[str, Any], field: str = "auth") -> e2a_pb2.E2AAuth:
    values = _fields_of(value)
    headers = values["extra_headers"]
    if not isinstance(headers, dict):
        raise E2ATypeError(f"{field}.extra_headers", f"expected an object, got {type_name(headers)}")
    return build(
        e2a_pb2.E2AAuth,
        {
            "method_id": values["method_id"],
            "bearer_token": values["bearer_token"],
            "api_key_ref": values["api_key_ref"],
            "credential_ref": values["credential_ref"],
            "extra_headers": [
                build(e2a_pb2.HttpHeader, {"name": name, "value": text}, f"{field}.extra_headers.{name}")
                for name, text in headers.items()
            ],
            "meta": _object_text(values["_meta"], f"{field}._meta"),
        },
        field,
    )


def from_proto_auth(message: e2a_pb2.E2AAuth, field: str = "auth") -> E2AAuth:
    return E2AAuth(
        method_id=message.method_id if message.HasField("method_id") else None,
        bearer_token=message.bearer_token if message.HasField("bearer_token") else None,
        api_key_ref=message.api_key_ref if message.HasField("api_key_ref") else None,
        credential_ref=message.credential_ref if message.HasField("credential_ref") else None,
        extra_headers={header.name: header.value for header in message.extra_headers},
        _meta=jsontext.loads_object(message.meta, f"{field}._meta") if message.meta else {},
    )


# --- per-kind encoding and decoding --------------------------------------------------------------


def _encode_object(value: Any, field: str) -> str | None:
    text = _object_text(value, field)
    return text or None  # None: the constructor leaves the field unset ({} is the wire default)


def _encode_optional_object(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if type(value) is not dict:
        raise E2ATypeError(field, f"expected an object or null, got {type_name(value)}")
    return jsontext.dumps(value, field)


def _encode_origin(value: Any, field: str) -> int:
    try:
        return _ORIGIN_TO_PROTO[value]
    except (KeyError, TypeError):
        allowed = ", ".join(IdentityOrigin)
        raise E2AValueError(field, f"{value!r} is not one of {allowed}") from None


def _encode_jsonrpc_id(value: Any, field: str) -> e2a_pb2.JsonRpcId | None:
    return None if value is None else to_proto_jsonrpc_id(value, field)


def _encode_auth(value: Any, field: str) -> e2a_pb2.E2AAuth | None:
    return None if value is None else to_proto_auth(value, field)


def _decode_origin(number: int, field: str) -> IdentityOrigin:
    try:
        return _ORIGIN_FROM_PROTO[number]
    except KeyError:
        raise E2AValueError(field, f"unknown IdentityOrigin value {number}") from None


Encoder = Callable[[Any, str], Any]
Decoder = Callable[[Any, str], Any]

#: Kinds whose attribute is not what the message constructor takes. The rest pass through.
ENCODERS: dict[Kind, Encoder] = {
    Kind.OBJECT: _encode_object,
    Kind.OPTIONAL_OBJECT: _encode_optional_object,
    Kind.ORIGIN: _encode_origin,
    Kind.JSONRPC_ID: _encode_jsonrpc_id,
    Kind.PROVENANCE: lambda value, _field: _provenance_fields(value),
    Kind.AUTH: _encode_auth,
}
#: Kinds whose message value is not the attribute. A set field's value is decoded (an unset one
#: takes the wire default of ``Codec.template``).
DECODERS: dict[Kind, Decoder] = {
    Kind.OBJECT: jsontext.loads_object,
    Kind.OPTIONAL_OBJECT: jsontext.loads_object,
    Kind.ORIGIN: _decode_origin,
    Kind.JSONRPC_ID: from_proto_jsonrpc_id,
    Kind.PROVENANCE: from_proto_provenance,
    Kind.AUTH: from_proto_auth,
    Kind.TEXT_LIST: lambda values, _field: list(values),
}
# The attribute of a field the message does not set: its wire default, or a fresh value of these kinds.
_WIRE_DEFAULTS: dict[Kind, Any] = {Kind.PLAIN_TEXT: "", Kind.FLAG: False, Kind.INTEGER: 0}
_FRESH: dict[Kind, Callable[[], Any]] = {Kind.OBJECT: dict, Kind.TEXT_LIST: list, Kind.PROVENANCE: E2AProvenance}


@dataclass(frozen=True)
class Codec(Generic[M_co]):
    """How one record type's attributes become its message and back.

    ``encoders``: (field, encoder) for the fields that need one. ``template``: every attribute in
    field order, set to its wire default. ``decoders``: field descriptor -> (name, decoder or None
    for values used as they are). ``fresh``: the attributes whose unset value is a new object.
    """

    message_type: type[M_co]
    encoders: tuple[tuple[str, Encoder], ...]
    template: dict[str, Any]
    decoders: dict[FieldDescriptor, tuple[str, Decoder | None]]
    fresh: tuple[tuple[str, Callable[[], Any]], ...]


def codec(message_type: type[M], fields: tuple[RecordField, ...]) -> Codec[M]:
    """The codec of a record type, from its field table."""

    def wire_default(field: RecordField) -> Any:
        # An unset enum is IDENTITY_ORIGIN_UNSPECIFIED, which reads as the record's own default.
        return field.default if field.kind is Kind.ORIGIN else _WIRE_DEFAULTS.get(field.kind)

    return Codec(
        message_type=message_type,
        encoders=tuple((field.name, ENCODERS[field.kind]) for field in fields if field.kind in ENCODERS),
        template={field.name: wire_default(field) for field in fields},
        decoders={field.descriptor: (field.name, DECODERS.get(field.kind)) for field in fields},
        fresh=tuple((field.name, _FRESH[field.kind]) for field in fields if field.kind in _FRESH),
    )


def encode(values: Mapping[str, Any], codec: Codec[M]) -> M:
    """A record's attributes (or its canonical dict) as its message."""
    # Plain fields pass through (the constructor skips None); the encoders replace the rest.
    fields = dict(values)
    for name, encoder in codec.encoders:
        fields[name] = encoder(fields[name], name)
    return build(codec.message_type, fields, "")


def decode(message: M, codec: Codec[M]) -> dict[str, Any]:
    """A message as the attributes of its record, in field order."""
    values = codec.template.copy()
    decoders = codec.decoders
    for descriptor, value in message.ListFields():
        name, decoder = decoders[descriptor]
        values[name] = value if decoder is None else decoder(value, name)
    for name, new in codec.fresh:
        if values[name] is None:
            values[name] = new()
    return values


def parse(message_type: type[M], data: bytes) -> M:
    """Binary protobuf as a message; errors name the message type."""
    try:
        return message_type.FromString(data)
    except DecodeError as exc:
        raise E2AValueError("$", f"not a valid {message_type.DESCRIPTOR.full_name} message: {exc}") from None


def build(message_type: type[M], fields: dict[str, Any], parent: str) -> M:
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
                # A upb FieldDescriptor is a descriptor.FieldDescriptor at runtime (see records._bind).
                raise _field_error(path, descriptor, value, field_exc) from None  # type: ignore[arg-type]
        raise E2AValueError(parent or "$", str(exc)) from None


_INTEGER_TYPES = {FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_INT32}


def _field_error(path: str, descriptor: FieldDescriptor, value: Any, exc: Exception) -> Exception:
    if isinstance(exc, UnicodeEncodeError):
        return E2AValueError(path, "string is not valid Unicode (lone surrogate); use JSON escapes in a JSON field")
    if descriptor.cpp_type in _INTEGER_TYPES and isinstance(value, int) and not isinstance(value, bool):
        return E2AValueError(path, f"integer {value} is outside the signed 64-bit range")
    return E2ATypeError(path, f"a {type_name(value)} does not fit this field")
