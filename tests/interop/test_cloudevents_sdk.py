"""The official CloudEvents Python SDK (``cloudevents``, its ``cloudevents.core`` API) reads the
events we write and we read the events it writes: structured and binary HTTP (and Kafka binary),
for every conformance record."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from cloudevents.core.bindings import http as sdk_http
from cloudevents.core.bindings import kafka as sdk_kafka
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent as SdkEvent

from e2a_grpc import jsontext
from e2a_grpc.cli import cloudevent_forms
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.protocols import cloudevent_formats as formats
from e2a_grpc.protocols import cloudevents as ce
from tests.support.cloudevent_records import conformance_records

PREFIX = "org.apache.eventmesh.a2a"
#: The media type of a structured event in the HTTP binding.
STRUCTURED_CONTENT_TYPE = "application/cloudevents+json"
Record = E2AEnvelope | E2AResponse


def _assert_sdk_read_our_event(sdk_event: Any, ours: ce.CloudEvent, record: Record) -> None:
    assert (sdk_event.get_id(), sdk_event.get_source(), sdk_event.get_type()) == (ours.id, ours.source, ours.type)
    assert sdk_event.get_specversion() == "1.0"
    assert sdk_event.get_datacontenttype() == "application/json"
    assert sdk_event.get_subject() == ours.subject
    for name, value in ours.extensions.items():
        # The binary modes carry every attribute as text; the JSON format keeps seq a number.
        assert sdk_event.get_extension(name) in (value, str(value)), name
    if ours.time is not None:
        assert sdk_event.get_time() == datetime.fromisoformat(ours.time)
    data = sdk_event.get_data()
    assert isinstance(data, dict)
    # The SDK parsed the data with json: written back, it is the record's wire JSON byte for byte.
    assert jsontext.dumps(data, parsed=True) == record.to_json()


def _sdk_event(record: Record) -> SdkEvent:
    """The event a peer builds with the SDK for a record, following our documented mapping."""
    attributes: dict[str, Any] = {
        "id": "peer-id",
        "source": "https://peer.example/agents",
        "type": ce.event_type(record, PREFIX),
        "datacontenttype": "application/json",
        "time": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "mcptype": "response" if isinstance(record, E2AResponse) else "request",
    }
    if isinstance(record, E2AResponse):
        attributes["id"] = record.response_id or "peer-id"
        if 0 <= record.sequence < 2**31:
            attributes["seq"] = record.sequence
    elif record.request_id or record.message_id:
        attributes["id"] = record.request_id or record.message_id
    return SdkEvent(attributes=attributes, data=record.to_dict())


def _records() -> tuple[Record, ...]:
    return conformance_records()


def test_the_sdk_reads_our_structured_events() -> None:
    for record in _records():
        ours = ce.record_to_event(record, type_prefix=PREFIX)
        message = sdk_http.HTTPMessage(
            headers={"content-type": STRUCTURED_CONTENT_TYPE}, body=formats.to_structured_json(ours).encode()
        )
        _assert_sdk_read_our_event(sdk_http.from_structured(message, JSONFormat()), ours, record)


def test_the_sdk_reads_our_binary_http_events() -> None:
    for record in _records():
        ours = ce.record_to_event(record, type_prefix=PREFIX)
        message = formats.to_http_binary(ours)
        sdk_event = sdk_http.from_binary(sdk_http.HTTPMessage(headers=message.headers, body=message.body), JSONFormat())
        _assert_sdk_read_our_event(sdk_event, ours, record)


def test_the_sdk_reads_our_kafka_events() -> None:
    for record in _records()[:50]:
        ours = ce.record_to_event(record, type_prefix=PREFIX)
        message = cloudevent_forms.to_kafka_binary(ours)
        sdk_message = sdk_kafka.KafkaMessage(headers=dict(message.headers), key=message.key, value=message.value or b"")
        _assert_sdk_read_our_event(sdk_kafka.from_binary(sdk_message, JSONFormat()), ours, record)


@pytest.mark.parametrize("mode", ["structured", "binary"])
def test_we_read_the_sdks_http_events(mode: str) -> None:
    for record in _records():
        sdk_event = _sdk_event(record)
        if mode == "structured":
            message = sdk_http.to_structured(sdk_event, JSONFormat())
            content_type = {name.lower(): value for name, value in message.headers.items()}["content-type"]
            assert content_type.startswith(STRUCTURED_CONTENT_TYPE)
            event = formats.from_structured_json(message.body)
        else:
            message = sdk_http.to_binary(sdk_event, JSONFormat())
            event = formats.from_http_binary(message.headers, message.body)
        assert (event.id, event.source, event.type) == (
            sdk_event.get_id(),
            sdk_event.get_source(),
            sdk_event.get_type(),
        )
        assert event.time is not None and datetime.fromisoformat(event.time) == sdk_event.get_time()
        back = ce.event_to_record(event)
        assert type(back) is type(record)
        assert back.to_json() == record.to_json()


def test_we_read_the_sdks_kafka_events() -> None:
    for record in _records()[:50]:
        sdk_event = _sdk_event(record)
        message = sdk_kafka.to_binary(sdk_event, JSONFormat())
        event = cloudevent_forms.from_kafka_binary(list(message.headers.items()), message.value, None)
        assert ce.event_to_record(event).to_json() == record.to_json()


def test_an_sdk_event_that_contradicts_its_data_is_refused_naming_the_attribute() -> None:
    frame = E2AResponse(response_id="f-1", request_id="r-1", sequence=4, response_kind="e2a.chunk")
    sdk_event = SdkEvent(
        attributes={"id": "f-1", "source": "/x", "type": "t.resp", "seq": 5, "datacontenttype": "application/json"},
        data=frame.to_dict(),
    )
    message = sdk_http.to_binary(sdk_event, JSONFormat())
    with pytest.raises(E2AFieldError) as caught:
        ce.event_to_record(formats.from_http_binary(message.headers, message.body))
    assert caught.value.field == "seq"
