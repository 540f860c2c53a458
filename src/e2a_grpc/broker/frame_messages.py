"""The NATS message of a Chat frame, written straight from the frame's bytes: the publisher's hot path.

``frame_message`` is the general mapping: the frame decoded into an ``E2AResponse``, its CloudEvent
built (``cloudevents.record_to_event``) and put in binary mode (``cloudevent_formats.to_http_binary``).
``FrameMessages.message`` gives exactly the same subject, headers (in the same order) and payload, at
a fraction of the cost: everything that the frames of one stream share is worked out once per stream
and kept, and a frame only adds its own fields.

A frame's own fields are the ones ``FrameBuilder`` sets per frame (response id, sequence, is_final,
status, response kind, timestamp, body); every other field is the stream's. The frame's message
with its own fields cleared, serialized, is the key of the stream's cached parts: the wire JSON
around the frame's fields (each field written by the record codec, as ``to_json`` writes it), and
the header values that depend on the stream alone (source, type, ``a2amethod``, ``collaborationid``,
the NATS subject). A frame the fast path cannot write exactly (no response id, a body that is not
JSON as ``jsontext.dumps`` writes it, an invalid field) takes the general mapping, which also names
what is wrong. tests/unit/test_frame_messages.py checks the two agree on generated frames.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import orjson

from e2a.v1 import agent_service_pb2, e2a_pb2
from e2a_grpc import jsontext
from e2a_grpc.chat.frames import frame_record
from e2a_grpc.errors import E2AFieldError, E2AValueError
from e2a_grpc.model import DeltaKind, E2AResponse, ErrorCode, ResponseKind, ResponseStatus
from e2a_grpc.protocols import cloudevents
from e2a_grpc.protocols.cloudevent_formats import (
    CONTENT_TYPE_HEADER,
    from_http_binary,
    http_header_value,
    is_http_safe,
    to_http_binary,
)

#: JetStream's de-duplication header.
MSG_ID_HEADER: Final = "Nats-Msg-Id"
#: Subject token of a frame whose request has no session.
NO_SESSION: Final = "_"
_PLAIN_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
#: The fields a frame sets itself (chat/frames.py), in field order; the rest are its stream's.
FRAME_FIELDS: Final = ("response_id", "sequence", "is_final", "status", "response_kind", "timestamp", "body")
#: Streams whose parts are kept; past that the cache starts again (a stream's parts cost one frame's decode).
MAX_CACHED_STREAMS: Final = 1024
_SPEC_VERSION_HEADER: Final = "ce-specversion"
_ID_HEADER: Final = "ce-id"
_SOURCE_HEADER: Final = "ce-source"
_TYPE_HEADER: Final = "ce-type"
_TIME_HEADER: Final = "ce-time"
_SEQ_HEADER: Final = "ce-" + cloudevents.Extension.SEQ
# Printable ASCII, no white space at either end: what nats-py's strip and CR/LF replacement leave alone.
_PLAIN_HEADER_TEXT = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?")
_CONTROL_CODES = frozenset(range(0x20))


class BrokerMessage(NamedTuple):
    """A frame as the NATS message that carries it."""

    subject: str
    headers: dict[str, str]
    payload: bytes


def subject_token(value: str) -> str:
    """``value`` as one NATS subject token: itself when plain (letters, digits, ``-``, ``_``), else
    ``~`` and its URL-safe base64, so that ``.``, ``*``, ``>`` and spaces cannot split or widen it."""
    if value != NO_SESSION and _PLAIN_TOKEN.match(value):
        return value
    return "~" + base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def frame_subject(prefix: str, session_id: str | None, request_id: str) -> str:
    """Where a frame is published: ``<prefix>.<session or _>.<request>``."""
    session = NO_SESSION if session_id is None else subject_token(session_id)
    return f"{prefix}.{session}.{subject_token(request_id)}"


def frame_message(frame: E2AResponse, *, subject_prefix: str, type_prefix: str, source: str | None) -> BrokerMessage:
    """The NATS message of a frame: its CloudEvent in binary mode, de-duplicated by ``response_id``
    (the general mapping, which ``FrameMessages`` follows)."""
    event = cloudevents.record_to_event(frame, type_prefix=type_prefix, source=source)
    binary = to_http_binary(event)
    headers = {**binary.headers, MSG_ID_HEADER: event.id}
    return BrokerMessage(
        frame_subject(subject_prefix, frame.session_id, frame.request_id or event.id), headers, binary.body
    )


def read_frame(headers: Mapping[str, str], payload: bytes) -> E2AResponse:
    """The frame a message carries (``frame_message`` read back); a message that carries none (no
    CloudEvent, a request's) is an ``E2AFieldError`` naming what is wrong."""
    record = cloudevents.event_to_record(from_http_binary(headers, payload))
    if not isinstance(record, E2AResponse):
        raise E2AValueError("mcptype", "a Chat stream carries response frames, got a request")
    return record


#: The custom delta that stands in for a frame in progress the broker could not take (``stand_in_frame``).
NOT_PUBLISHED_DELTA = "e2a_frame_not_published"


def stand_in_frame(frame: bytes, reason: str) -> bytes:
    """A small frame in place of ``frame`` (a serialized ChatResponse) that the broker cannot take
    (over its size limits, refused): the same stream fields, response id and sequence, so that the
    broker's copy of the stream has no gap and ends as the stream did. A final frame becomes a final
    ``e2a.error`` ``frame_not_published``; a frame in progress an ``e2a.chunk`` whose custom delta
    ``{"e2a_frame_not_published": {...}}`` says which frame was left out and why."""
    chat = agent_service_pb2.ChatResponse.FromString(frame)
    response = chat.response
    details = {
        "sequence": response.sequence,
        "response_kind": response.response_kind,
        "frame_bytes": len(frame),
        "reason": reason,
    }
    body: dict[str, Any]
    if response.is_final:
        message = f"the stream's final frame could not be published to the broker: {reason}"
        body = {"code": ErrorCode.FRAME_NOT_PUBLISHED, "message": message, "details": details}
        response.status, response.response_kind = ResponseStatus.FAILED, ResponseKind.E2A_ERROR
    else:
        body = {"delta_kind": DeltaKind.CUSTOM, "delta": {NOT_PUBLISHED_DELTA: details}}
        response.status, response.response_kind = ResponseStatus.IN_PROGRESS, ResponseKind.E2A_CHUNK
    response.body = jsontext.dumps(body, "body")
    return chat.SerializeToString()


class HeaderText(str):
    """A header value that white-space stripping and control-character replacement leave unchanged.

    nats-py's ``publish`` runs ``value.strip().translate(table)`` on every header value; ``translate``
    with a dict table costs CPython a dictionary miss (a KeyError) per distinct character, some
    20 microseconds for a frame's eleven headers. On text ``header_text`` found plain, both calls
    give the value itself, so they return it without that work. It is a ``str`` and equal to one.
    """

    __slots__ = ()

    def strip(self, chars: str | None = None) -> str:
        return self if chars is None else str.strip(self, chars)

    def translate(self, table: Any) -> str:
        # A table that maps only control characters changes nothing in plain text.
        if type(table) is dict and table.keys() <= _CONTROL_CODES:
            return self
        return str.translate(self, table)


def header_text(value: str) -> str:
    """``value``, as a ``HeaderText`` when it is plain (else itself, for nats-py to clean up)."""
    return HeaderText(value) if _PLAIN_HEADER_TEXT.fullmatch(value) else value


@dataclass
class _StreamParts:
    """What every frame of one stream shares (see the module docstring)."""

    #: The wire JSON around the frame's own fields: ``json[i]`` comes before ``FRAME_FIELDS[i]``.
    json: tuple[str, ...]
    source: str
    method: str | None
    is_stream: bool
    #: The extension headers before ``ce-seq`` (a2amethod, collaborationid, mcptype, sorted).
    extensions: dict[str, str]
    #: The NATS subject; None when the request has no id, or an empty one (the frame's own id names it then).
    subject: str | None
    session_id: str | None
    #: ``ce-type`` per response kind (it depends on the kind only when the stream has no method).
    types: dict[str, str] = field(default_factory=dict)


class FrameMessages:
    """Writes frames' NATS messages (``message``), keeping the parts each stream's frames share."""

    def __init__(self, *, subject_prefix: str, type_prefix: str, source: str | None) -> None:
        self._subject_prefix = subject_prefix
        self._type_prefix = type_prefix
        self._source = source
        self._streams: dict[bytes, _StreamParts] = {}
        self._spec_version = header_text(cloudevents.SPEC_VERSION)
        self._content_type = header_text(cloudevents.JSON_CONTENT_TYPE)

    def message(self, frame: bytes) -> BrokerMessage:
        """The NATS message of a frame (a serialized ChatResponse); raises as ``frame_message`` does."""
        response = agent_service_pb2.ChatResponse.FromString(frame).response
        event_id = response.response_id
        body = response.body
        if not event_id or event_id.isspace() or not (body == "" or jsontext.canonical_object(body) is not None):
            return self._general(frame)  # a random event id, or a body the codec rewrites
        sequence, is_final, status, kind = response.sequence, response.is_final, response.status, response.response_kind
        timestamp = response.timestamp if response.HasField("timestamp") else None
        for name in FRAME_FIELDS:
            response.ClearField(name)
        key = response.SerializeToString()
        parts = self._streams.get(key)
        if parts is None:
            try:
                parts = self._parts(response)
            except E2AFieldError:
                return self._general(frame)  # which names the field at fault
            if len(self._streams) >= MAX_CACHED_STREAMS:
                self._streams.clear()
            self._streams[key] = parts
        json = parts.json
        data = "".join(
            (
                json[0],
                orjson.dumps(event_id).decode(),
                json[1],
                str(sequence),
                json[2],
                "true" if is_final else "false",
                json[3],
                orjson.dumps(status).decode(),
                json[4],
                orjson.dumps(kind).decode(),
                json[5],
                "null" if timestamp is None else orjson.dumps(timestamp).decode(),
                json[6],
                body or "{}",
                json[7],
            )
        )
        event_type = parts.types.get(kind)
        if event_type is None:
            event_type = parts.types[kind] = header_text(
                http_header_value(cloudevents.response_type(self._type_prefix, parts.method, kind, parts.is_stream))
            )
        # An id of safe characters (a UUID: every frame FrameBuilder writes) is its ce-id as it is.
        plain_id = HeaderText(event_id) if is_http_safe(event_id) else None
        headers = {
            _SPEC_VERSION_HEADER: self._spec_version,
            _ID_HEADER: plain_id or header_text(http_header_value(event_id)),
            _SOURCE_HEADER: parts.source,
            _TYPE_HEADER: event_type,
            CONTENT_TYPE_HEADER: self._content_type,
        }
        if cloudevents.is_time(timestamp):
            assert timestamp is not None
            headers[_TIME_HEADER] = (
                HeaderText(timestamp) if is_http_safe(timestamp) else header_text(http_header_value(timestamp))
            )
        headers.update(parts.extensions)
        if sequence in cloudevents.INT32:
            headers[_SEQ_HEADER] = HeaderText(sequence)
        headers[MSG_ID_HEADER] = plain_id or header_text(event_id)
        subject = parts.subject or frame_subject(self._subject_prefix, parts.session_id, event_id)
        return BrokerMessage(subject, headers, data.encode())

    def _parts(self, shared: e2a_pb2.E2AResponse) -> _StreamParts:
        """The parts of the stream whose frames share ``shared``, written by the general codec."""
        record = E2AResponse.from_proto(shared)
        values = record.to_dict()
        segments, text = [], "{"
        for index, name in enumerate(values):
            text += f'{"," if index else ""}"{name}":'
            if name in FRAME_FIELDS:
                segments.append(text)
                text = ""
            else:
                text += jsontext.dumps(values[name], name)
        segments.append(text + "}")
        extensions: dict[str, str] = {}
        if record.method is not None:
            extensions["ce-" + cloudevents.Extension.A2A_METHOD] = record.method
        if record.request_id is not None:
            extensions["ce-" + cloudevents.Extension.COLLABORATION_ID] = record.request_id
        extensions["ce-" + cloudevents.Extension.MCP_TYPE] = cloudevents.McpType.RESPONSE.value
        source = cloudevents.default_source(record.channel) if self._source is None else self._source
        return _StreamParts(
            json=tuple(segments),
            source=header_text(http_header_value(source)),
            method=record.method,
            is_stream=record.is_stream,
            extensions={name: header_text(http_header_value(text)) for name, text in extensions.items()},
            subject=None
            if not record.request_id
            else frame_subject(self._subject_prefix, record.session_id, record.request_id),
            session_id=record.session_id,
        )

    def _general(self, frame: bytes) -> BrokerMessage:
        return frame_message(
            frame_record(frame), subject_prefix=self._subject_prefix, type_prefix=self._type_prefix, source=self._source
        )
