"""The ConversionService servicer: thin translations between request messages and ``e2a_grpc.conversion``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import conversion, jsontext
from e2a_grpc.errors import E2AFieldError, E2AValueError
from e2a_grpc.grpc.status import unary
from e2a_grpc.grpc.streams import reply_to_each
from e2a_grpc.model import E2AEnvelope, E2AResponse, IdentityOrigin
from e2a_grpc.model.fields import Kind
from e2a_grpc.model.proto import DECODERS
from e2a_grpc.protocols import cloudevent_formats, cloudevents
from e2a_grpc.settings import ServerSettings


def _origin(value: int) -> IdentityOrigin:
    """A request's ``identity_origin``: unset (UNSPECIFIED) reads as ``user``, as in an envelope."""
    origin: IdentityOrigin = DECODERS[Kind.ORIGIN](value or e2a_pb2.IDENTITY_ORIGIN_USER, "identity_origin")
    return origin


def _source_of(request: Message, field: str) -> str:
    source = request.WhichOneof(field)
    if source is None:
        names = ", ".join(f.name for f in request.DESCRIPTOR.oneofs_by_name[field].fields)
        raise E2AValueError(field, f"set one of {names}")
    return str(source)


Reply = TypeVar("Reply", bound=Message)


def _answer(reply_type: Callable[..., Reply], result: dict[str, Any] | conversion.NotApplicable, field: str) -> Reply:
    if isinstance(result, conversion.NotApplicable):
        return reply_type(not_applicable=pb.NotApplicable(reason=result.reason))
    # Every value in a result was read from protobuf JSON text or JSON text by our parsers.
    return reply_type(**{field: jsontext.dumps(result, parsed=True)})


# How each oneof case of a request's ``source`` is read (ToA2AStream's cases are responses only).
_RESPONSE_READERS: dict[str, Callable[[Any], E2AResponse]] = {
    "response": E2AResponse.from_proto,
    "response_json": E2AResponse.from_json,
}
_RECORD_READERS: dict[str, Callable[[Any], E2AEnvelope | E2AResponse]] = {
    "envelope": E2AEnvelope.from_proto,
    "envelope_json": E2AEnvelope.from_json,
    **_RESPONSE_READERS,
}


def to_acp(request: pb.ToACPRequest) -> pb.ToACPResponse:
    """The ToACP conversion; an ``E2AFieldError`` names the bad field under the request's fields."""
    source = _source_of(request, "source")
    try:
        record = _RECORD_READERS[source](getattr(request, source))
        result = conversion.to_acp(
            record,
            session_prompt_methods=request.session_prompt_methods,
            wire=request.dialect == pb.ACP_DIALECT_WIRE,
        )
    except E2AFieldError as exc:
        raise exc.under(source) from None
    return _answer(pb.ToACPResponse, result, "jsonrpc")


def from_acp(request: pb.FromACPRequest) -> pb.FromACPResponse:
    """The FromACP conversion."""
    records = conversion.from_acp(
        request.json,
        channel=request.channel if request.HasField("channel") else None,
        identity_origin=_origin(request.identity_origin),
    )
    return pb.FromACPResponse(records=[_record_message(pb.FromACPRecord, record) for record in records])


RecordMessage = TypeVar("RecordMessage", pb.FromACPRecord, pb.CloudEventsRecord)


def _record_message(message_type: type[RecordMessage], record: E2AEnvelope | E2AResponse) -> RecordMessage:
    """A message whose ``record`` oneof holds an ``envelope`` or a ``response``."""
    if isinstance(record, E2AEnvelope):
        return message_type(envelope=record.to_proto())
    return message_type(response=record.to_proto())


def to_a2a_stream(request: pb.ToA2AStreamRequest) -> pb.ToA2AStreamResponse:
    """The ToA2AStream conversion."""
    source = _source_of(request, "source")
    try:
        record = _RESPONSE_READERS[source](getattr(request, source))
        result = conversion.to_a2a_stream(record, project_native_kinds=request.project_native_kinds)
    except E2AFieldError as exc:
        raise exc.under(source) from None
    return _answer(pb.ToA2AStreamResponse, result, "stream_response")


def from_a2a(request: pb.FromA2ARequest) -> pb.FromA2AResponse:
    """The FromA2A conversion."""
    envelope = conversion.from_a2a(
        request.json,
        channel=request.channel if request.HasField("channel") else None,
        identity_origin=_origin(request.identity_origin),
    )
    return pb.FromA2AResponse(envelope=envelope.to_proto())


