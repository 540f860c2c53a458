"""The CloudEvents 1.0 binding of E2A records: the mapping both ways, and the event formats.

An E2A record travels as one event whose ``data`` is the record's wire JSON
(``datacontenttype: application/json``); the attributes follow Apache EventMesh's A2A mapping with
E2A's own ids:

======================  ==========================================================================
attribute               value
======================  ==========================================================================
``id``                  ``request_id`` (else ``message_id``) of an envelope, ``response_id`` of a
                        response; a fresh UUID when the record has none (or only whitespace,
                        which SDKs trim to nothing)
``source``              configurable; by default ``/e2a/channels/<channel>`` (``/e2a`` without one)
``type``                ``<prefix>.<method with / as .>.req`` for an envelope; ``.resp`` for a
                        response, ``.stream`` for a response of a stream (``is_stream``); a
                        response without a method uses its ``response_kind``
``subject``             the topic: an envelope's ``params._topic``
``time``                the record's ``timestamp`` when it is RFC 3339
``a2amethod``           the ``method``
``mcptype``             ``request`` (envelope) or ``response``
``collaborationid``     a response's ``request_id``
``targetagent``         an envelope's ``agent_id``
``seq``                 a response's ``sequence`` (an Integer: only when it fits 32 bits)
======================  ==========================================================================

Reading an event back gives the record its data holds, equal to the original; the mapping's
extension attributes are checked against it, so an event whose ``seq``, ``collaborationid``,
``a2amethod``, ``targetagent`` or ``mcptype`` contradicts its data is refused (``id`` is not: a peer
or broker may give events ids of its own). Every refusal is an ``E2AFieldError`` naming the attribute
(``specversion``, ``seq``, ``data.params``, ...).

Formats, each written and read here: structured JSON (``application/cloudevents+json``), batched
JSON (``application/cloudevents-batch+json``), binary HTTP (``ce-*`` headers), Kafka binary
(``ce_*`` headers) and the protobuf format (``io.cloudevents.v1.CloudEvent``).
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, Protocol
from urllib.parse import quote, unquote

from google.protobuf.timestamp_pb2 import Timestamp

from e2a.cloudevents.v1 import cloudevents_pb2
from e2a_grpc import jsontext
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError, type_name
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.model.proto import parse

SPEC_VERSION: Final = "1.0"
JSON_CONTENT_TYPE: Final = "application/json"
STRUCTURED_CONTENT_TYPE: Final = "application/cloudevents+json"
BATCH_CONTENT_TYPE: Final = "application/cloudevents-batch+json"
#: The ``source`` of a record without a channel; with one, ``/e2a/channels/<channel>``.
SOURCE_ROOT: Final = "/e2a"
#: ``params`` key of an envelope that names its pub/sub topic (EventMesh's convention).
TOPIC_PARAM: Final = "_topic"

#: CloudEvents Integer attributes are 32-bit signed.
_INT32 = range(-(2**31), 2**31)
_HTTP_PREFIX: Final = "ce-"
_KAFKA_PREFIX: Final = "ce_"
_CONTENT_TYPE_HEADER: Final = "content-type"
# RFC 3339 date-time, as CloudEvents' Timestamp type requires.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
# The HTTP binding percent-encodes space, '"', '%' and everything outside printable ASCII.
_HTTP_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in ' "%')
_HTTP_SAFE_TEXT = re.compile(r"[\x21\x23\x24\x26-\x7e]*")


class Extension(StrEnum):
    """The extension attributes of the mapping (EventMesh's A2A names)."""

    A2A_METHOD = "a2amethod"
    MCP_TYPE = "mcptype"
    COLLABORATION_ID = "collaborationid"
    TARGET_AGENT = "targetagent"
    SEQ = "seq"


class McpType(StrEnum):
    """``mcptype``: which side of an exchange the record is."""

    REQUEST = "request"
    RESPONSE = "response"


class TypeSuffix(StrEnum):
    """The last segment of ``type``."""

    REQUEST = "req"
    RESPONSE = "resp"
    STREAM = "stream"


#: The context attributes that are not extensions, in the order the JSON format writes them.
_CONTEXT_ATTRIBUTES: Final = (
    "specversion", "id", "source", "type", "datacontenttype", "dataschema", "subject", "time",
)  # fmt: skip
_REQUIRED: Final = ("specversion", "id", "source", "type")
_OPTIONAL: Final = ("datacontenttype", "dataschema", "subject", "time")
#: A structured event is one level deeper than the record in its data (a batch, two).
_EVENT_DEPTH: Final = jsontext.MAX_DEPTH + 1
_EXTENSION_NAME = re.compile(r"^[a-z0-9]{1,20}$")

AttributeValue = str | int | bool | bytes


@dataclass(frozen=True)
class CloudEvent:
    """One CloudEvent 1.0: its attributes (``time`` as RFC 3339 text) and its data as bytes."""

    id: str
    source: str
    type: str
    specversion: str = SPEC_VERSION
    datacontenttype: str | None = None
    dataschema: str | None = None
    subject: str | None = None
    time: str | None = None
    extensions: Mapping[str, AttributeValue] = field(default_factory=dict)
    data: bytes | None = None

    def attributes(self) -> dict[str, AttributeValue]:
        """Every attribute that is set: the context attributes, then the extensions sorted by name (so
        that every format writes an event alike, whichever way it came, e.g. from a protobuf map)."""
        values: dict[str, AttributeValue] = {
            name: value for name in _CONTEXT_ATTRIBUTES if (value := getattr(self, name)) is not None
        }
        values.update(sorted(self.extensions.items()))
        return values


@dataclass(frozen=True)
class HttpMessage:
    """An event in the HTTP binding's binary mode: ``ce-*`` headers (and Content-Type) and the body."""

    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class KafkaMessage:
    """An event in the Kafka binding's binary mode: ``ce_*`` headers (and content-type), key, value."""

    headers: list[tuple[str, bytes]]
    key: bytes | None
    value: bytes | None


Record = E2AEnvelope | E2AResponse


# --- the mapping ---------------------------------------------------------------------------------


def default_source(channel: str | None) -> str:
    """The ``source`` of a record when none is configured: its channel under ``/e2a/channels/``."""
    return SOURCE_ROOT if channel is None else f"{SOURCE_ROOT}/channels/{quote(channel, safe='')}"


def event_type(record: Record, type_prefix: str) -> str:
    """``<prefix>.<method>.<req|resp|stream>`` (module docstring)."""
    if isinstance(record, E2AEnvelope):
        return _type_text(type_prefix, record.method or "none", TypeSuffix.REQUEST)
    return response_type(type_prefix, record.method, record.response_kind, record.is_stream)


def response_type(type_prefix: str, method: str | None, response_kind: str, is_stream: bool) -> str:
    """The ``type`` of a response's event (``event_type``), from the fields it depends on."""
    suffix = TypeSuffix.STREAM if is_stream else TypeSuffix.RESPONSE
    return _type_text(type_prefix, method or response_kind or "none", suffix)


def _type_text(type_prefix: str, name: str, suffix: TypeSuffix) -> str:
    return f"{type_prefix}.{name.replace('/', '.')}.{suffix}"


def record_to_event(record: Record, *, type_prefix: str, source: str | None = None) -> CloudEvent:
    """The event that carries ``record`` (``source`` None: ``default_source`` of its channel)."""
    extensions: dict[str, AttributeValue] = {}
    if record.method is not None:
        extensions[Extension.A2A_METHOD] = record.method
    subject = None
    if isinstance(record, E2AEnvelope):
        event_id = record.request_id or record.message_id
        extensions[Extension.MCP_TYPE] = McpType.REQUEST.value
        if record.agent_id is not None:
            extensions[Extension.TARGET_AGENT] = record.agent_id
        topic = record.params.get(TOPIC_PARAM)
        subject = topic if isinstance(topic, str) else None
    else:
        event_id = record.response_id
        extensions[Extension.MCP_TYPE] = McpType.RESPONSE.value
        if record.request_id is not None:
            extensions[Extension.COLLABORATION_ID] = record.request_id
        if record.sequence in _INT32:
            extensions[Extension.SEQ] = record.sequence
    return CloudEvent(
        id=event_id if event_id and not event_id.isspace() else str(uuid.uuid4()),
        source=default_source(record.channel) if source is None else source,
        type=event_type(record, type_prefix),
        datacontenttype=JSON_CONTENT_TYPE,
        subject=subject,
        time=record.timestamp if is_time(record.timestamp) else None,
        extensions=extensions,
        data=record.to_json().encode(),
    )


def records_to_events(records: Iterable[Record], *, type_prefix: str, source: str | None = None) -> list[CloudEvent]:
    """An event per record, in order (a batch); an empty prefix or source is an error naming it."""
    if not type_prefix:
        raise E2AValueError("type_prefix", "the event type prefix is empty")
    if source == "":
        raise E2AValueError("source", "a CloudEvent source is a non-empty URI-reference")
    return [record_to_event(record, type_prefix=type_prefix, source=source) for record in records]


def _is_json_media_type(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == JSON_CONTENT_TYPE or media_type.endswith("+json") or media_type == "text/json"


def _record_kind(event: CloudEvent, document: dict[str, Any]) -> type[Record]:
    """Envelope or response: ``mcptype`` if set, else the type's suffix, else the data's shape."""
    mcp_type = event.extensions.get(Extension.MCP_TYPE)
    if mcp_type is not None:
        if mcp_type == McpType.REQUEST:
            return E2AEnvelope
        if mcp_type == McpType.RESPONSE:
            return E2AResponse
        raise E2AValueError(Extension.MCP_TYPE, f"expected request or response, got {mcp_type!r}")
    suffix = event.type.rsplit(".", 1)[-1]
    if suffix == TypeSuffix.REQUEST:
        return E2AEnvelope
    if suffix in (TypeSuffix.RESPONSE, TypeSuffix.STREAM):
        return E2AResponse
    return E2AResponse if "response_kind" in document else E2AEnvelope


def _check(name: str, actual: AttributeValue | None, expected: object) -> None:
    if actual is not None and actual != expected:
        raise E2AValueError(name, f"{actual!r} contradicts the record in data, which says {expected!r}")


def _integer(name: str, value: AttributeValue | None) -> int | None:
    """An Integer attribute, as the JSON format (a number) or a binary mode (decimal text) carries it."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,11}", value):
        return int(value)
    raise E2ATypeError(name, f"expected an Integer, got {value!r}")


def check_event(event: CloudEvent) -> None:
    """The attributes CloudEvents 1.0 requires, and their forms."""
    if event.specversion != SPEC_VERSION:
        raise E2AValueError("specversion", f"expected {SPEC_VERSION!r}, got {event.specversion!r}")
    for name in ("id", "source", "type"):
        value = getattr(event, name)
        if not isinstance(value, str) or not value:
            raise E2AValueError(name, "a CloudEvent needs a non-empty string")
    if event.time is not None and not is_time(event.time):
        raise E2AValueError("time", f"expected an RFC 3339 timestamp, got {event.time!r}")
    for name in event.extensions:
        if not _EXTENSION_NAME.match(name) or name in _CONTEXT_ATTRIBUTES or name in ("data", "data_base64"):
            raise E2AValueError(name, "not a valid extension attribute name (a-z, 0-9, at most 20)")


def event_to_record(event: CloudEvent) -> Record:
    """The E2A record an event carries, checked against the event's attributes."""
    check_event(event)
    if event.datacontenttype is not None and not _is_json_media_type(event.datacontenttype):
        raise E2AValueError("datacontenttype", f"E2A records are JSON, got {event.datacontenttype!r}")
    if event.data is None:
        raise E2AValueError("data", "the event carries no E2A record")
    try:
        text = event.data.decode()
    except UnicodeDecodeError as exc:
        raise E2AValueError("data", f"JSON text is not UTF-8: {exc}") from None
    document = jsontext.loads(text, "data")
    if not isinstance(document, dict):
        raise E2ATypeError("data", f"an E2A record is a JSON object, got {type_name(document)}")
    kind = _record_kind(event, document)
    try:
        record: Record = kind.from_dict(document)
    except E2AFieldError as exc:
        raise exc.under("data") from None
    extensions = event.extensions
    _check(Extension.A2A_METHOD, extensions.get(Extension.A2A_METHOD), record.method)
    if isinstance(record, E2AEnvelope):
        _check(Extension.TARGET_AGENT, extensions.get(Extension.TARGET_AGENT), record.agent_id)
    else:
        _check(Extension.COLLABORATION_ID, extensions.get(Extension.COLLABORATION_ID), record.request_id)
        _check(Extension.SEQ, _integer(Extension.SEQ, extensions.get(Extension.SEQ)), record.sequence)
    return record


def events_to_records(events: Iterable[CloudEvent]) -> list[Record]:
    """Each event's record, in order; an error names the event by its index (``[2].seq``)."""
    records = []
    for index, event in enumerate(events):
        try:
            records.append(event_to_record(event))
        except E2AFieldError as exc:
            raise exc.under(f"[{index}]") from None
    return records


# --- structured and batched JSON -----------------------------------------------------------------


def _json_value(value: AttributeValue) -> Any:
    return base64.b64encode(value).decode() if isinstance(value, bytes) else value


def to_structured_json(event: CloudEvent) -> str:
    """``application/cloudevents+json``: the attributes, then ``data`` (the JSON itself, embedded
    as it is, so nothing of the record's text changes) or ``data_base64`` for non-JSON data."""
    head = jsontext.dumps({name: _json_value(value) for name, value in event.attributes().items()})
    if event.data is None:
        return head
    if event.datacontenttype is None or _is_json_media_type(event.datacontenttype):
        return f'{head[:-1]},"data":{event.data.decode()}}}'
    return f'{head[:-1]},"data_base64":"{base64.b64encode(event.data).decode()}"}}'


def to_batch_json(events: Iterable[CloudEvent]) -> str:
    """``application/cloudevents-batch+json``: a JSON array of structured events."""
    return "[" + ",".join(to_structured_json(event) for event in events) + "]"


def _string_attribute(document: dict[str, Any], name: str) -> str | None:
    value = document.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise E2ATypeError(name, f"expected a string, got {type_name(value)}")
    return value


def _event_from_document(document: Any) -> CloudEvent:
    if not isinstance(document, dict):
        raise E2ATypeError("$", f"a structured CloudEvent is a JSON object, got {type_name(document)}")
    for name in _REQUIRED:
        if name not in document:
            raise E2AValueError(name, "a CloudEvent needs this attribute")
    strings = {name: _string_attribute(document, name) for name in _CONTEXT_ATTRIBUTES}
    extensions: dict[str, AttributeValue] = {}
    for name, value in document.items():
        if name in _CONTEXT_ATTRIBUTES or name in ("data", "data_base64"):
            continue
        if not isinstance(value, (str, int, bool)) or isinstance(value, float):
            raise E2ATypeError(name, f"an extension attribute is a string, number or boolean, got {type_name(value)}")
        extensions[name] = value
    data: bytes | None = None
    if "data" in document and "data_base64" in document:
        raise E2AValueError("data_base64", "an event has data or data_base64, not both")
    if "data_base64" in document:
        encoded = document["data_base64"]
        if not isinstance(encoded, str):
            raise E2ATypeError("data_base64", f"expected a base64 string, got {type_name(encoded)}")
        try:
            data = base64.b64decode(encoded, validate=True)
        except ValueError as exc:
            raise E2AValueError("data_base64", f"not base64: {exc}") from None
    elif "data" in document:
        value = document["data"]
        content_type = strings["datacontenttype"]
        if content_type is None or _is_json_media_type(content_type):
            data = jsontext.dumps(value, "data", parsed=True).encode()
        elif isinstance(value, str):
            data = value.encode()
        else:
            raise E2ATypeError("data", f"non-JSON data in the JSON format is a string, got {type_name(value)}")
    return CloudEvent(
        id=strings["id"] or "",
        source=strings["source"] or "",
        type=strings["type"] or "",
        specversion=strings["specversion"] or "",
        datacontenttype=strings["datacontenttype"],
        dataschema=strings["dataschema"],
        subject=strings["subject"],
        time=strings["time"],
        extensions=extensions,
        data=data,
    )


def from_structured_json(text: str | bytes) -> CloudEvent:
    """One ``application/cloudevents+json`` event."""
    if isinstance(text, bytes):
        text = _utf8(text, "$")
    return _event_from_document(jsontext.loads(text, "$", max_depth=_EVENT_DEPTH))


def from_batch_json(text: str | bytes) -> list[CloudEvent]:
    """An ``application/cloudevents-batch+json`` array; an error names the event (``[1].id``)."""
    if isinstance(text, bytes):
        text = _utf8(text, "$")
    document = jsontext.loads(text, "$", max_depth=_EVENT_DEPTH + 1)
    if not isinstance(document, list):
        raise E2ATypeError("$", f"a CloudEvents batch is a JSON array, got {type_name(document)}")
    events = []
    for index, item in enumerate(document):
        try:
            events.append(_event_from_document(item))
        except E2AFieldError as exc:
            raise exc.under(f"[{index}]") from None
    return events


def _utf8(data: bytes, field_path: str) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise E2AValueError(field_path, f"not UTF-8: {exc}") from None


# --- binary HTTP (ce-*) and Kafka (ce_*) --------------------------------------------------------


def _header_text(value: AttributeValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def to_http_binary(event: CloudEvent) -> HttpMessage:
    """Binary mode: each attribute a percent-encoded ``ce-`` header, datacontenttype as Content-Type."""
    headers = {}
    for name, value in event.attributes().items():
        if name == "datacontenttype":
            headers[_CONTENT_TYPE_HEADER] = str(value)
        else:
            headers[_HTTP_PREFIX + name] = http_header_value(_header_text(value))
    return HttpMessage(headers=headers, body=event.data or b"")


def http_header_value(text: str) -> str:
    """An attribute's text as the value of its ``ce-`` header: percent-encoded where the binding says."""
    # Most values (ids, types, methods) need no encoding: skip urllib's slow path for them.
    return text if _HTTP_SAFE_TEXT.fullmatch(text) else quote(text, safe=_HTTP_SAFE)


def is_http_safe(text: str) -> bool:
    """Whether ``text`` is its own ``ce-`` header value (``http_header_value`` leaves it as it is)."""
    return _HTTP_SAFE_TEXT.fullmatch(text) is not None


def _event_from_headers(attributes: dict[str, str], content_type: str | None, data: bytes | None) -> CloudEvent:
    for name in _REQUIRED:
        if name not in attributes:
            raise E2AValueError(name, "a CloudEvent needs this attribute")
    extensions: dict[str, AttributeValue] = {
        name: value for name, value in attributes.items() if name not in _CONTEXT_ATTRIBUTES
    }
    return CloudEvent(
        id=attributes["id"],
        source=attributes["source"],
        type=attributes["type"],
        specversion=attributes["specversion"],
        datacontenttype=content_type,
        dataschema=attributes.get("dataschema"),
        subject=attributes.get("subject"),
        time=attributes.get("time"),
        extensions=extensions,
        data=data,
    )


def from_http_binary(headers: Mapping[str, str], body: bytes) -> CloudEvent:
    """Binary mode: header names are case-insensitive; values are percent-decoded."""
    attributes: dict[str, str] = {}
    content_type = None
    for name, value in headers.items():
        lowered = name.lower()
        if lowered == _CONTENT_TYPE_HEADER:
            content_type = value
        elif lowered.startswith(_HTTP_PREFIX):
            attributes[lowered[len(_HTTP_PREFIX) :]] = unquote(value, errors="strict")
    return _event_from_headers(attributes, content_type, body)


def to_kafka_binary(event: CloudEvent) -> KafkaMessage:
    """Binary mode: each attribute a UTF-8 ``ce_`` header, datacontenttype as content-type; the
    ``partitionkey`` extension, if any, is the message key."""
    headers = []
    key = None
    for name, value in event.attributes().items():
        if name == "datacontenttype":
            headers.append((_CONTENT_TYPE_HEADER, str(value).encode()))
        else:
            headers.append((_KAFKA_PREFIX + name, _header_text(value).encode()))
            if name == "partitionkey":
                key = _header_text(value).encode()
    return KafkaMessage(headers=headers, key=key, value=event.data)


def from_kafka_binary(
    headers: Sequence[tuple[str, bytes]], value: bytes | None, key: bytes | None = None
) -> CloudEvent:
    """Binary mode; a message key without a ``ce_partitionkey`` header is the ``partitionkey`` extension."""
    attributes: dict[str, str] = {}
    content_type = None
    for name, raw in headers:
        lowered = name.lower()
        if lowered == _CONTENT_TYPE_HEADER:
            content_type = _utf8(raw, _CONTENT_TYPE_HEADER)
        elif lowered.startswith(_KAFKA_PREFIX):
            attribute = lowered[len(_KAFKA_PREFIX) :]
            attributes[attribute] = _utf8(raw, attribute)
    if key is not None and "partitionkey" not in attributes:
        attributes["partitionkey"] = _utf8(key, "partitionkey")
    return _event_from_headers(attributes, content_type, value)


# --- the protobuf format (io.cloudevents.v1.CloudEvent) ----------------------------------------

_PbValue = cloudevents_pb2.CloudEvent.CloudEventAttributeValue


def _attribute_value(name: str, value: AttributeValue) -> _PbValue:
    if name == "time":
        timestamp = Timestamp()
        timestamp.FromDatetime(_parse_time(str(value)))
        return _PbValue(ce_timestamp=timestamp)
    if name == "dataschema":
        return _PbValue(ce_uri=str(value))
    if isinstance(value, bool):
        return _PbValue(ce_boolean=value)
    if isinstance(value, int):
        if value not in _INT32:
            raise E2AValueError(name, f"a CloudEvents Integer is 32-bit, got {value}")
        return _PbValue(ce_integer=value)
    if isinstance(value, bytes):
        return _PbValue(ce_bytes=value)
    return _PbValue(ce_string=value)


def is_time(text: str | None) -> bool:
    """An RFC 3339 timestamp that a Timestamp attribute can hold (no leap second, year 1-9999)."""
    if text is None or not _RFC3339.match(text):
        return False
    try:
        _parse_time(text)
    except E2AValueError:
        return False
    return True


def _parse_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError as exc:
        raise E2AValueError("time", f"expected an RFC 3339 timestamp, got {text!r} ({exc})") from None


def _format_time(name: str, timestamp: Timestamp) -> str:
    try:
        moment = timestamp.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError) as exc:  # seconds or nanos out of the Timestamp's range
        raise E2AValueError(f"attributes.{name}", f"not a valid timestamp: {exc}") from None
    return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds").replace("+00:00", "Z")


def to_protobuf(event: CloudEvent) -> cloudevents_pb2.CloudEvent:
    """The protobuf format. ``text/*`` data goes in ``text_data``; everything else, JSON included, in
    ``binary_data`` (its UTF-8 bytes): the Go SDK reads ``text_data`` of JSON as a JSON string, not the
    JSON itself, and writes JSON as ``binary_data`` itself. ``from_protobuf`` reads either."""
    message = cloudevents_pb2.CloudEvent(
        id=event.id, source=event.source, spec_version=event.specversion, type=event.type
    )
    for name, value in event.attributes().items():
        if name not in _REQUIRED:
            message.attributes[name].CopyFrom(_attribute_value(name, value))
    if event.data is not None:
        content_type = event.datacontenttype
        if content_type is not None and content_type.startswith("text/"):
            message.text_data = _utf8(event.data, "data")
        else:
            message.binary_data = event.data
    return message


def _from_attribute_value(name: str, value: _PbValue) -> AttributeValue:
    kind = value.WhichOneof("attr")
    if kind is None:
        raise E2AValueError(f"attributes.{name}", "no value is set")
    if kind == "ce_timestamp":
        return _format_time(name, value.ce_timestamp)
    result: AttributeValue = getattr(value, kind)
    return result


def from_protobuf(message: cloudevents_pb2.CloudEvent) -> CloudEvent:
    """An ``io.cloudevents.v1.CloudEvent`` message; data in ``proto_data`` is not an E2A record."""
    attributes = {name: _from_attribute_value(name, value) for name, value in message.attributes.items()}
    strings = {}
    for name in _OPTIONAL:
        value = attributes.pop(name, None)
        if value is not None and not isinstance(value, str):
            raise E2ATypeError(f"attributes.{name}", f"expected a string, got {type_name(value)}")
        strings[name] = value
    data_kind = message.WhichOneof("data")
    if data_kind == "proto_data":
        raise E2AValueError("proto_data", "E2A records are JSON: expected text_data or binary_data")
    data = None
    if data_kind == "text_data":
        data = message.text_data.encode()
    elif data_kind == "binary_data":
        data = message.binary_data
    return CloudEvent(
        id=message.id,
        source=message.source,
        type=message.type,
        specversion=message.spec_version,
        datacontenttype=strings["datacontenttype"],
        dataschema=strings["dataschema"],
        subject=strings["subject"],
        time=strings["time"],
        extensions=attributes,
        data=data,
    )


def to_protobuf_batch(events: Iterable[CloudEvent]) -> cloudevents_pb2.CloudEventBatch:
    return cloudevents_pb2.CloudEventBatch(events=[to_protobuf(event) for event in events])


class ProtobufBatch(Protocol):
    """A batch of protobuf events: ``io.cloudevents.v1.CloudEventBatch``, or ``e2a.v1.CloudEventBatch``
    (its twin with the same bytes, which the ConversionService uses)."""

    @property
    def events(self) -> Iterable[cloudevents_pb2.CloudEvent]: ...


def from_protobuf_batch(batch: ProtobufBatch) -> list[CloudEvent]:
    """A batch's events; an error names the event (``events[1].attributes.seq``)."""
    events = []
    for index, message in enumerate(batch.events):
        try:
            events.append(from_protobuf(message))
        except E2AFieldError as exc:
            raise exc.under(f"events[{index}]") from None
    return events


# --- byte forms of every format (the CLI's input and output) ----------------------------------


class Format(StrEnum):
    """A format as bytes: HTTP and Kafka messages as one JSON object per line (headers, body/value)."""

    STRUCTURED = "structured"  # application/cloudevents+json, one event per line
    BATCH = "batch"  # application/cloudevents-batch+json
    HTTP = "http"  # {"headers": {...}, "body": "..."} per line
    KAFKA = "kafka"  # {"headers": [[name, value], ...], "key": ..., "value": ...} per line
    PROTOBUF = "protobuf"  # one io.cloudevents.v1.CloudEvent
    PROTOBUF_BATCH = "protobuf-batch"  # io.cloudevents.v1.CloudEventBatch


def encode(events: Sequence[CloudEvent], form: Format) -> bytes:
    """The events in ``form``, as bytes to write to a file or a pipe."""
    if form is Format.BATCH:
        return (to_batch_json(events) + "\n").encode()
    if form is Format.PROTOBUF_BATCH:
        return to_protobuf_batch(events).SerializeToString()
    if form is Format.PROTOBUF:
        if len(events) != 1:
            raise E2AValueError("$", f"the protobuf format holds one event, got {len(events)} (use protobuf-batch)")
        return to_protobuf(events[0]).SerializeToString()
    lines = []
    for event in events:
        if form is Format.STRUCTURED:
            lines.append(to_structured_json(event))
        elif form is Format.HTTP:
            message = to_http_binary(event)
            lines.append(jsontext.dumps({"headers": message.headers, "body": _utf8(message.body, "data")}))
        else:
            kafka = to_kafka_binary(event)
            headers = [[name, _utf8(value, name)] for name, value in kafka.headers]
            key = None if kafka.key is None else _utf8(kafka.key, "partitionkey")
            value = None if kafka.value is None else _utf8(kafka.value, "data")
            lines.append(jsontext.dumps({"headers": headers, "key": key, "value": value}))
    return "".join(line + "\n" for line in lines).encode()


def decode(data: bytes, form: Format) -> list[CloudEvent]:
    """The events ``encode`` wrote (or a peer did) in ``form``: one JSON document per line, or a single
    document over several lines; errors name the event and attribute."""
    if form is Format.PROTOBUF:
        return [from_protobuf(parse(cloudevents_pb2.CloudEvent, data))]
    if form is Format.PROTOBUF_BATCH:
        return from_protobuf_batch(parse(cloudevents_pb2.CloudEventBatch, data))
    text = _utf8(data, "$")
    if form in (Format.STRUCTURED, Format.BATCH) and text.lstrip().startswith("["):
        return from_batch_json(text)
    lines = [line for line in text.splitlines() if line.strip()]
    if not all(line.lstrip().startswith("{") for line in lines):
        return [_decode_line(text, form)]  # one document written over several lines (pretty-printed)
    events = []
    for index, line in enumerate(lines):
        try:
            events.append(_decode_line(line, form))
        except E2AFieldError as exc:
            raise exc.under(f"[{index}]") from None
    if not events:
        raise E2AValueError("$", "no event in the input")
    return events


def _decode_line(line: str, form: Format) -> CloudEvent:
    if form in (Format.STRUCTURED, Format.BATCH):
        return from_structured_json(line)
    document = jsontext.loads(line, "$")
    if not isinstance(document, dict):
        raise E2ATypeError("$", f"expected a JSON object, got {type_name(document)}")
    if form is Format.HTTP:
        headers, body = document.get("headers"), document.get("body", "")
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise E2ATypeError("headers", "expected an object of header strings")
        if not isinstance(body, str):
            raise E2ATypeError("body", f"expected a string, got {type_name(body)}")
        return from_http_binary(headers, body.encode())
    pairs, value = document.get("headers"), document.get("value")
    if not isinstance(pairs, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(item, str) for item in pair) for pair in pairs
    ):
        raise E2ATypeError("headers", "expected a list of [name, value] strings")
    if value is not None and not isinstance(value, str):
        raise E2ATypeError("value", f"expected a string, got {type_name(value)}")
    key = document.get("key")
    if key is not None and not isinstance(key, str):
        raise E2ATypeError("key", f"expected a string, got {type_name(key)}")
    return from_kafka_binary(
        [(name, text.encode()) for name, text in pairs],
        None if value is None else value.encode(),
        None if key is None else key.encode(),
    )
