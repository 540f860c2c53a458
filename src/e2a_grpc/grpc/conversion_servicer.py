"""The ConversionService servicer: thin translations between request messages and ``e2a_grpc.conversion``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf.message import Message

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc import conversion, jsontext
from e2a_grpc.conversion.acp_fast_path import envelope_message_to_acp_json
from e2a_grpc.errors import E2AFieldError, E2AValueError
from e2a_grpc.grpc.status import unary
from e2a_grpc.model import E2AEnvelope, E2AResponse, IdentityOrigin
from e2a_grpc.model.fields import Kind
from e2a_grpc.model.proto import DECODERS
from e2a_grpc.protocols import cloudevents
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


class ConversionServicer(pb_grpc.ConversionServiceServicer):
    """e2a.v1.ConversionService."""

    def __init__(self, settings: ServerSettings | None = None) -> None:
        settings = settings or ServerSettings()
        #: The defaults of ToCloudEvents' type_prefix and source.
        self._type_prefix = settings.cloudevents_type_prefix
        self._source = settings.cloudevents_source

    @unary
    def ToACP(self, request: pb.ToACPRequest) -> pb.ToACPResponse:
        source = _source_of(request, "source")
        methods = request.session_prompt_methods
        options: dict[str, Any] = {
            "session_prompt_methods": tuple(methods) if methods else (),
            "wire": request.dialect == pb.ACP_DIALECT_WIRE,
        }
        try:
            if source == "envelope":
                # The hot path: straight from the message to JSON text.
                return pb.ToACPResponse(jsonrpc=envelope_message_to_acp_json(request.envelope, **options))
            record = _RECORD_READERS[source](getattr(request, source))
            result = conversion.to_acp(record, **options)
        except E2AFieldError as exc:
            raise exc.under(source) from None
        return _answer(pb.ToACPResponse, result, "jsonrpc")

    @unary
    def FromACP(self, request: pb.FromACPRequest) -> pb.FromACPResponse:
        records = conversion.from_acp(
            request.json,
            channel=request.channel if request.HasField("channel") else None,
            identity_origin=_origin(request.identity_origin),
        )
        return pb.FromACPResponse(
            records=[
                pb.FromACPRecord(envelope=record.to_proto())
                if isinstance(record, E2AEnvelope)
                else pb.FromACPRecord(response=record.to_proto())
                for record in records
            ]
        )

    @unary
    def ToA2AStream(self, request: pb.ToA2AStreamRequest) -> pb.ToA2AStreamResponse:
        source = _source_of(request, "source")
        try:
            record = _RESPONSE_READERS[source](getattr(request, source))
            result = conversion.to_a2a_stream(record, project_native_kinds=request.project_native_kinds)
        except E2AFieldError as exc:
            raise exc.under(source) from None
        return _answer(pb.ToA2AStreamResponse, result, "stream_response")

    @unary
    def FromA2A(self, request: pb.FromA2ARequest) -> pb.FromA2AResponse:
        envelope = conversion.from_a2a(
            request.json,
            channel=request.channel if request.HasField("channel") else None,
            identity_origin=_origin(request.identity_origin),
        )
        return pb.FromA2AResponse(envelope=envelope.to_proto())

    @unary
    def ToCloudEvents(self, request: pb.ToCloudEventsRequest) -> pb.ToCloudEventsResponse:
        records = []
        for index, item in enumerate(request.records):
            path = f"records[{index}]"
            try:
                source = _source_of(item, "record")
            except E2AFieldError as exc:
                raise exc.under(path) from None
            try:
                records.append(_RECORD_READERS[source](getattr(item, source)))
            except E2AFieldError as exc:
                raise exc.under(f"{path}.{source}") from None
        events = cloudevents.records_to_events(
            records,
            type_prefix=request.type_prefix if request.HasField("type_prefix") else self._type_prefix,
            source=request.source if request.HasField("source") else self._source,
        )
        if request.format == pb.CLOUD_EVENTS_FORMAT_JSON_BATCH:
            return pb.ToCloudEventsResponse(batch_json=cloudevents.to_batch_json(events))
        return pb.ToCloudEventsResponse(batch=cloudevents.to_protobuf_batch(events))

    @unary
    def FromCloudEvents(self, request: pb.FromCloudEventsRequest) -> pb.FromCloudEventsResponse:
        source = _source_of(request, "events")
        try:
            if source == "json" and not request.json.lstrip().startswith("["):
                records = [cloudevents.event_to_record(cloudevents.from_structured_json(request.json))]
            elif source == "json":
                records = cloudevents.events_to_records(cloudevents.from_batch_json(request.json))
            else:
                records = cloudevents.events_to_records(cloudevents.from_protobuf_batch(request.batch))
        except E2AFieldError as exc:
            # A batch's errors name the event: json[2].seq, batch.events[2].seq.
            raise exc.under("batch.events" if source == "batch" and exc.field.startswith("[") else source) from None
        return pb.FromCloudEventsResponse(records=[_cloudevents_record(record) for record in records])


def _cloudevents_record(record: E2AEnvelope | E2AResponse) -> pb.CloudEventsRecord:
    if isinstance(record, E2AEnvelope):
        return pb.CloudEventsRecord(envelope=record.to_proto())
    return pb.CloudEventsRecord(response=record.to_proto())
