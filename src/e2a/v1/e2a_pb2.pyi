from e2a.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class IdentityOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IDENTITY_ORIGIN_UNSPECIFIED: _ClassVar[IdentityOrigin]
    IDENTITY_ORIGIN_SYSTEM: _ClassVar[IdentityOrigin]
    IDENTITY_ORIGIN_USER: _ClassVar[IdentityOrigin]
    IDENTITY_ORIGIN_AGENT: _ClassVar[IdentityOrigin]
    IDENTITY_ORIGIN_SERVICE: _ClassVar[IdentityOrigin]
IDENTITY_ORIGIN_UNSPECIFIED: IdentityOrigin
IDENTITY_ORIGIN_SYSTEM: IdentityOrigin
IDENTITY_ORIGIN_USER: IdentityOrigin
IDENTITY_ORIGIN_AGENT: IdentityOrigin
IDENTITY_ORIGIN_SERVICE: IdentityOrigin

class JsonRpcId(_message.Message):
    __slots__ = ("string_value", "integer_value", "number_value", "big_integer_value")
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    INTEGER_VALUE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_VALUE_FIELD_NUMBER: _ClassVar[int]
    BIG_INTEGER_VALUE_FIELD_NUMBER: _ClassVar[int]
    string_value: str
    integer_value: int
    number_value: float
    big_integer_value: str
    def __init__(self, string_value: _Optional[str] = ..., integer_value: _Optional[int] = ..., number_value: _Optional[float] = ..., big_integer_value: _Optional[str] = ...) -> None: ...

class E2AProvenance(_message.Message):
    __slots__ = ("source_protocol", "converter", "converted_at", "details")
    SOURCE_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    CONVERTER_FIELD_NUMBER: _ClassVar[int]
    CONVERTED_AT_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    source_protocol: str
    converter: str
    converted_at: str
    details: str
    def __init__(self, source_protocol: _Optional[str] = ..., converter: _Optional[str] = ..., converted_at: _Optional[str] = ..., details: _Optional[str] = ...) -> None: ...

