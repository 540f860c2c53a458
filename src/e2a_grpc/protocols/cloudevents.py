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

The formats that carry an event are in ``cloudevent_formats``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final
from urllib.parse import quote

from e2a_grpc import jsontext
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError, type_name
from e2a_grpc.model import E2AEnvelope, E2AResponse

SPEC_VERSION: Final = "1.0"
JSON_CONTENT_TYPE: Final = "application/json"
#: The ``source`` of a record without a channel; with one, ``/e2a/channels/<channel>``.
SOURCE_ROOT: Final = "/e2a"
#: ``params`` key of an envelope that names its pub/sub topic (EventMesh's convention).
TOPIC_PARAM: Final = "_topic"

#: CloudEvents Integer attributes are 32-bit signed.
INT32 = range(-(2**31), 2**31)
# RFC 3339 date-time, as CloudEvents' Timestamp type requires.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


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
CONTEXT_ATTRIBUTES: Final = (
    "specversion", "id", "source", "type", "datacontenttype", "dataschema", "subject", "time",
)  # fmt: skip
REQUIRED_ATTRIBUTES: Final = ("specversion", "id", "source", "type")
OPTIONAL_ATTRIBUTES: Final = ("datacontenttype", "dataschema", "subject", "time")
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
            name: value for name in CONTEXT_ATTRIBUTES if (value := getattr(self, name)) is not None
        }
        values.update(sorted(self.extensions.items()))
        return values


Record = E2AEnvelope | E2AResponse


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
        if record.sequence in INT32:
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


def is_json_media_type(content_type: str) -> bool:
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
        if not _EXTENSION_NAME.match(name) or name in CONTEXT_ATTRIBUTES or name in ("data", "data_base64"):
            raise E2AValueError(name, "not a valid extension attribute name (a-z, 0-9, at most 20)")


def event_to_record(event: CloudEvent) -> Record:
    """The E2A record an event carries, checked against the event's attributes."""
    check_event(event)
    if event.datacontenttype is not None and not is_json_media_type(event.datacontenttype):
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


def is_time(text: str | None) -> bool:
    """An RFC 3339 timestamp that a Timestamp attribute can hold (no leap second, year 1-9999)."""
    if text is None or not _RFC3339.match(text):
        return False
    try:
        parse_time(text)
    except E2AValueError:
        return False
    return True


def parse_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError as exc:
        raise E2AValueError("time", f"expected an RFC 3339 timestamp, got {text!r} ({exc})") from None
