"""Building the E2AResponse frames of one Chat stream, with the invariants of spec section 12.

One ``FrameBuilder`` per request: it echoes the request's correlation fields (12.4) on every frame,
numbers frames 0, 1, 2, ..., gives each a fresh UUID and an RFC 3339 UTC timestamp, and makes the
final frame ``succeeded`` (e2a.complete), ``failed`` (e2a.error), or ``in_progress``
(e2a.input_required: the turn waits for the client, its task goes on in a later request).

This is the per-frame hot path of the service, so a frame is built as the bytes of its serialized
``ChatResponse``, not as a message: the fields every frame of the request carries are serialized once
per stream, and a frame is those bytes with its own fields (response id, sequence, kind, status,
timestamp, body) encoded in between, in field-number order as protobuf serializes them. The bytes are
exactly what ``ChatResponse.SerializeToString()`` gives for the same frame (tests/unit/test_frames.py);
gRPC sends them as they are. A text delta's frame (most frames) and the timestamps are made in C
(``_frame_bytes``), from the pieces cut here.

The agent's ids (``task_id``, ``context_id``): a request that sets one gets it echoed on every
frame, whatever the agent calls its task. A request that leaves one unset lets the agent
name it: from the first frame after the backend reported the agent's id (``AgentIds``), every frame
carries that id, and the first id reported is kept to the end of the stream. So the frames of an
A2A agent's turn name the agent's task, and a projection of them to A2A (``ToA2AStream``) speaks
of that task, not of the request id. ``StreamChecker`` accepts exactly this.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import replace
from typing import Any

from e2a.v1 import agent_service_pb2, e2a_pb2
from e2a_grpc import jsontext
from e2a_grpc.chat._frame_bytes import text_chunk, utc_timestamp
from e2a_grpc.chat.events import AgentIds, BackendInfo, Complete, Delta, InputRequired, Passthrough
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse, ErrorCode, ResponseKind, ResponseStatus
from e2a_grpc.model.constants import E2A_PROTOCOL_VERSION
from e2a_grpc.model.proto import to_proto_jsonrpc_id

frame_log = logging.getLogger("e2a_grpc.frames")

#: ``FrameBuilder.final_code`` of a turn that ended waiting for the client.
INPUT_REQUIRED_CODE = "input_required"
#: ``metadata`` key set on every frame when the server assigned the request_id.
REQUEST_ID_ASSIGNED_KEY = "e2a_request_id_assigned_by_server"
_ASSIGNED_METADATA = json.dumps({REQUEST_ID_ASSIGNED_KEY: True})


class UtcClock:
    """RFC 3339 UTC timestamps with microseconds, as ASCII bytes (what a frame carries), always
    ``TIMESTAMP_BYTES`` long: "YYYY-MM-DDTHH:MM:SS.ffffff+00:00" (made in C, ``_frame_bytes``)."""

    now = staticmethod(utc_timestamp)


class FrameBuilder:
    """The frames of one stream, in order, each as its serialized ``ChatResponse``."""

    def __init__(
        self, envelope: E2AEnvelope, backend: BackendInfo, clock: UtcClock, *, log_frames: bool = False
    ) -> None:
        assigned = envelope.request_id is None
        self.request_id = str(uuid.uuid4()) if assigned else envelope.request_id
        self.backend_name = backend.name
        self.sequence = 0
        self.finished = False
        #: The response_kind of the last frame built.
        self.last_kind: str = ""
        #: How the stream ended, once its final frame is built: "ok", or the e2a.error code.
        self.final_code: str | None = None
        self._log = log_frames
        self._clock = clock
        #: What ``last_record`` needs of the last frame: its text delta (the fast path), or its body,
        #: kind, status and finality; and its timestamp.
        self._last: Delta | tuple[Any, str, str, bool] | None = None
        self._last_timestamp = b""
        #: The record of the fields every frame shares (``last_record``), made when first asked for.
        self._shared_record: E2AResponse | None = None
        # Unique per frame: a random UUIDv4 prefix per stream, the sequence number in the last group
        # (the 12 hex digits of a UUID's last group), so a frame costs no random number.
        self._id_prefix = str(uuid.uuid4())[:24].encode()
        provenance = e2a_pb2.E2AProvenance(
            source_protocol=backend.source_protocol,
            converter=f"e2a_grpc.chat:{backend.name}",
            details=jsontext.dumps(backend.details, "provenance.details") if backend.details else "",
        )
        # Fields every frame of this request carries (spec 12.4): serialized once, cut into _Segments.
        shared = e2a_pb2.E2AResponse(
            protocol_version=envelope.protocol_version or E2A_PROTOCOL_VERSION,
            request_id=self.request_id,
            provenance=provenance,
            correlation_id=envelope.correlation_id,
            task_id=envelope.task_id,
            context_id=envelope.context_id,
            session_id=envelope.session_id,
            message_id=envelope.message_id,
            is_stream=envelope.is_stream,
            identity_origin=e2a_pb2.IDENTITY_ORIGIN_AGENT,
            channel=envelope.channel,
            user_id=envelope.user_id,
            agent_ref=jsontext.dumps(envelope.agent_ref, "agent_ref") if envelope.agent_ref is not None else "",
            source_agent_id=envelope.source_agent_id,
            method=envelope.method,
            metadata=_ASSIGNED_METADATA if assigned else "",
        )
        if envelope.jsonrpc_id is not None:
            shared.jsonrpc_id.CopyFrom(to_proto_jsonrpc_id(envelope.jsonrpc_id))
        self._template = shared
        self._chunk_kind = _kind_fields(ResponseKind.E2A_CHUNK, ResponseStatus.IN_PROGRESS)
        self._cut_shared_fields()

    def adopt_agent_ids(self, ids: AgentIds) -> None:
        """Carry the agent's task / context id on the next frames, where the request set none (see above)."""
        response = self._template
        adopted = False
        for name, value in (("task_id", ids.task_id), ("context_id", ids.context_id)):
            if value and not response.HasField(name):
                setattr(response, name, value)
                adopted = True
        if adopted:
            self._cut_shared_fields()
            self._shared_record = None

    def _cut_shared_fields(self) -> None:
        """Serialize the fields every frame shares, cut where a frame's own fields go in (``_segments``),
        with the constant parts around them joined ahead of time: a frame joins as few pieces as it can."""
        before_response_id, before_sequence, before_body, after_body = _segments(self._template)
        # Every response id is the stream's prefix and 12 hex digits: 36 bytes.
        self._before_id = b"".join(
            (before_response_id, _RESPONSE_ID_TAG, _SMALL_VARINTS[_RESPONSE_ID_BYTES], self._id_prefix)
        )
        self._before_sequence = before_sequence
        self._before_body = before_body
        self._after_body = after_body
        # A text delta's frame, assembled by ``_frame_bytes.text_chunk`` from these pieces (in the order
        # its ``enum`` names them).
        self._text_layout = (
            _CHAT_RESPONSE_TAG,
            self._before_id,
            before_sequence,
            _SEQUENCE_TAG,
            self._chunk_kind + _TIMESTAMP_TAG + _SMALL_VARINTS[TIMESTAMP_BYTES],
            before_body + _BODY_TAG,
            _TEXT_DELTA_PREFIX,
            b"}",
            after_body,
            _RESPONSE_ID_HEX_DIGITS,
        )

    def _frame(
        self, body: bytes, body_value: Any, kind_fields: bytes, kind: str, status: str, final: bool = False
    ) -> bytes:
        """The serialized ``ChatResponse`` of the next frame; ``body``: its body serialized, ``body_value``
        what it was serialized from; ``kind_fields``: its is_final, status and response_kind fields,
        serialized."""
        if self.finished:
            raise RuntimeError("a stream has exactly one final frame, and it is the last")
        sequence = self.sequence
        timestamp = self._clock.now()
        body_size = len(body)
        response = b"".join(
            (
                self._before_id,
                b"%012x" % sequence,
                self._before_sequence,
                _sequence_field(sequence),
                kind_fields,
                _TIMESTAMP_TAG,
                _SMALL_VARINTS[len(timestamp)],
                timestamp,
                self._before_body,
                (_BODY_TAG + _varint(body_size)) if body else b"",  # proto3 leaves an empty string out
                body,
                self._after_body,
            )
        )
        self.sequence = sequence + 1
        self.finished = final
        self.last_kind = kind
        self._last = (body_value, kind, status, final)
        self._last_timestamp = timestamp
        if self._log:
            self._log_frame(sequence, final, kind, timestamp)
        size = len(response)
        return b"".join((_CHAT_RESPONSE_TAG, _SMALL_VARINTS[size] if size < 0x80 else _varint(size), response))

    def _log_frame(self, sequence: int, final: bool, kind: str, timestamp: bytes) -> None:
        frame_log.info(
            json.dumps(
                {
                    "request_id": self.request_id,
                    "response_id": (self._id_prefix + b"%012x" % sequence).decode(),
                    "sequence": sequence,
                    "is_final": final,
                    "response_kind": kind,
                    "timestamp": timestamp.decode(),
                }
            )
        )

    def delta(self, event: Delta) -> bytes:
        if event.delta_kind is _TEXT and event.mime_type is None and not self.finished:
            sequence = self.sequence
            timestamp = self._clock.now()
            # Most frames of most streams; None for what only the general path below writes or refuses.
            frame = text_chunk(self._text_layout, sequence, timestamp, event.delta)
            if frame is not None:
                self.sequence = sequence + 1
                self.last_kind = _CHUNK
                self._last = event
                self._last_timestamp = timestamp
                if self._log:
                    self._log_frame(sequence, False, _CHUNK, timestamp)
                return frame
        fields: dict[str, Any] = {"delta_kind": event.delta_kind, "delta": event.delta}
        if event.mime_type is not None:
            fields["mime_type"] = event.mime_type
        return self._frame(_json_bytes(fields), fields, self._chunk_kind, _CHUNK, _IN_PROGRESS)

    def passthrough(self, event: Passthrough) -> bytes:
        body = _json_bytes(event.body) if event.body else b""
        kind = event.response_kind
        return self._frame(body, event.body, _kind_fields(kind, ResponseStatus.IN_PROGRESS), kind, _IN_PROGRESS)

    def for_event(self, event: Delta | Complete | InputRequired | Passthrough) -> bytes:
        """The serialized frame of one backend event (``AgentIds`` make no frame: see ``adopt_agent_ids``)."""
        if isinstance(event, Delta):
            return self.delta(event)
        if isinstance(event, Complete):
            return self.complete(event.result)
        if isinstance(event, InputRequired):
            return self.input_required(event)
        if isinstance(event, Passthrough):
            return self.passthrough(event)
        raise TypeError(f"unknown backend event {event!r}")

    def complete(self, result: dict[str, Any]) -> bytes:
        self.final_code = "ok"
        body = {"result": result}
        kind, status = ResponseKind.E2A_COMPLETE, ResponseStatus.SUCCEEDED
        return self._frame(_json_bytes(body), body, _kind_fields(kind, status, final=True), kind, status, final=True)

    def input_required(self, event: InputRequired) -> bytes:
        """The final frame of a turn that waits for the client: ``is_final`` but ``in_progress``, as the
        task goes on in a later request (docs/wire-json.md, "Waiting turns")."""
        self.final_code = INPUT_REQUIRED_CODE
        kind = ResponseKind.E2A_INPUT_REQUIRED
        fields = _kind_fields(kind, ResponseStatus.IN_PROGRESS, final=True)
        body = event.body()
        return self._frame(_json_bytes(body), body, fields, kind, _IN_PROGRESS, final=True)

    def error(
        self,
        code: ErrorCode | str | int,
        message: str,
        details: dict[str, Any] | None = None,
        external: dict[str, Any] | None = None,
    ) -> bytes:
        body: dict[str, Any] = {"code": code, "message": message, "details": details or {}}
        if external is not None:
            body["external"] = external
        self.final_code = str(code)
        kind, status = ResponseKind.E2A_ERROR, ResponseStatus.FAILED
        return self._frame(_json_bytes(body), body, _kind_fields(kind, status, final=True), kind, status, final=True)

    def last_record(self) -> E2AResponse:
        """The E2A record of the last frame built: what ``frame_record`` reads back from its bytes, made
        from what the frame was made of (for an output that speaks another protocol)."""
        last = self._last
        if last is None:
            raise RuntimeError("no frame was built yet")
        body: Any
        kind: str
        status: str
        if isinstance(last, Delta):
            body = {"delta_kind": str(last.delta_kind), "delta": last.delta}
            kind, status, final = _CHUNK, _IN_PROGRESS, False
        else:
            body, kind, status, final = last
        shared = self._shared_record
        if shared is None:
            shared = self._shared_record = E2AResponse.from_proto(self._template)
        sequence = self.sequence - 1
        return replace(
            shared,
            response_id=(self._id_prefix + b"%012x" % sequence).decode("ascii"),
            sequence=sequence,
            is_final=final,
            status=str(status),
            response_kind=str(kind),
            timestamp=self._last_timestamp.decode("ascii"),
            body=body or {},
        )


