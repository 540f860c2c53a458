"""The CodecService servicer: E2A wire JSON to protobuf messages and back, over the model's codec.

Field errors name the bad field under the request field that carried it (``json.params``,
``envelope_json.params``): unary calls fail with INVALID_ARGUMENT, a Transcode record gets an
error reply and its stream goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import grpc

from e2a.v1 import codec_service_pb2 as pb
from e2a.v1 import codec_service_pb2_grpc as pb_grpc
from e2a.v1 import e2a_pb2
from e2a_grpc.errors import E2AFieldError, E2AValueError
from e2a_grpc.grpc.status import unary
from e2a_grpc.grpc.streams import reply_to_each
from e2a_grpc.model import E2AEnvelope, E2AResponse

Converted = TypeVar("Converted")


def envelope_from_json(text: str) -> e2a_pb2.E2AEnvelope:
    return E2AEnvelope.from_json(text).to_proto()


def envelope_to_json(message: e2a_pb2.E2AEnvelope) -> str:
    return E2AEnvelope.from_proto(message).to_json()


def response_from_json(text: str) -> e2a_pb2.E2AResponse:
    return E2AResponse.from_json(text).to_proto()


def response_to_json(message: e2a_pb2.E2AResponse) -> str:
    return E2AResponse.from_proto(message).to_json()


def _under(field: str, convert: Callable[[Any], Converted], value: Any) -> Converted:
    """``convert(value)``; a field error names its path under the request field ``field``."""
    try:
        return convert(value)
    except E2AFieldError as exc:
        raise exc.under(field) from None


#: TranscodeRequest ``record`` case -> (TranscodeResponse ``result`` case, conversion).
_TRANSCODINGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "envelope_json": ("envelope", envelope_from_json),
    "response_json": ("response", response_from_json),
    "envelope": ("envelope_json", envelope_to_json),
    "response": ("response_json", response_to_json),
}
_RECORD_CASES = ", ".join(field.name for field in pb.TranscodeRequest.DESCRIPTOR.oneofs_by_name["record"].fields)


def transcode(index: int, request: pb.TranscodeRequest) -> pb.TranscodeResponse:
    """The reply to the ``index``-th record of a Transcode stream: its conversion, or its field error."""
    case = request.WhichOneof("record")
    try:
        if case is None:
            raise E2AValueError("record", f"set one of {_RECORD_CASES}")
        result, convert = _TRANSCODINGS[case]
        return pb.TranscodeResponse(index=index, **{result: _under(case, convert, getattr(request, case))})
    except E2AFieldError as exc:
        violation = pb.TranscodeError.FieldViolation(field=exc.field, description=exc.problem)
        return pb.TranscodeResponse(index=index, error=pb.TranscodeError(field_violations=[violation]))


class CodecServicer(pb_grpc.CodecServiceServicer):
    """e2a.v1.CodecService."""

    @unary
    def EnvelopeFromJson(self, request: pb.EnvelopeFromJsonRequest) -> pb.EnvelopeFromJsonResponse:
        return pb.EnvelopeFromJsonResponse(envelope=_under("json", envelope_from_json, request.json))

    @unary
    def EnvelopeToJson(self, request: pb.EnvelopeToJsonRequest) -> pb.EnvelopeToJsonResponse:
        return pb.EnvelopeToJsonResponse(json=_under("envelope", envelope_to_json, request.envelope))

    @unary
    def ResponseFromJson(self, request: pb.ResponseFromJsonRequest) -> pb.ResponseFromJsonResponse:
        return pb.ResponseFromJsonResponse(response=_under("json", response_from_json, request.json))

    @unary
    def ResponseToJson(self, request: pb.ResponseToJsonRequest) -> pb.ResponseToJsonResponse:
        return pb.ResponseToJsonResponse(json=_under("response", response_to_json, request.response))

    async def Transcode(
        self,
        request_iterator: AsyncIterator[pb.TranscodeRequest],
        context: grpc.aio.ServicerContext[pb.TranscodeRequest, pb.TranscodeResponse],
    ) -> AsyncIterator[pb.TranscodeResponse]:
        # One record at a time (no read-ahead): a client that does not read holds no more than the
        # transport's windows in flight.
        async for reply in reply_to_each(
            request_iterator, context, transcode, items_of=_one, window=None, method="CodecService.Transcode"
        ):
            yield reply


def _one(_request: pb.TranscodeRequest) -> int:
    return 1
