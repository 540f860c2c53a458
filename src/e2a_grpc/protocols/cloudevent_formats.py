"""The formats of a CloudEvent (``cloudevents.CloudEvent``), each written and read here: structured
JSON (``application/cloudevents+json``), batched JSON (``application/cloudevents-batch+json``),
binary HTTP (``ce-*`` headers) and the protobuf format (``io.cloudevents.v1.CloudEvent``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Final, Protocol
from urllib.parse import quote, unquote

from google.protobuf.timestamp_pb2 import Timestamp

from e2a.cloudevents.v1 import cloudevents_pb2
from e2a_grpc import jsontext
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError, type_name
from e2a_grpc.protocols.cloudevents import (
    CONTEXT_ATTRIBUTES,
    INT32,
    OPTIONAL_ATTRIBUTES,
    REQUIRED_ATTRIBUTES,
    AttributeValue,
    CloudEvent,
    is_json_media_type,
    parse_time,
)

#: The header of ``datacontenttype`` in the binary modes (the others are prefixed attribute names).
CONTENT_TYPE_HEADER: Final = "content-type"
_HTTP_PREFIX: Final = "ce-"
# The HTTP binding percent-encodes space, '"', '%' and everything outside printable ASCII.
_HTTP_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in ' "%')
_HTTP_SAFE_TEXT = re.compile(r"[\x21\x23\x24\x26-\x7e]*")
#: A structured event is one level deeper than the record in its data (a batch, two).
_EVENT_DEPTH: Final = jsontext.MAX_DEPTH + 1


@dataclass(frozen=True)
class HttpMessage:
    """An event in the HTTP binding's binary mode: ``ce-*`` headers (and Content-Type) and the body."""

    headers: dict[str, str]
    body: bytes


# --- structured and batched JSON -----------------------------------------------------------------


def _json_value(value: AttributeValue) -> Any:
    return base64.b64encode(value).decode() if isinstance(value, bytes) else value


def to_structured_json(event: CloudEvent) -> str:
    """``application/cloudevents+json``: the attributes, then ``data`` (the JSON itself, embedded
    as it is, so nothing of the record's text changes) or ``data_base64`` for non-JSON data."""
    head = jsontext.dumps({name: _json_value(value) for name, value in event.attributes().items()})
    if event.data is None:
        return head
    if event.datacontenttype is None or is_json_media_type(event.datacontenttype):
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
    for name in REQUIRED_ATTRIBUTES:
        if name not in document:
            raise E2AValueError(name, "a CloudEvent needs this attribute")
    strings = {name: _string_attribute(document, name) for name in CONTEXT_ATTRIBUTES}
    extensions: dict[str, AttributeValue] = {}
    for name, value in document.items():
        if name in CONTEXT_ATTRIBUTES or name in ("data", "data_base64"):
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
        if content_type is None or is_json_media_type(content_type):
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
        text = utf8_text(text, "$")
    return _event_from_document(jsontext.loads(text, "$", max_depth=_EVENT_DEPTH))


def from_batch_json(text: str | bytes) -> list[CloudEvent]:
    """An ``application/cloudevents-batch+json`` array; an error names the event (``[1].id``)."""
    if isinstance(text, bytes):
        text = utf8_text(text, "$")
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


def utf8_text(data: bytes, field_path: str) -> str:
    """``data`` as text; bytes that are not UTF-8 are an error naming ``field_path``."""
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise E2AValueError(field_path, f"not UTF-8: {exc}") from None


# --- binary HTTP (ce-*) ---------------------------------------------------------------------------


def attribute_text(value: AttributeValue) -> str:
    """An attribute's value as the text of its header in a binary mode (bytes as base64)."""
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
            headers[CONTENT_TYPE_HEADER] = str(value)
        else:
            headers[_HTTP_PREFIX + name] = http_header_value(attribute_text(value))
    return HttpMessage(headers=headers, body=event.data or b"")


def http_header_value(text: str) -> str:
    """An attribute's text as the value of its ``ce-`` header: percent-encoded where the binding says."""
    # Most values (ids, types, methods) need no encoding: skip urllib's slow path for them.
    return text if _HTTP_SAFE_TEXT.fullmatch(text) else quote(text, safe=_HTTP_SAFE)


def is_http_safe(text: str) -> bool:
    """Whether ``text`` is its own ``ce-`` header value (``http_header_value`` leaves it as it is)."""
    return _HTTP_SAFE_TEXT.fullmatch(text) is not None


def event_from_headers(attributes: dict[str, str], content_type: str | None, data: bytes | None) -> CloudEvent:
    """The event of a binary mode, from its attributes' header texts (names without their prefix)."""
    for name in REQUIRED_ATTRIBUTES:
        if name not in attributes:
            raise E2AValueError(name, "a CloudEvent needs this attribute")
    extensions: dict[str, AttributeValue] = {
        name: value for name, value in attributes.items() if name not in CONTEXT_ATTRIBUTES
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
        if lowered == CONTENT_TYPE_HEADER:
            content_type = value
        elif lowered.startswith(_HTTP_PREFIX):
            try:
                attributes[lowered[len(_HTTP_PREFIX) :]] = unquote(value, errors="strict")
            except UnicodeDecodeError as exc:
                # A peer's malformed header is a field error like any other, not a codec's raw one.
                raise E2AValueError(lowered, f"percent-encoded bytes are not UTF-8: {exc.reason}") from None
    return event_from_headers(attributes, content_type, body)


# --- the protobuf format (io.cloudevents.v1.CloudEvent) ----------------------------------------

_PbValue = cloudevents_pb2.CloudEvent.CloudEventAttributeValue


def _attribute_value(name: str, value: AttributeValue) -> _PbValue:
    if name == "time":
        timestamp = Timestamp()
        timestamp.FromDatetime(parse_time(str(value)))
        return _PbValue(ce_timestamp=timestamp)
    if name == "dataschema":
        return _PbValue(ce_uri=str(value))
    if isinstance(value, bool):
        return _PbValue(ce_boolean=value)
    if isinstance(value, int):
        if value not in INT32:
            raise E2AValueError(name, f"a CloudEvents Integer is 32-bit, got {value}")
        return _PbValue(ce_integer=value)
    if isinstance(value, bytes):
        return _PbValue(ce_bytes=value)
    return _PbValue(ce_string=value)


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
        if name not in REQUIRED_ATTRIBUTES:
            message.attributes[name].CopyFrom(_attribute_value(name, value))
    if event.data is not None:
        content_type = event.datacontenttype
        if content_type is not None and content_type.startswith("text/"):
            message.text_data = utf8_text(event.data, "data")
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
    for name in OPTIONAL_ATTRIBUTES:
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