def frame_record(frame: bytes) -> E2AResponse:
    """The E2A record of a frame as ``FrameBuilder`` serialized it (a ``ChatResponse``)."""
    return E2AResponse.from_proto(agent_service_pb2.ChatResponse.FromString(frame).response)


def _json_bytes(value: Any) -> bytes:
    return jsontext.dumps(value, "body").encode("utf-8")


# --- the protobuf wire format of a frame (https://protobuf.dev/programming-guides/encoding/) ---------

#: ChatResponse.response, and the E2AResponse fields a frame sets itself (proto/e2a/v1/e2a.proto).
_CHAT_RESPONSE = 1
_RESPONSE_ID, _SEQUENCE, _IS_FINAL, _STATUS, _RESPONSE_KIND, _TIMESTAMP, _BODY = 2, 4, 5, 6, 7, 8, 10
_VARINT, _LENGTH_DELIMITED = 0, 2
_SMALL_VARINTS = [bytes((value,)) for value in range(0x80)]
_CHAT_RESPONSE_TAG = bytes((_CHAT_RESPONSE << 3 | _LENGTH_DELIMITED,))
_RESPONSE_ID_TAG = bytes((_RESPONSE_ID << 3 | _LENGTH_DELIMITED,))
_SEQUENCE_TAG = bytes((_SEQUENCE << 3 | _VARINT,))
_TIMESTAMP_TAG = bytes((_TIMESTAMP << 3 | _LENGTH_DELIMITED,))
_BODY_TAG = bytes((_BODY << 3 | _LENGTH_DELIMITED,))
_TEXT_DELTA_PREFIX = b'{"delta_kind":"text","delta":'
#: A response id: the stream's 24-character prefix (a UUIDv4's first four groups and dashes), then the
#: sequence number in 12 hex digits (a UUID's last group; 2**48 frames are more than any stream has).
_RESPONSE_ID_HEX_DIGITS = 12
_RESPONSE_ID_BYTES = 24 + _RESPONSE_ID_HEX_DIGITS
_MAX_FRAMES = 16**_RESPONSE_ID_HEX_DIGITS
#: The two-byte varints start with one of these (the low 7 bits and the continuation bit).
_VARINT_FIRST_BYTES = [bytes((value | 0x80,)) for value in range(0x80)]
#: ``UtcClock``'s timestamps: "YYYY-MM-DDTHH:MM:SS.ffffff+00:00".
TIMESTAMP_BYTES = 32
# Enum members as module constants: in Python 3.11 ``Enum.MEMBER`` is a slow class attribute lookup.
_TEXT = DeltaKind.TEXT
_CHUNK = ResponseKind.E2A_CHUNK
_IN_PROGRESS = ResponseStatus.IN_PROGRESS


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _SMALL_VARINTS[value]
    if value < 0x4000:  # sequence numbers and body sizes mostly
        return _VARINT_FIRST_BYTES[value & 0x7F] + _SMALL_VARINTS[value >> 7]
    encoded = bytearray()
    while value >= 0x80:
        encoded.append(value & 0x7F | 0x80)
        value >>= 7
    encoded.append(value)
    return bytes(encoded)


