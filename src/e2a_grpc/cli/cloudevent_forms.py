"""The CloudEvents formats as bytes, what ``convert to-cloudevents`` writes and ``from-cloudevents``
reads: HTTP and Kafka messages as one JSON object per line (headers, body/value), the JSON formats
and the protobuf ones as they are. The Kafka binding's binary mode is here because nothing else
uses it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from e2a.cloudevents.v1 import cloudevents_pb2
from e2a_grpc import jsontext
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError, type_name
from e2a_grpc.model.proto import parse
from e2a_grpc.protocols.cloudevent_formats import (
    CONTENT_TYPE_HEADER,
    attribute_text,
    event_from_headers,
    from_batch_json,
    from_http_binary,
    from_protobuf,
    from_protobuf_batch,
    from_structured_json,
    to_batch_json,
    to_http_binary,
    to_protobuf,
    to_protobuf_batch,
    to_structured_json,
    utf8_text,
)
from e2a_grpc.protocols.cloudevents import CloudEvent

_KAFKA_PREFIX: Final = "ce_"


@dataclass(frozen=True)
class KafkaMessage:
    """An event in the Kafka binding's binary mode: ``ce_*`` headers (and content-type), key, value."""

    headers: list[tuple[str, bytes]]
    key: bytes | None
    value: bytes | None


def to_kafka_binary(event: CloudEvent) -> KafkaMessage:
    """Binary mode: each attribute a UTF-8 ``ce_`` header, datacontenttype as content-type; the
    ``partitionkey`` extension, if any, is the message key."""
    headers = []
    key = None
    for name, value in event.attributes().items():
        if name == "datacontenttype":
            headers.append((CONTENT_TYPE_HEADER, str(value).encode()))
        else:
            headers.append((_KAFKA_PREFIX + name, attribute_text(value).encode()))
            if name == "partitionkey":
                key = attribute_text(value).encode()
    return KafkaMessage(headers=headers, key=key, value=event.data)


def from_kafka_binary(
    headers: Sequence[tuple[str, bytes]], value: bytes | None, key: bytes | None = None
) -> CloudEvent:
    """Binary mode; a message key without a ``ce_partitionkey`` header is the ``partitionkey`` extension."""
    attributes: dict[str, str] = {}
    content_type = None
    for name, raw in headers:
        lowered = name.lower()
        if lowered == CONTENT_TYPE_HEADER:
            content_type = utf8_text(raw, CONTENT_TYPE_HEADER)
        elif lowered.startswith(_KAFKA_PREFIX):
            attribute = lowered[len(_KAFKA_PREFIX) :]
            attributes[attribute] = utf8_text(raw, attribute)
    if key is not None and "partitionkey" not in attributes:
        attributes["partitionkey"] = utf8_text(key, "partitionkey")
    return event_from_headers(attributes, content_type, value)


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
            lines.append(jsontext.dumps({"headers": message.headers, "body": utf8_text(message.body, "data")}))
        else:
            kafka = to_kafka_binary(event)
            headers = [[name, utf8_text(value, name)] for name, value in kafka.headers]
            key = None if kafka.key is None else utf8_text(kafka.key, "partitionkey")
            value = None if kafka.value is None else utf8_text(kafka.value, "data")
            lines.append(jsontext.dumps({"headers": headers, "key": key, "value": value}))
    return "".join(line + "\n" for line in lines).encode()


def decode(data: bytes, form: Format) -> list[CloudEvent]:
    """The events ``encode`` wrote (or a peer did) in ``form``: one JSON document per line, or a single
    document over several lines; errors name the event and attribute."""
    if form is Format.PROTOBUF:
        return [from_protobuf(parse(cloudevents_pb2.CloudEvent, data))]
    if form is Format.PROTOBUF_BATCH:
        return from_protobuf_batch(parse(cloudevents_pb2.CloudEventBatch, data))
    text = utf8_text(data, "$")
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
