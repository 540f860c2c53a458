"""The one field table of each record type, derived from its dataclass and its protobuf descriptor.

A record's fields are declared once, in its dataclass (name, order, type, default), and once in
``proto/`` (number, wire type). ``record_fields`` checks that the two agree and gives each field a
``Kind``; the dict readers, ``to_dict``, the protobuf codec and the ToACP fast path all work from
that table, so a new field is one dataclass line plus its ``.proto`` line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message


class Kind(Enum):
    """How a field is read, copied and carried in protobuf."""

    TEXT = auto()  # a string or null: proto3 ``optional string``
    PLAIN_TEXT = auto()  # a string with a default (never null): proto3 ``string``
    FLAG = auto()  # bool
    INTEGER = auto()  # int64
    TEXT_LIST = auto()  # repeated string
    OBJECT = auto()  # a free-form JSON object, ``{}`` by default: JSON text, "" meaning {}
    OPTIONAL_OBJECT = auto()  # a free-form JSON object or null: JSON text, "" meaning null
    JSONRPC_ID = auto()  # e2a.v1.JsonRpcId
    ORIGIN = auto()  # e2a.v1.IdentityOrigin
    PROVENANCE = auto()  # e2a.v1.E2AProvenance
    AUTH = auto()  # e2a.v1.E2AAuth, or null


_MESSAGE_KINDS = {"JsonRpcId": Kind.JSONRPC_ID, "E2AProvenance": Kind.PROVENANCE, "E2AAuth": Kind.AUTH}
_INTEGER_TYPES = {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_INT32}


@dataclass(frozen=True)
class RecordField:
    """One field of a record type."""

    name: str
    kind: Kind
    #: The value of an absent key: ``factory()`` when set (a fresh mutable value), else ``default``.
    default: Any
    factory: Callable[[], Any] | None
    descriptor: FieldDescriptor


def _kind(descriptor: FieldDescriptor, annotation: str) -> Kind:
    if descriptor.message_type is not None:
        return _MESSAGE_KINDS[descriptor.message_type.name]
    if descriptor.enum_type is not None:
        return Kind.ORIGIN
    if descriptor.is_repeated:
        return Kind.TEXT_LIST
    if descriptor.type == FieldDescriptor.TYPE_BOOL:
        return Kind.FLAG
    if descriptor.type in _INTEGER_TYPES:
        return Kind.INTEGER
    if annotation.startswith("dict"):  # free-form JSON, carried as JSON text
        return Kind.OPTIONAL_OBJECT if annotation.endswith("| None") else Kind.OBJECT
    return Kind.TEXT if descriptor.has_presence else Kind.PLAIN_TEXT


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
        factory = None if item.default_factory is dataclasses.MISSING else item.default_factory
        default = None if item.default is dataclasses.MISSING else item.default
        table.append(RecordField(item.name, _kind(descriptor, str(item.type)), default, factory, descriptor))
    return tuple(table)