class HttpHeader(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class E2AAuth(_message.Message):
    __slots__ = ("method_id", "bearer_token", "api_key_ref", "credential_ref", "extra_headers", "meta")
    METHOD_ID_FIELD_NUMBER: _ClassVar[int]
    BEARER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    API_KEY_REF_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_REF_FIELD_NUMBER: _ClassVar[int]
    EXTRA_HEADERS_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    method_id: str
    bearer_token: str
    api_key_ref: str
    credential_ref: str
    extra_headers: _containers.RepeatedCompositeFieldContainer[HttpHeader]
    meta: str
    def __init__(self, method_id: _Optional[str] = ..., bearer_token: _Optional[str] = ..., api_key_ref: _Optional[str] = ..., credential_ref: _Optional[str] = ..., extra_headers: _Optional[_Iterable[_Union[HttpHeader, _Mapping]]] = ..., meta: _Optional[str] = ...) -> None: ...

class E2AFileRef(_message.Message):
    __slots__ = ("uri", "name", "mime_type", "size", "meta")
    URI_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    uri: str
    name: str
    mime_type: str
    size: int
    meta: str
    def __init__(self, uri: _Optional[str] = ..., name: _Optional[str] = ..., mime_type: _Optional[str] = ..., size: _Optional[int] = ..., meta: _Optional[str] = ...) -> None: ...

class E2AEnvelope(_message.Message):
    __slots__ = ("protocol_version", "provenance", "request_id", "jsonrpc_id", "correlation_id", "task_id", "context_id", "session_id", "message_id", "timestamp", "identity_origin", "channel", "user_id", "agent_ref", "chat_id", "source_agent_id", "agent_id", "service_id", "workspace_key", "method", "params", "ext_method", "session_update_kind", "is_stream", "expected_output_modes", "auth", "channel_context", "a2a_metadata", "acp_meta")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    JSONRPC_ID_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_REF_FIELD_NUMBER: _ClassVar[int]
    CHAT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_KEY_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    EXT_METHOD_FIELD_NUMBER: _ClassVar[int]
    SESSION_UPDATE_KIND_FIELD_NUMBER: _ClassVar[int]
    IS_STREAM_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_OUTPUT_MODES_FIELD_NUMBER: _ClassVar[int]
    AUTH_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    A2A_METADATA_FIELD_NUMBER: _ClassVar[int]
    ACP_META_FIELD_NUMBER: _ClassVar[int]
    protocol_version: str
    provenance: E2AProvenance
    request_id: str
    jsonrpc_id: JsonRpcId
    correlation_id: str
    task_id: str
    context_id: str
    session_id: str
    message_id: str
    timestamp: str
    identity_origin: IdentityOrigin
    channel: str
    user_id: str
    agent_ref: str
    chat_id: str
    source_agent_id: str
    agent_id: str
    service_id: str
    workspace_key: str
    method: str
    params: str
    ext_method: str
    session_update_kind: str
    is_stream: bool
    expected_output_modes: _containers.RepeatedScalarFieldContainer[str]
    auth: E2AAuth
    channel_context: str
    a2a_metadata: str
    acp_meta: str
    def __init__(self, protocol_version: _Optional[str] = ..., provenance: _Optional[_Union[E2AProvenance, _Mapping]] = ..., request_id: _Optional[str] = ..., jsonrpc_id: _Optional[_Union[JsonRpcId, _Mapping]] = ..., correlation_id: _Optional[str] = ..., task_id: _Optional[str] = ..., context_id: _Optional[str] = ..., session_id: _Optional[str] = ..., message_id: _Optional[str] = ..., timestamp: _Optional[str] = ..., identity_origin: _Optional[_Union[IdentityOrigin, str]] = ..., channel: _Optional[str] = ..., user_id: _Optional[str] = ..., agent_ref: _Optional[str] = ..., chat_id: _Optional[str] = ..., source_agent_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., service_id: _Optional[str] = ..., workspace_key: _Optional[str] = ..., method: _Optional[str] = ..., params: _Optional[str] = ..., ext_method: _Optional[str] = ..., session_update_kind: _Optional[str] = ..., is_stream: _Optional[bool] = ..., expected_output_modes: _Optional[_Iterable[str]] = ..., auth: _Optional[_Union[E2AAuth, _Mapping]] = ..., channel_context: _Optional[str] = ..., a2a_metadata: _Optional[str] = ..., acp_meta: _Optional[str] = ...) -> None: ...

class E2AResponse(_message.Message):
    __slots__ = ("protocol_version", "response_id", "request_id", "sequence", "is_final", "status", "response_kind", "timestamp", "provenance", "body", "jsonrpc_id", "correlation_id", "task_id", "context_id", "session_id", "message_id", "is_stream", "identity_origin", "channel", "user_id", "agent_ref", "source_agent_id", "method", "projections", "channel_context", "metadata", "a2a_metadata", "acp_meta")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    IS_FINAL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_KIND_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    JSONRPC_ID_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    IS_STREAM_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_REF_FIELD_NUMBER: _ClassVar[int]
    SOURCE_AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PROJECTIONS_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    A2A_METADATA_FIELD_NUMBER: _ClassVar[int]
    ACP_META_FIELD_NUMBER: _ClassVar[int]
    protocol_version: str
    response_id: str
    request_id: str
    sequence: int
    is_final: bool
    status: str
    response_kind: str
    timestamp: str
    provenance: E2AProvenance
    body: str
    jsonrpc_id: JsonRpcId
    correlation_id: str
    task_id: str
    context_id: str
    session_id: str
    message_id: str
    is_stream: bool
    identity_origin: IdentityOrigin
    channel: str
    user_id: str
    agent_ref: str
    source_agent_id: str
    method: str
    projections: str
    channel_context: str
    metadata: str
    a2a_metadata: str
    acp_meta: str
    def __init__(self, protocol_version: _Optional[str] = ..., response_id: _Optional[str] = ..., request_id: _Optional[str] = ..., sequence: _Optional[int] = ..., is_final: _Optional[bool] = ..., status: _Optional[str] = ..., response_kind: _Optional[str] = ..., timestamp: _Optional[str] = ..., provenance: _Optional[_Union[E2AProvenance, _Mapping]] = ..., body: _Optional[str] = ..., jsonrpc_id: _Optional[_Union[JsonRpcId, _Mapping]] = ..., correlation_id: _Optional[str] = ..., task_id: _Optional[str] = ..., context_id: _Optional[str] = ..., session_id: _Optional[str] = ..., message_id: _Optional[str] = ..., is_stream: _Optional[bool] = ..., identity_origin: _Optional[_Union[IdentityOrigin, str]] = ..., channel: _Optional[str] = ..., user_id: _Optional[str] = ..., agent_ref: _Optional[str] = ..., source_agent_id: _Optional[str] = ..., method: _Optional[str] = ..., projections: _Optional[str] = ..., channel_context: _Optional[str] = ..., metadata: _Optional[str] = ..., a2a_metadata: _Optional[str] = ..., acp_meta: _Optional[str] = ...) -> None: ...
