from e2a.v1 import e2a_pb2 as _e2a_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EnvelopeFromJsonRequest(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class EnvelopeFromJsonResponse(_message.Message):
    __slots__ = ("envelope",)
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ...) -> None: ...

class EnvelopeToJsonRequest(_message.Message):
    __slots__ = ("envelope",)
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ...) -> None: ...

class EnvelopeToJsonResponse(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class ResponseFromJsonRequest(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class ResponseFromJsonResponse(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _e2a_pb2.E2AResponse
    def __init__(self, response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ...) -> None: ...

class ResponseToJsonRequest(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _e2a_pb2.E2AResponse
    def __init__(self, response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ...) -> None: ...

class ResponseToJsonResponse(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class TranscodeRequest(_message.Message):
    __slots__ = ("envelope_json", "response_json", "envelope", "response")
    ENVELOPE_JSON_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    envelope_json: str
    response_json: str
    envelope: _e2a_pb2.E2AEnvelope
    response: _e2a_pb2.E2AResponse
    def __init__(self, envelope_json: _Optional[str] = ..., response_json: _Optional[str] = ..., envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ..., response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ...) -> None: ...

class TranscodeResponse(_message.Message):
    __slots__ = ("index", "envelope", "response", "envelope_json", "response_json", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_JSON_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    envelope: _e2a_pb2.E2AEnvelope
    response: _e2a_pb2.E2AResponse
    envelope_json: str
    response_json: str
    error: TranscodeError
    def __init__(self, index: _Optional[int] = ..., envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ..., response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ..., envelope_json: _Optional[str] = ..., response_json: _Optional[str] = ..., error: _Optional[_Union[TranscodeError, _Mapping]] = ...) -> None: ...

class TranscodeError(_message.Message):
    __slots__ = ("field_violations",)
    class FieldViolation(_message.Message):
        __slots__ = ("field", "description")
        FIELD_FIELD_NUMBER: _ClassVar[int]
        DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
        field: str
        description: str
        def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...
    FIELD_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    field_violations: _containers.RepeatedCompositeFieldContainer[TranscodeError.FieldViolation]
    def __init__(self, field_violations: _Optional[_Iterable[_Union[TranscodeError.FieldViolation, _Mapping]]] = ...) -> None: ...
