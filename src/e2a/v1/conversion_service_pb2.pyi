from e2a.cloudevents.v1 import cloudevents_pb2 as _cloudevents_pb2
from e2a.v1 import e2a_pb2 as _e2a_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AcpDialect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACP_DIALECT_UNSPECIFIED: _ClassVar[AcpDialect]
    ACP_DIALECT_WIRE: _ClassVar[AcpDialect]

class CloudEventsFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLOUD_EVENTS_FORMAT_UNSPECIFIED: _ClassVar[CloudEventsFormat]
    CLOUD_EVENTS_FORMAT_JSON_BATCH: _ClassVar[CloudEventsFormat]
ACP_DIALECT_UNSPECIFIED: AcpDialect
ACP_DIALECT_WIRE: AcpDialect
CLOUD_EVENTS_FORMAT_UNSPECIFIED: CloudEventsFormat
CLOUD_EVENTS_FORMAT_JSON_BATCH: CloudEventsFormat

class NotApplicable(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class CloudEventBatch(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_cloudevents_pb2.CloudEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[_cloudevents_pb2.CloudEvent, _Mapping]]] = ...) -> None: ...

class CloudEventsRecordSource(_message.Message):
    __slots__ = ("envelope", "response", "envelope_json", "response_json")
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_JSON_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    response: _e2a_pb2.E2AResponse
    envelope_json: str
    response_json: str
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ..., response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ..., envelope_json: _Optional[str] = ..., response_json: _Optional[str] = ...) -> None: ...

class ToCloudEventsRequest(_message.Message):
    __slots__ = ("records", "source", "type_prefix", "format")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TYPE_PREFIX_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[CloudEventsRecordSource]
    source: str
    type_prefix: str
    format: CloudEventsFormat
    def __init__(self, records: _Optional[_Iterable[_Union[CloudEventsRecordSource, _Mapping]]] = ..., source: _Optional[str] = ..., type_prefix: _Optional[str] = ..., format: _Optional[_Union[CloudEventsFormat, str]] = ...) -> None: ...

class ToCloudEventsResponse(_message.Message):
    __slots__ = ("batch", "batch_json")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    BATCH_JSON_FIELD_NUMBER: _ClassVar[int]
    batch: CloudEventBatch
    batch_json: str
    def __init__(self, batch: _Optional[_Union[CloudEventBatch, _Mapping]] = ..., batch_json: _Optional[str] = ...) -> None: ...

class FromCloudEventsRequest(_message.Message):
    __slots__ = ("batch", "json")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    batch: CloudEventBatch
    json: str
    def __init__(self, batch: _Optional[_Union[CloudEventBatch, _Mapping]] = ..., json: _Optional[str] = ...) -> None: ...

class CloudEventsRecord(_message.Message):
    __slots__ = ("envelope", "response")
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    response: _e2a_pb2.E2AResponse
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ..., response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ...) -> None: ...

class FromCloudEventsResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[CloudEventsRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[CloudEventsRecord, _Mapping]]] = ...) -> None: ...

class ToACPRequest(_message.Message):
    __slots__ = ("envelope", "response", "envelope_json", "response_json", "session_prompt_methods", "dialect")
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_JSON_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    SESSION_PROMPT_METHODS_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    response: _e2a_pb2.E2AResponse
    envelope_json: str
    response_json: str
    session_prompt_methods: _containers.RepeatedScalarFieldContainer[str]
    dialect: AcpDialect
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ..., response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ..., envelope_json: _Optional[str] = ..., response_json: _Optional[str] = ..., session_prompt_methods: _Optional[_Iterable[str]] = ..., dialect: _Optional[_Union[AcpDialect, str]] = ...) -> None: ...

class ToACPResponse(_message.Message):
    __slots__ = ("jsonrpc", "not_applicable")
    JSONRPC_FIELD_NUMBER: _ClassVar[int]
    NOT_APPLICABLE_FIELD_NUMBER: _ClassVar[int]
    jsonrpc: str
    not_applicable: NotApplicable
    def __init__(self, jsonrpc: _Optional[str] = ..., not_applicable: _Optional[_Union[NotApplicable, _Mapping]] = ...) -> None: ...

class FromACPRequest(_message.Message):
    __slots__ = ("json", "channel", "identity_origin")
    JSON_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    json: str
    channel: str
    identity_origin: _e2a_pb2.IdentityOrigin
    def __init__(self, json: _Optional[str] = ..., channel: _Optional[str] = ..., identity_origin: _Optional[_Union[_e2a_pb2.IdentityOrigin, str]] = ...) -> None: ...

class FromACPRecord(_message.Message):
    __slots__ = ("envelope", "response")
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    response: _e2a_pb2.E2AResponse
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ..., response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ...) -> None: ...

class FromACPResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[FromACPRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[FromACPRecord, _Mapping]]] = ...) -> None: ...

class ToA2AStreamRequest(_message.Message):
    __slots__ = ("response", "response_json", "project_native_kinds")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    PROJECT_NATIVE_KINDS_FIELD_NUMBER: _ClassVar[int]
    response: _e2a_pb2.E2AResponse
    response_json: str
    project_native_kinds: bool
    def __init__(self, response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ..., response_json: _Optional[str] = ..., project_native_kinds: _Optional[bool] = ...) -> None: ...

class ToA2AStreamResponse(_message.Message):
    __slots__ = ("stream_response", "not_applicable")
    STREAM_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    NOT_APPLICABLE_FIELD_NUMBER: _ClassVar[int]
    stream_response: str
    not_applicable: NotApplicable
    def __init__(self, stream_response: _Optional[str] = ..., not_applicable: _Optional[_Union[NotApplicable, _Mapping]] = ...) -> None: ...

class FromA2ARequest(_message.Message):
    __slots__ = ("json", "channel", "identity_origin")
    JSON_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    json: str
    channel: str
    identity_origin: _e2a_pb2.IdentityOrigin
    def __init__(self, json: _Optional[str] = ..., channel: _Optional[str] = ..., identity_origin: _Optional[_Union[_e2a_pb2.IdentityOrigin, str]] = ...) -> None: ...

class FromA2AResponse(_message.Message):
    __slots__ = ("envelope",)
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ...) -> None: ...

class ConvertStreamRequest(_message.Message):
    __slots__ = ("conversions",)
    CONVERSIONS_FIELD_NUMBER: _ClassVar[int]
    conversions: _containers.RepeatedCompositeFieldContainer[ConvertRequest]
    def __init__(self, conversions: _Optional[_Iterable[_Union[ConvertRequest, _Mapping]]] = ...) -> None: ...

class ConvertRequest(_message.Message):
    __slots__ = ("to_acp", "from_acp", "to_a2a_stream", "from_a2a")
    TO_ACP_FIELD_NUMBER: _ClassVar[int]
    FROM_ACP_FIELD_NUMBER: _ClassVar[int]
    TO_A2A_STREAM_FIELD_NUMBER: _ClassVar[int]
    FROM_A2A_FIELD_NUMBER: _ClassVar[int]
    to_acp: ToACPRequest
    from_acp: FromACPRequest
    to_a2a_stream: ToA2AStreamRequest
    from_a2a: FromA2ARequest
    def __init__(self, to_acp: _Optional[_Union[ToACPRequest, _Mapping]] = ..., from_acp: _Optional[_Union[FromACPRequest, _Mapping]] = ..., to_a2a_stream: _Optional[_Union[ToA2AStreamRequest, _Mapping]] = ..., from_a2a: _Optional[_Union[FromA2ARequest, _Mapping]] = ...) -> None: ...

class ConvertStreamResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ConvertResult]
    def __init__(self, results: _Optional[_Iterable[_Union[ConvertResult, _Mapping]]] = ...) -> None: ...

class ConvertResult(_message.Message):
    __slots__ = ("index", "to_acp", "from_acp", "to_a2a_stream", "from_a2a", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TO_ACP_FIELD_NUMBER: _ClassVar[int]
    FROM_ACP_FIELD_NUMBER: _ClassVar[int]
    TO_A2A_STREAM_FIELD_NUMBER: _ClassVar[int]
    FROM_A2A_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    to_acp: ToACPResponse
    from_acp: FromACPResponse
    to_a2a_stream: ToA2AStreamResponse
    from_a2a: FromA2AResponse
    error: ConvertError
    def __init__(self, index: _Optional[int] = ..., to_acp: _Optional[_Union[ToACPResponse, _Mapping]] = ..., from_acp: _Optional[_Union[FromACPResponse, _Mapping]] = ..., to_a2a_stream: _Optional[_Union[ToA2AStreamResponse, _Mapping]] = ..., from_a2a: _Optional[_Union[FromA2AResponse, _Mapping]] = ..., error: _Optional[_Union[ConvertError, _Mapping]] = ...) -> None: ...

class ConvertError(_message.Message):
    __slots__ = ("field_violations",)
    class FieldViolation(_message.Message):
        __slots__ = ("field", "description")
        FIELD_FIELD_NUMBER: _ClassVar[int]
        DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
        field: str
        description: str
        def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...
    FIELD_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    field_violations: _containers.RepeatedCompositeFieldContainer[ConvertError.FieldViolation]
    def __init__(self, field_violations: _Optional[_Iterable[_Union[ConvertError.FieldViolation, _Mapping]]] = ...) -> None: ...
