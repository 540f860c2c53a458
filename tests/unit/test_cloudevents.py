"""The CloudEvents binding: the mapping's attributes, lossless round trips through every format, and
bad events refused with the attribute named."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import given

from e2a.cloudevents.v1 import cloudevents_pb2
from e2a.v1 import conversion_service_pb2
from e2a_grpc import jsontext
from e2a_grpc.cli import cloudevent_forms
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.protocols import cloudevent_formats as formats
from e2a_grpc.protocols import cloudevents as ce
from tests.conftest import fewer_examples
from tests.support import strategies
from tests.support.cloudevent_records import conformance_records

PREFIX = "org.apache.eventmesh.a2a"
Record = E2AEnvelope | E2AResponse


def _through_protobuf(event: ce.CloudEvent) -> ce.CloudEvent:
    data = formats.to_protobuf(event).SerializeToString()
    return formats.from_protobuf(cloudevents_pb2.CloudEvent.FromString(data))


def _through_http(event: ce.CloudEvent) -> ce.CloudEvent:
    message = formats.to_http_binary(event)
    # Header names are case-insensitive on the way in.
    return formats.from_http_binary({name.title(): value for name, value in message.headers.items()}, message.body)


def _through_kafka(event: ce.CloudEvent) -> ce.CloudEvent:
    message = cloudevent_forms.to_kafka_binary(event)
    return cloudevent_forms.from_kafka_binary(message.headers, message.value)


FORMATS: dict[str, Callable[[ce.CloudEvent], ce.CloudEvent]] = {
    "structured": lambda event: formats.from_structured_json(formats.to_structured_json(event)),
    "batch": lambda event: formats.from_batch_json(formats.to_batch_json([event, event]))[1],
    "http": _through_http,
    "kafka": _through_kafka,
    "protobuf": _through_protobuf,
    "protobuf-batch": lambda event: formats.from_protobuf_batch(
        cloudevents_pb2.CloudEventBatch.FromString(formats.to_protobuf_batch([event]).SerializeToString())
    )[0],
}


def _assert_round_trip(record: Record, through: Callable[[ce.CloudEvent], ce.CloudEvent]) -> None:
    event = ce.record_to_event(record, type_prefix=PREFIX)
    back = ce.event_to_record(through(event))
    assert type(back) is type(record)
    assert back.to_json() == record.to_json()  # byte for byte: key order, int vs float, big integers


@pytest.mark.parametrize("form", FORMATS)
def test_every_conformance_record_round_trips(form: str) -> None:
    records = conformance_records()
    assert len(records) > 400
    for record in records:
        _assert_round_trip(record, FORMATS[form])


@fewer_examples(3)  # each example goes through every format
@given(document=strategies.canonical_envelopes)
def test_generated_envelopes_round_trip(document: dict[str, Any]) -> None:
    for through in FORMATS.values():
        _assert_round_trip(E2AEnvelope.from_dict(document), through)


@fewer_examples(3)
@given(document=strategies.canonical_responses)
def test_generated_responses_round_trip(document: dict[str, Any]) -> None:
    for through in FORMATS.values():
        _assert_round_trip(E2AResponse.from_dict(document), through)


def test_envelope_attributes_follow_the_eventmesh_mapping() -> None:
    envelope = E2AEnvelope(
        method="tools/call",
        request_id="r-1",
        agent_id="planner",
        channel="web chat",
        timestamp="2026-01-02T03:04:05.123456+00:00",
        params={"_topic": "orders/eu", "n": 2**70},
    )
    event = ce.record_to_event(envelope, type_prefix=PREFIX)
    assert (event.id, event.source, event.type) == ("r-1", "/e2a/channels/web%20chat", f"{PREFIX}.tools.call.req")
    assert (event.subject, event.time, event.datacontenttype) == (
        "orders/eu",
        "2026-01-02T03:04:05.123456+00:00",
        "application/json",
    )
    assert event.extensions == {"a2amethod": "tools/call", "mcptype": "request", "targetagent": "planner"}
    assert event.data == envelope.to_json().encode()


def test_response_attributes_follow_the_eventmesh_mapping() -> None:
    frame = E2AResponse(
        response_id="f-3", request_id="r-1", sequence=3, method="chat.send", is_stream=True, response_kind="e2a.chunk"
    )
    event = ce.record_to_event(frame, type_prefix="io.e2a", source="urn:gateway:1")
    assert (event.id, event.source, event.type) == ("f-3", "urn:gateway:1", "io.e2a.chat.send.stream")
    assert event.extensions == {"a2amethod": "chat.send", "mcptype": "response", "collaborationid": "r-1", "seq": 3}
    single = E2AResponse(response_id="f-4", response_kind="acp.prompt_result")
    assert ce.record_to_event(single, type_prefix="io.e2a").type == "io.e2a.acp.prompt_result.resp"
    assert ce.record_to_event(single, type_prefix="io.e2a").source == ce.SOURCE_ROOT


def test_a_record_without_an_id_gets_a_fresh_one_and_still_round_trips() -> None:
    envelope = E2AEnvelope(method="chat.send")
    first, second = (ce.record_to_event(envelope, type_prefix="io.e2a") for _ in range(2))
    assert first.id and first.id != second.id
    assert ce.event_to_record(first).to_json() == envelope.to_json()


def test_a_sequence_beyond_32_bits_has_no_seq_attribute() -> None:
    frame = E2AResponse(response_id="f", sequence=2**40, response_kind="e2a.chunk")
    event = ce.record_to_event(frame, type_prefix="io.e2a")
    assert "seq" not in event.extensions
    back = ce.event_to_record(_through_protobuf(event))
    assert isinstance(back, E2AResponse) and back.sequence == 2**40


def test_structured_json_embeds_the_wire_json_unchanged() -> None:
    envelope = E2AEnvelope(method="m", request_id="r", params={"x": 1.0, "big": 2**64 + 1, "t": "héllo"})
    text = formats.to_structured_json(ce.record_to_event(envelope, type_prefix="io.e2a"))
    assert text.endswith(',"data":' + envelope.to_json() + "}")


def test_http_headers_are_percent_encoded() -> None:
    envelope = E2AEnvelope(method="m", request_id='a b"%é', channel="c")
    headers = formats.to_http_binary(ce.record_to_event(envelope, type_prefix="io.e2a")).headers
    assert headers["ce-id"] == "a%20b%22%25%C3%A9"
    assert headers["content-type"] == "application/json"


def _event(**changes: Any) -> dict[str, Any]:
    frame = E2AResponse(response_id="f-1", request_id="r-1", sequence=1, response_kind="e2a.chunk")
    document: dict[str, Any] = jsontext.loads(
        formats.to_structured_json(ce.record_to_event(frame, type_prefix="p")), "$"
    )
    for name, value in changes.items():
        if value is None:
            document.pop(name, None)
        else:
            document[name] = value
    return document


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"specversion": "0.3"}, "specversion"),
        ({"specversion": None}, "specversion"),
        ({"id": ""}, "id"),
        ({"source": None}, "source"),
        ({"type": 7}, "type"),
        ({"time": "yesterday"}, "time"),
        ({"seq": 2}, "seq"),
        ({"seq": "two"}, "seq"),
        ({"collaborationid": "other"}, "collaborationid"),
        ({"mcptype": "notification"}, "mcptype"),
        ({"a2amethod": "x"}, "a2amethod"),
        ({"datacontenttype": "text/plain", "data": "hi"}, "datacontenttype"),
        ({"datacontenttype": "text/plain"}, "data"),
        ({"data": None}, "data"),
        ({"data": [1]}, "data"),
        ({"data": {"response_kind": 5}}, "data.response_kind"),
        ({"Bad_Name": "x"}, "Bad_Name"),
        ({"ext": {"nested": 1}}, "ext"),
    ],
)
def test_bad_events_name_the_attribute(changes: dict[str, Any], field: str) -> None:
    text = jsontext.dumps(_event(**changes))
    with pytest.raises(E2AFieldError) as caught:
        ce.event_to_record(formats.from_structured_json(text))
    assert caught.value.field == field


def test_a_bad_event_in_a_batch_is_named_by_its_index() -> None:
    text = jsontext.dumps([_event(), _event(seq=9)])
    with pytest.raises(E2AFieldError) as caught:
        ce.events_to_records(formats.from_batch_json(text))
    assert caught.value.field == "[1].seq"


def test_protobuf_data_that_is_a_message_is_refused() -> None:
    message = formats.to_protobuf(ce.record_to_event(E2AEnvelope(method="m"), type_prefix="p"))
    message.proto_data.Pack(cloudevents_pb2.CloudEventBatch())
    with pytest.raises(E2AFieldError) as caught:
        formats.from_protobuf(message)
    assert caught.value.field == "proto_data"


@pytest.mark.parametrize(("seconds", "nanos"), [(2**62, 0), (0, -1), (-(2**40), 0)])
def test_a_timestamp_out_of_range_is_refused_naming_the_attribute(seconds: int, nanos: int) -> None:
    message = formats.to_protobuf(ce.record_to_event(E2AEnvelope(method="m"), type_prefix="p"))
    message.attributes["time"].ce_timestamp.seconds = seconds
    message.attributes["time"].ce_timestamp.nanos = nanos
    with pytest.raises(E2AFieldError) as caught:
        formats.from_protobuf(message)
    assert caught.value.field == "attributes.time"


@pytest.mark.parametrize("form", list(cloudevent_forms.Format))
def test_the_byte_forms_round_trip(form: cloudevent_forms.Format) -> None:
    records = list(conformance_records()[:5])
    if form is cloudevent_forms.Format.PROTOBUF:
        records = records[:1]
    events = ce.records_to_events(records, type_prefix="io.e2a")
    back = ce.events_to_records(cloudevent_forms.decode(cloudevent_forms.encode(events, form), form))
    assert [record.to_json() for record in back] == [record.to_json() for record in records]


def test_undecodable_protobuf_bytes_are_refused() -> None:
    with pytest.raises(E2AFieldError) as caught:
        cloudevent_forms.decode(b"\xff\xff\xff", cloudevent_forms.Format.PROTOBUF)
    assert caught.value.field == "$"


def test_json_data_travels_as_binary_data_and_text_data_is_read_too() -> None:
    envelope = E2AEnvelope(method="m", request_id="r", params={"t": "héllo"})
    message = formats.to_protobuf(ce.record_to_event(envelope, type_prefix="p"))
    assert message.WhichOneof("data") == "binary_data"
    message.text_data = message.binary_data.decode()  # as a peer that counts JSON as text writes it
    assert ce.event_to_record(formats.from_protobuf(message)).to_json() == envelope.to_json()


def test_a_peer_may_give_the_event_an_id_of_its_own() -> None:
    assert ce.event_to_record(formats.from_structured_json(jsontext.dumps(_event(id="broker-7")))).to_json() == (
        ce.event_to_record(formats.from_structured_json(jsontext.dumps(_event()))).to_json()
    )


def test_a_whitespace_id_is_not_the_event_id() -> None:
    event = ce.record_to_event(E2AEnvelope(method="m", request_id="\n\t"), type_prefix="p")
    assert event.id.strip() and event.id != "\n\t"


def test_a_pretty_printed_structured_event_is_read() -> None:
    envelope = E2AEnvelope(method="m", request_id="r")
    event = ce.record_to_event(envelope, type_prefix="p")
    text = json.dumps(json.loads(formats.to_structured_json(event)), indent=2)
    [read] = cloudevent_forms.decode(text.encode(), cloudevent_forms.Format.STRUCTURED)
    assert ce.event_to_record(read).to_json() == envelope.to_json()


def test_the_conversion_service_batch_is_the_spec_batch_on_the_wire_and_in_json() -> None:
    """e2a.v1.CloudEventBatch (the ConversionService's, as the Go and Java SDKs have no batch message)
    and io.cloudevents.v1.CloudEventBatch are the same bytes and the same JSON, both ways."""
    events = ce.records_to_events(conformance_records(), type_prefix=PREFIX)
    spec = formats.to_protobuf_batch(events)
    ours = conversion_service_pb2.CloudEventBatch(events=map(formats.to_protobuf, events))
    assert ours.SerializeToString(deterministic=True) == spec.SerializeToString(deterministic=True)
    assert cloudevents_pb2.CloudEventBatch.FromString(ours.SerializeToString()) == spec
    assert json_format.MessageToDict(ours) == json_format.MessageToDict(spec)
    assert formats.from_protobuf_batch(ours) == formats.from_protobuf_batch(spec)