def to_cloud_events(
    request: pb.ToCloudEventsRequest, *, type_prefix: str, source: str | None
) -> pb.ToCloudEventsResponse:
    """The ToCloudEvents conversion; ``type_prefix`` and ``source`` are the defaults of the request's own."""
    records = []
    for index, item in enumerate(request.records):
        path = f"records[{index}]"
        try:
            case = _source_of(item, "record")
        except E2AFieldError as exc:
            raise exc.under(path) from None
        try:
            records.append(_RECORD_READERS[case](getattr(item, case)))
        except E2AFieldError as exc:
            raise exc.under(f"{path}.{case}") from None
    events = cloudevents.records_to_events(
        records,
        type_prefix=request.type_prefix if request.HasField("type_prefix") else type_prefix,
        source=request.source if request.HasField("source") else source,
    )
    if request.format == pb.CLOUD_EVENTS_FORMAT_JSON_BATCH:
        return pb.ToCloudEventsResponse(batch_json=cloudevent_formats.to_batch_json(events))
    return pb.ToCloudEventsResponse(batch=pb.CloudEventBatch(events=map(cloudevent_formats.to_protobuf, events)))


def from_cloud_events(request: pb.FromCloudEventsRequest) -> pb.FromCloudEventsResponse:
    """The FromCloudEvents conversion."""
    source = _source_of(request, "events")
    try:
        if source == "json" and not request.json.lstrip().startswith("["):
            records = [cloudevents.event_to_record(cloudevent_formats.from_structured_json(request.json))]
        elif source == "json":
            records = cloudevents.events_to_records(cloudevent_formats.from_batch_json(request.json))
        else:
            records = cloudevents.events_to_records(cloudevent_formats.from_protobuf_batch(request.batch))
    except E2AFieldError as exc:
        # A batch's errors name the event: json[2].seq, batch.events[2].seq.
        raise exc.under("batch.events" if source == "batch" and exc.field.startswith("[") else source) from None
    return pb.FromCloudEventsResponse(records=[_record_message(pb.CloudEventsRecord, record) for record in records])


#: ConvertRequest ``conversion`` case (also the ConvertResult ``result`` case) -> conversion.
_CONVERSIONS: dict[str, Callable[[Any], Message]] = {
    "to_acp": to_acp,
    "from_acp": from_acp,
    "to_a2a_stream": to_a2a_stream,
    "from_a2a": from_a2a,
}


def convert_one(index: int, request: pb.ConvertRequest) -> pb.ConvertResult:
    """The result of the ``index``-th conversion of a ConvertStream: what the unary RPC answers, or
    the field error it fails with, under the conversion's case (``to_acp.envelope_json.params``)."""
    try:
        case = _source_of(request, "conversion")
        try:
            result: dict[str, Any] = {case: _CONVERSIONS[case](getattr(request, case))}
        except E2AFieldError as exc:
            raise exc.under(case) from None
        return pb.ConvertResult(index=index, **result)
    except E2AFieldError as exc:
        violation = pb.ConvertError.FieldViolation(field=exc.field, description=exc.problem)
        return pb.ConvertResult(index=index, error=pb.ConvertError(field_violations=[violation]))


def convert_batch(first_index: int, request: pb.ConvertStreamRequest) -> pb.ConvertStreamResponse:
    """The reply to one batch of a ConvertStream whose first conversion is the stream's ``first_index``-th."""
    return pb.ConvertStreamResponse(
        results=[convert_one(first_index + offset, one) for offset, one in enumerate(request.conversions)]
    )


class ConversionServicer(pb_grpc.ConversionServiceServicer):
    """e2a.v1.ConversionService."""

    def __init__(self, settings: ServerSettings | None = None) -> None:
        settings = settings or ServerSettings()
        #: The defaults of ToCloudEvents' type_prefix and source.
        self._type_prefix = settings.cloudevents_type_prefix
        self._source = settings.cloudevents_source
        #: ConvertStream: request messages read ahead of the reply being written.
        self._convert_stream_window = settings.convert_stream_window

    @unary
    def ToACP(self, request: pb.ToACPRequest) -> pb.ToACPResponse:
        return to_acp(request)

    @unary
    def FromACP(self, request: pb.FromACPRequest) -> pb.FromACPResponse:
        return from_acp(request)

    @unary
    def ToA2AStream(self, request: pb.ToA2AStreamRequest) -> pb.ToA2AStreamResponse:
        return to_a2a_stream(request)

    @unary
    def FromA2A(self, request: pb.FromA2ARequest) -> pb.FromA2AResponse:
        return from_a2a(request)

    @unary
    def ToCloudEvents(self, request: pb.ToCloudEventsRequest) -> pb.ToCloudEventsResponse:
        return to_cloud_events(request, type_prefix=self._type_prefix, source=self._source)

    @unary
    def FromCloudEvents(self, request: pb.FromCloudEventsRequest) -> pb.FromCloudEventsResponse:
        return from_cloud_events(request)

    async def ConvertStream(
        self,
        request_iterator: AsyncIterator[pb.ConvertStreamRequest],
        context: grpc.aio.ServicerContext[pb.ConvertStreamRequest, pb.ConvertStreamResponse],
    ) -> AsyncIterator[pb.ConvertStreamResponse]:
        async for reply in reply_to_each(
            request_iterator,
            context,
            convert_batch,
            items_of=_conversions_of,
            window=self._convert_stream_window,
            method="ConversionService.ConvertStream",
        ):
            yield reply


def _conversions_of(request: pb.ConvertStreamRequest) -> int:
    return len(request.conversions)