def _sequence_field(sequence: int) -> bytes:
    if sequence >= _MAX_FRAMES:  # a 13th hex digit would make the response id longer than its field says
        raise RuntimeError(f"a stream's response ids are unique for {_MAX_FRAMES} frames")
    return _SEQUENCE_TAG + _varint(sequence) if sequence else b""  # proto3 leaves a 0 out


def _varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3 | _VARINT) + _varint(value)


def _string_field_bytes(number: int, value: bytes) -> bytes:
    return b"".join((_varint(number << 3 | _LENGTH_DELIMITED), _varint(len(value)), value))


def _string_field(number: int, value: str) -> bytes:
    return _string_field_bytes(number, value.encode("utf-8"))


def _kind_fields(kind: str, status: str, final: bool = False) -> bytes:
    """The serialized is_final, status and response_kind fields (proto3: a default value is left out)."""
    return b"".join(
        (
            _varint_field(_IS_FINAL, 1) if final else b"",
            _string_field(_STATUS, status) if status else b"",
            _string_field(_RESPONSE_KIND, kind) if kind else b"",
        )
    )


def _segments(shared: e2a_pb2.E2AResponse) -> tuple[bytes, bytes, bytes, bytes]:
    """The fields every frame of a stream shares (``shared``, which sets none of a frame's own fields),
    serialized and cut where a frame's own fields go in: before the response id, before the sequence,
    before the body, and after it."""
    data = shared.SerializeToString()
    cuts = [0, 0, 0]  # where the fields numbered above 1, above 3 and above 9 begin
    position = 0
    while position < len(data):
        tag, position = _read_varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == _VARINT:
            _, position = _read_varint(data, position)
        elif wire_type == _LENGTH_DELIMITED:
            length, position = _read_varint(data, position)
            position += length
        else:  # no field of E2AResponse has another wire type
            raise AssertionError(f"E2AResponse field {number} has wire type {wire_type}")
        for index, last in enumerate((_RESPONSE_ID - 1, _SEQUENCE - 1, _BODY - 1)):
            if number <= last:
                cuts[index] = position
    first = cuts[0]
    second = max(first, cuts[1])
    third = max(second, cuts[2])
    return data[:first], data[first:second], data[second:third], data[third:]


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
