"""A small synchronous Python client for the ConversionService (used by the CLI's ``--server``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import grpc
from google.rpc import error_details_pb2

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc.conversion import NotApplicable
from e2a_grpc.model import E2AEnvelope, E2AResponse
from e2a_grpc.protocols import cloudevent_formats, cloudevents
from e2a_grpc.rich_status import error_info_reason, status_details

Request = TypeVar("Request")
Reply = TypeVar("Reply")


class ServiceError(Exception):
    """A call failed; ``code`` is the gRPC status code, ``violations`` the BadRequest field paths,
    ``reason`` the ErrorInfo reason when the server sent one (e.g. ``AGENT_UNAVAILABLE``)."""

    def __init__(
        self, code: grpc.StatusCode, message: str, violations: list[tuple[str, str]], reason: str | None = None
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.violations = violations
        self.reason = reason

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> ServiceError:
        violations: list[tuple[str, str]] = []
        for detail in status_details(error):
            bad_request = error_details_pb2.BadRequest()
            if detail.Unpack(bad_request):
                violations.extend((v.field, v.description) for v in bad_request.field_violations)
        return cls(error.code(), error.details() or "", violations, error_info_reason(error))


def _channel(address: str, tls: bool, tls_ca: Path | None, max_message_bytes: int) -> grpc.Channel:
    options = [("grpc.max_receive_message_length", max_message_bytes)]
    if tls or tls_ca is not None:
        # No CA file: gRPC's bundled / system root certificates.
        root_certificates = tls_ca.read_bytes() if tls_ca is not None else None
        return grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates), options=options)
    return grpc.insecure_channel(address, options=options)


class ConversionClient:
    """Calls e2a.v1.ConversionService; results come back as the same types the offline functions give."""

    def __init__(self, channel: grpc.Channel, token: str | None = None, timeout: float = 30.0) -> None:
        self._channel = channel
        self._stub = pb_grpc.ConversionServiceStub(channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout = timeout

    @classmethod
    def connect(
        cls,
        address: str,
        *,
        token: str | None = None,
        tls: bool = False,
        tls_ca: Path | None = None,
        max_message_bytes: int = 64 * 1024 * 1024,
    ) -> ConversionClient:
        """A client of ``address`` (``host:port``); TLS when ``tls`` or a ``tls_ca`` is given."""
        return cls(_channel(address, tls, tls_ca, max_message_bytes), token=token)

    @property
    def channel(self) -> grpc.Channel:
        return self._channel

    def __enter__(self) -> ConversionClient:
        return self

    def __exit__(self, *exc: object | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: grpc.UnaryUnaryMultiCallable[Request, Reply], request: Request) -> Reply:
        try:
            return method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise ServiceError.from_rpc_error(error) from None

    def to_acp_json(
        self,
        e2a_json: str,
        *,
        is_response: bool = False,
        session_prompt_methods: tuple[str, ...] = (),
        wire: bool = False,
    ) -> str | NotApplicable:
        """ACP JSON-RPC text for the E2A wire JSON of an envelope (or of a response)."""
        request = pb.ToACPRequest(
            session_prompt_methods=session_prompt_methods,
            dialect=pb.ACP_DIALECT_WIRE if wire else pb.ACP_DIALECT_UNSPECIFIED,
        )
        if is_response:
            request.response_json = e2a_json
        else:
            request.envelope_json = e2a_json
        return _text_or_not_applicable(self._call(self._stub.ToACP, request), "jsonrpc")

    def from_acp(self, acp_json: str, *, channel: str | None = None) -> list[E2AEnvelope | E2AResponse]:
        reply = self._call(self._stub.FromACP, pb.FromACPRequest(json=acp_json, channel=channel))
        return _records_of(reply.records)

    def to_a2a_stream_json(self, response_json: str, *, project_native_kinds: bool = False) -> str | NotApplicable:
        request = pb.ToA2AStreamRequest(response_json=response_json, project_native_kinds=project_native_kinds)
        return _text_or_not_applicable(self._call(self._stub.ToA2AStream, request), "stream_response")

    def from_a2a(self, a2a_json: str, *, channel: str | None = None) -> E2AEnvelope:
        reply = self._call(self._stub.FromA2A, pb.FromA2ARequest(json=a2a_json, channel=channel))
        return E2AEnvelope.from_proto(reply.envelope)

    def to_cloudevents(
        self,
        records: Sequence[E2AEnvelope | E2AResponse],
        *,
        type_prefix: str | None = None,
        source: str | None = None,
    ) -> list[cloudevents.CloudEvent]:
        """One event per record (ToCloudEvents); unset ``type_prefix`` / ``source``: the server's defaults."""
        request = pb.ToCloudEventsRequest(
            records=[
                pb.CloudEventsRecordSource(envelope=record.to_proto())
                if isinstance(record, E2AEnvelope)
                else pb.CloudEventsRecordSource(response=record.to_proto())
                for record in records
            ],
            type_prefix=type_prefix,
            source=source,
        )
        return cloudevent_formats.from_protobuf_batch(self._call(self._stub.ToCloudEvents, request).batch)

    def from_cloudevents(self, events: Sequence[cloudevents.CloudEvent]) -> list[E2AEnvelope | E2AResponse]:
        """The record each event carries (FromCloudEvents), in order."""
        request = pb.FromCloudEventsRequest(
            batch=pb.CloudEventBatch(events=map(cloudevent_formats.to_protobuf, events))
        )
        return _records_of(self._call(self._stub.FromCloudEvents, request).records)


def _records_of(messages: Iterable[pb.FromACPRecord | pb.CloudEventsRecord]) -> list[E2AEnvelope | E2AResponse]:
    """The records of a reply's messages whose ``record`` oneof holds an ``envelope`` or a ``response``."""
    return [
        E2AEnvelope.from_proto(message.envelope)
        if message.WhichOneof("record") == "envelope"
        else E2AResponse.from_proto(message.response)
        for message in messages
    ]


def _text_or_not_applicable(reply: pb.ToACPResponse | pb.ToA2AStreamResponse, field: str) -> str | NotApplicable:
    if reply.WhichOneof("result") == "not_applicable":
        return NotApplicable(reply.not_applicable.reason)
    return str(getattr(reply, field))
