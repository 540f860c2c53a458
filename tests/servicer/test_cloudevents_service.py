"""ToCloudEvents and FromCloudEvents in process: batches both ways, both formats, the server's
defaults, and bad events refused with INVALID_ARGUMENT naming the event and the attribute."""

from __future__ import annotations

import grpc
import pytest

from e2a.cloudevents.v1 import cloudevents_pb2
from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc import jsontext
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.protocols import cloudevent_formats as formats
from e2a_grpc.protocols import cloudevents as ce
from tests.support.cloudevent_records import conformance_records
from tests.support.status import field_violations

in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def stub(channel: grpc.aio.Channel) -> pb_grpc.ConversionServiceAsyncStub:
    return pb_grpc.ConversionServiceStub(channel)


def _source(record: E2AEnvelope | E2AResponse) -> pb.CloudEventsRecordSource:
    if isinstance(record, E2AEnvelope):
        return pb.CloudEventsRecordSource(envelope=record.to_proto())
    return pb.CloudEventsRecordSource(response_json=record.to_json())


@in_module_loop
async def test_a_batch_of_records_round_trips_through_both_rpcs(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    records = conformance_records()[:60]
    reply = await stub.ToCloudEvents(pb.ToCloudEventsRequest(records=[_source(r) for r in records]))
    assert len(reply.batch.events) == len(records)
    first = reply.batch.events[0]
    assert first.spec_version == "1.0" and first.type.startswith("io.e2a.")  # the server's default prefix
    back = await stub.FromCloudEvents(pb.FromCloudEventsRequest(batch=reply.batch))
    texts = [
        (
            E2AEnvelope.from_proto(r.envelope)
            if r.WhichOneof("record") == "envelope"
            else E2AResponse.from_proto(r.response)
        ).to_json()
        for r in back.records
    ]
    assert texts == [record.to_json() for record in records]


@in_module_loop
async def test_json_batches_and_the_request_options(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    envelope = E2AEnvelope(method="tools/call", request_id="r-1", channel="web")
    reply = await stub.ToCloudEvents(
        pb.ToCloudEventsRequest(
            records=[_source(envelope)],
            type_prefix="org.apache.eventmesh.a2a",
            source="urn:gw",
            format=pb.CLOUD_EVENTS_FORMAT_JSON_BATCH,
        )
    )
    [event] = jsontext.loads(reply.batch_json, "$")
    assert (event["type"], event["source"], event["id"]) == ("org.apache.eventmesh.a2a.tools.call.req", "urn:gw", "r-1")
    back = await stub.FromCloudEvents(pb.FromCloudEventsRequest(json=reply.batch_json))
    assert E2AEnvelope.from_proto(back.records[0].envelope).to_json() == envelope.to_json()


@in_module_loop
async def test_a_bad_event_gets_invalid_argument_naming_the_attribute(
    stub: pb_grpc.ConversionServiceAsyncStub,
) -> None:
    frames = [
        E2AResponse(response_id=f"f-{n}", request_id="r", sequence=n, response_kind="e2a.chunk") for n in range(2)
    ]
    batch = pb.CloudEventBatch(events=map(formats.to_protobuf, ce.records_to_events(frames, type_prefix="p")))
    batch.events[1].attributes["seq"].ce_integer = 7
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.FromCloudEvents(pb.FromCloudEventsRequest(batch=batch))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in field_violations(caught.value)] == ["batch.events[1].seq"]

    batch.events[1].spec_version = "0.3"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.FromCloudEvents(pb.FromCloudEventsRequest(batch=batch))
    assert [field for field, _ in field_violations(caught.value)] == ["batch.events[1].specversion"]

    text = formats.to_structured_json(ce.records_to_events(frames[:1], type_prefix="p")[0]).replace(
        '"seq":0', '"seq":"x"'
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.FromCloudEvents(pb.FromCloudEventsRequest(json=text))
    assert [field for field, _ in field_violations(caught.value)] == ["json.seq"]


@in_module_loop
async def test_bad_requests_name_the_field(stub: pb_grpc.ConversionServiceAsyncStub) -> None:
    bad_records = [
        (pb.ToCloudEventsRequest(records=[pb.CloudEventsRecordSource()]), "records[0].record"),
        (
            pb.ToCloudEventsRequest(
                records=[
                    _source(E2AEnvelope()),
                    pb.CloudEventsRecordSource(envelope_json='{"expected_output_modes": [1]}'),
                ]
            ),
            "records[1].envelope_json.expected_output_modes[0]",
        ),
        (pb.ToCloudEventsRequest(records=[_source(E2AEnvelope())], type_prefix=""), "type_prefix"),
    ]
    for to_request, field in bad_records:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ToCloudEvents(to_request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, field
        assert [name for name, _ in field_violations(caught.value)] == [field]
    unsigned = cloudevents_pb2.CloudEvent(id="x", source="/s", type="t")
    bad_events = [
        (pb.FromCloudEventsRequest(), "events"),
        (pb.FromCloudEventsRequest(json="{"), "json"),
        (
            pb.FromCloudEventsRequest(batch=pb.CloudEventBatch(events=[unsigned])),
            "batch.events[0].specversion",
        ),
    ]
    for from_request, field in bad_events:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.FromCloudEvents(from_request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, field
        assert [name for name, _ in field_violations(caught.value)] == [field]
