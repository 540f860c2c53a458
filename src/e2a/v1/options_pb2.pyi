from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JsonKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JSON_KIND_UNSPECIFIED: _ClassVar[JsonKind]
    JSON_KIND_TEXT: _ClassVar[JsonKind]
    JSON_KIND_PLAIN_TEXT: _ClassVar[JsonKind]
    JSON_KIND_FLAG: _ClassVar[JsonKind]
    JSON_KIND_INTEGER: _ClassVar[JsonKind]
    JSON_KIND_TEXT_LIST: _ClassVar[JsonKind]
    JSON_KIND_OBJECT: _ClassVar[JsonKind]
    JSON_KIND_OPTIONAL_OBJECT: _ClassVar[JsonKind]
    JSON_KIND_JSONRPC_ID: _ClassVar[JsonKind]
    JSON_KIND_ENUM: _ClassVar[JsonKind]
    JSON_KIND_PROVENANCE: _ClassVar[JsonKind]
    JSON_KIND_AUTH: _ClassVar[JsonKind]
JSON_KIND_UNSPECIFIED: JsonKind
JSON_KIND_TEXT: JsonKind
JSON_KIND_PLAIN_TEXT: JsonKind
JSON_KIND_FLAG: JsonKind
JSON_KIND_INTEGER: JsonKind
JSON_KIND_TEXT_LIST: JsonKind
JSON_KIND_OBJECT: JsonKind
JSON_KIND_OPTIONAL_OBJECT: JsonKind
JSON_KIND_JSONRPC_ID: JsonKind
JSON_KIND_ENUM: JsonKind
JSON_KIND_PROVENANCE: JsonKind
JSON_KIND_AUTH: JsonKind
JSON_FIELD_NUMBER: _ClassVar[int]
json: _descriptor.FieldDescriptor
JSON_VALUE_FIELD_NUMBER: _ClassVar[int]
json_value: _descriptor.FieldDescriptor

class JsonField(_message.Message):
    __slots__ = ("kind", "default_value", "legacy_reader", "fallback_keys", "internal_keys")
    KIND_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    LEGACY_READER_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_KEYS_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_KEYS_FIELD_NUMBER: _ClassVar[int]
    kind: JsonKind
    default_value: str
    legacy_reader: str
    fallback_keys: _containers.RepeatedScalarFieldContainer[str]
    internal_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[_Union[JsonKind, str]] = ..., default_value: _Optional[str] = ..., legacy_reader: _Optional[str] = ..., fallback_keys: _Optional[_Iterable[str]] = ..., internal_keys: _Optional[_Iterable[str]] = ...) -> None: ...
