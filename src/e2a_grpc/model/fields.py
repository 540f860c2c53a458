"""The one field table of each record type, derived from its protobuf descriptor and its dataclass.

The schema is the home of each field's wire JSON facts: ``proto/e2a/v1/options.proto`` gives every
field of a record message its JSON kind, its default, the name of its legacy reader and the keys
that reader falls back on. ``record_fields`` reads them from the descriptor, checks that the
dataclass (generated from the schema too, ``model.generated_fields``) declares the same fields in
the same order with the schema's defaults, and gives each field a ``Kind``; the dict readers,
``to_dict`` and the protobuf codec all work from that table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.descriptor_pb2 import EnumValueOptions, FieldOptions
from google.protobuf.message import Message

from e2a.v1 import options_pb2

if TYPE_CHECKING:
    from google.protobuf.internal.extension_dict import _ExtensionFieldDescriptor

# protoc's .pyi declares an extension as a plain FieldDescriptor; Extensions[] is typed by the handle.
JSON_OPTION = cast("_ExtensionFieldDescriptor[FieldOptions, options_pb2.JsonField]", options_pb2.json)
_JSON_VALUE = cast("_ExtensionFieldDescriptor[EnumValueOptions, str]", options_pb2.json_value)


class Kind(Enum):
    """How a field is read, copied and carried in protobuf: ``e2a.v1.JsonKind`` (see options.proto)."""

    TEXT = options_pb2.JSON_KIND_TEXT
    PLAIN_TEXT = options_pb2.JSON_KIND_PLAIN_TEXT
    FLAG = options_pb2.JSON_KIND_FLAG
    INTEGER = options_pb2.JSON_KIND_INTEGER
    TEXT_LIST = options_pb2.JSON_KIND_TEXT_LIST
    OBJECT = options_pb2.JSON_KIND_OBJECT
    OPTIONAL_OBJECT = options_pb2.JSON_KIND_OPTIONAL_OBJECT
    JSONRPC_ID = options_pb2.JSON_KIND_JSONRPC_ID
    #: ``JSON_KIND_ENUM`` of type ``e2a.v1.IdentityOrigin``, the one enum the Python model has
    #: a type for (``model.enums.IdentityOrigin``).
    ORIGIN = options_pb2.JSON_KIND_ENUM
    PROVENANCE = options_pb2.JSON_KIND_PROVENANCE
    AUTH = options_pb2.JSON_KIND_AUTH


_FD = FieldDescriptor
# What each kind requires of the protobuf field: its type, label and presence, or its message type.
_SHAPES: dict[Kind, Callable[[FieldDescriptor], bool]] = {
    Kind.TEXT: lambda d: d.type == _FD.TYPE_STRING and not d.is_repeated and d.has_presence,
    Kind.PLAIN_TEXT: lambda d: d.type == _FD.TYPE_STRING and not d.is_repeated and not d.has_presence,
    Kind.FLAG: lambda d: d.type == _FD.TYPE_BOOL and not d.is_repeated,
    Kind.INTEGER: lambda d: d.type == _FD.TYPE_INT64 and not d.is_repeated,
    Kind.TEXT_LIST: lambda d: d.type == _FD.TYPE_STRING and d.is_repeated,
    Kind.OBJECT: lambda d: d.type == _FD.TYPE_STRING and not d.is_repeated and not d.has_presence,
    Kind.OPTIONAL_OBJECT: lambda d: d.type == _FD.TYPE_STRING and not d.is_repeated and not d.has_presence,
    Kind.JSONRPC_ID: lambda d: d.message_type is not None and d.message_type.full_name == "e2a.v1.JsonRpcId",
    Kind.ORIGIN: lambda d: d.enum_type is not None and d.enum_type.full_name == "e2a.v1.IdentityOrigin",
    Kind.PROVENANCE: lambda d: d.message_type is not None and d.message_type.full_name == "e2a.v1.E2AProvenance",
    Kind.AUTH: lambda d: d.message_type is not None and d.message_type.full_name == "e2a.v1.E2AAuth",
}


@dataclass(frozen=True)
class RecordField:
    """One field of a record type."""

    name: str
    kind: Kind
    #: The value of an absent key: ``factory()`` when set (a fresh mutable value), else ``default``.
    default: Any
    factory: Callable[[], Any] | None
    descriptor: FieldDescriptor
    #: The name of the reader in ``model.legacy`` that reads the field from the whole record, or "".
    legacy_reader: str
    #: The other top-level keys that reader reads.
    fallback_keys: tuple[str, ...]


def json_options(descriptor: FieldDescriptor) -> options_pb2.JsonField:
    """The ``(e2a.v1.json)`` option of a record field (an empty one when the field has none)."""
    return descriptor.GetOptions().Extensions[JSON_OPTION]


def field_json_options(message_type: type[Message], name: str) -> options_pb2.JsonField:
    """The ``(e2a.v1.json)`` option of the field ``name`` of a record message."""
    message: Descriptor = message_type.DESCRIPTOR  # type: ignore[assignment]  # the upb Descriptor is one at runtime
    return json_options(message.fields_by_name[name])


def enum_json_values(enum: EnumDescriptor) -> dict[str, int]:
    """The ``(e2a.v1.json_value)`` of each value of an enum that has one, to the value's number."""
    values = {}
    for value in enum.values:
        text = value.GetOptions().Extensions[_JSON_VALUE]
        if text:
            values[text] = value.number
    return values


