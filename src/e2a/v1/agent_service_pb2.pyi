from e2a.v1 import e2a_pb2 as _e2a_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatRequest(_message.Message):
    __slots__ = ("envelope",)
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    envelope: _e2a_pb2.E2AEnvelope
    def __init__(self, envelope: _Optional[_Union[_e2a_pb2.E2AEnvelope, _Mapping]] = ...) -> None: ...

class ChatResponse(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _e2a_pb2.E2AResponse
    def __init__(self, response: _Optional[_Union[_e2a_pb2.E2AResponse, _Mapping]] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ("agent_id", "task_id")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    task_id: str
    def __init__(self, agent_id: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