def _kind(descriptor: FieldDescriptor, options: options_pb2.JsonField, where: str) -> Kind:
    try:
        kind = Kind(options.kind)
    except ValueError:
        raise TypeError(f"{where} has no (e2a.v1.json).kind in the schema") from None
    if not _SHAPES[kind](descriptor):
        raise TypeError(f"{where}: JSON kind {options_pb2.JsonKind.Name(options.kind)} does not fit its protobuf type")
    return kind


def _schema_default(kind: Kind, options: options_pb2.JsonField, descriptor: FieldDescriptor) -> Any:
    """The default the schema gives a field, as the dataclass must declare it (``dataclasses.MISSING``
    for kinds whose default the kind itself fixes)."""
    if kind is Kind.ORIGIN:
        if descriptor.enum_type is None or options.default_value not in enum_json_values(descriptor.enum_type):
            raise TypeError(f"{descriptor.full_name}: default_value {options.default_value!r} is no json_value")
        return options.default_value
    if kind is Kind.TEXT:
        return options.default_value or None
    if kind is Kind.PLAIN_TEXT:
        return options.default_value
    return dataclasses.MISSING


def record_fields(record_type: type, message_type: type[Message]) -> tuple[RecordField, ...]:
    """The field table of a record dataclass; raises TypeError if it and the message disagree."""
    declared = dataclasses.fields(record_type)
    message: Descriptor = message_type.DESCRIPTOR  # type: ignore[assignment]  # the upb Descriptor is one at runtime
    names = [item.name for item in declared]
    wire_names = [descriptor.name for descriptor in message.fields]
    if names != wire_names:
        raise TypeError(
            f"{record_type.__name__} fields {names} differ from {message.full_name} fields {wire_names} "
            "(same names, same order)"
        )
    table = []
    for item, descriptor in zip(declared, message.fields, strict=True):
        where = f"{record_type.__name__}.{item.name}"
        options = json_options(descriptor)
        kind = _kind(descriptor, options, where)
        factory = None if item.default_factory is dataclasses.MISSING else item.default_factory
        default = None if item.default is dataclasses.MISSING else item.default
        expected = _schema_default(kind, options, descriptor)
        if expected is not dataclasses.MISSING and default != expected:
            raise TypeError(f"{where} defaults to {default!r}, the schema to {expected!r}")
        if options.fallback_keys and not options.legacy_reader:
            raise TypeError(f"{where} has fallback keys but no legacy reader in the schema")
        table.append(
            RecordField(
                item.name, kind, default, factory, descriptor, options.legacy_reader, tuple(options.fallback_keys)
            )
        )
    return tuple(table)
