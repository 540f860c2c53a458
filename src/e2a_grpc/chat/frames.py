"""Building the E2AResponse frames of one Chat stream, with the invariants of spec section 12.

One ``FrameBuilder`` per request: it echoes the request's correlation fields (12.4) on every frame,
numbers frames 0, 1, 2, ..., gives each a fresh UUID and an RFC 3339 UTC timestamp, and makes the
final frame ``succeeded`` (e2a.complete) or ``failed`` (e2a.error). Frames are built straight into
``ChatResponse`` messages from pre-serialized templates: this is the per-frame hot path of the service.

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
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson

from e2a.v1 import agent_service_pb2, e2a_pb2
from e2a_grpc import jsontext
from e2a_grpc.chat.events import AgentIds, BackendInfo, Complete, Delta, Passthrough
from e2a_grpc.model import DeltaKind, E2AEnvelope, ErrorCode, ResponseKind, ResponseStatus
from e2a_grpc.model.constants import E2A_PROTOCOL_VERSION
from e2a_grpc.model.proto import to_proto_jsonrpc_id

frame_log = logging.getLogger("e2a_grpc.frames")

#: ``metadata`` key set on every frame when the server assigned the request_id.
REQUEST_ID_ASSIGNED_KEY = "e2a_request_id_assigned_by_server"
_ASSIGNED_METADATA = json.dumps({REQUEST_ID_ASSIGNED_KEY: True})


class UtcClock:
    """RFC 3339 UTC timestamps with microseconds; the date-time part is formatted once a second."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def now(self) -> str:
        second, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
        if second != self._second:
            self._second = second
            self._prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._prefix}.{nanoseconds // 1000:06d}+00:00"


class FrameBuilder:
    """The frames of one stream, in order, as ``ChatResponse`` messages."""

    def __init__(
        self, envelope: E2AEnvelope, backend: BackendInfo, clock: UtcClock, *, log_frames: bool = False
    ) -> None:
        assigned = envelope.request_id is None
        self.request_id = str(uuid.uuid4()) if assigned else envelope.request_id
        self.sequence = 0
        self.finished = False
        #: How the stream ended, once its final frame is built: "ok", or the e2a.error code.
        self.final_code: str | None = None
        self._log = log_frames
        self._clock = clock
        # Unique per frame: a random UUIDv4 prefix per stream, the sequence number in the last group
        # (the 12 hex digits of a UUID's last group), so a frame costs no random number.
        self._id_prefix = str(uuid.uuid4())[:24]
        provenance = e2a_pb2.E2AProvenance(
            source_protocol=backend.source_protocol,
            converter=f"e2a_grpc.chat:{backend.name}",
            details=jsontext.dumps(backend.details, "provenance.details") if backend.details else "",
        )
        # Fields every frame of this request carries (spec 12.4): set once, parsed from bytes per frame.
        shared = agent_service_pb2.ChatResponse(
            response=e2a_pb2.E2AResponse(
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
        )
        if envelope.jsonrpc_id is not None:
            shared.response.jsonrpc_id.CopyFrom(to_proto_jsonrpc_id(envelope.jsonrpc_id))
        self._template = shared
        self._shared = b""
        self._chunk = b""
        self._serialize_templates()

    def _serialize_templates(self) -> None:
        self._shared = self._template.SerializeToString()
        chunk = agent_service_pb2.ChatResponse.FromString(self._shared)
        chunk.response.status = ResponseStatus.IN_PROGRESS
        chunk.response.response_kind = ResponseKind.E2A_CHUNK
        self._chunk = chunk.SerializeToString()

    def adopt_agent_ids(self, ids: AgentIds) -> None:
        """Carry the agent's task / context id on the next frames, where the request set none (see above)."""
        response = self._template.response
        adopted = False
        for name, value in (("task_id", ids.task_id), ("context_id", ids.context_id)):
            if value and not response.HasField(name):
                setattr(response, name, value)
                adopted = True
        if adopted:
            self._serialize_templates()

    def _frame(
        self, template: bytes, body: str, kind: str = "", status: str = "", final: bool = False
    ) -> agent_service_pb2.ChatResponse:
        if self.finished:
            raise RuntimeError("a stream has exactly one final frame, and it is the last")
        message = agent_service_pb2.ChatResponse.FromString(template)
        frame = message.response
        sequence = self.sequence
        frame.response_id = f"{self._id_prefix}{sequence:012x}"
        frame.sequence = sequence
        frame.timestamp = self._clock.now()
        frame.body = body
        if kind:
            frame.response_kind = kind
            frame.status = status
            frame.is_final = final
        self.sequence = sequence + 1
        self.finished = final
        if self._log:
            frame_log.info(
                json.dumps(
                    {
                        "request_id": self.request_id,
                        "response_id": frame.response_id,
                        "sequence": sequence,
                        "is_final": final,
                        "response_kind": frame.response_kind,
                        "timestamp": frame.timestamp,
                    }
                )
            )
        return message

    def delta(self, event: Delta) -> agent_service_pb2.ChatResponse:
        if event.delta_kind is DeltaKind.TEXT and event.mime_type is None and type(event.delta) is str:
            try:  # the common case, without building a dict: the same bytes jsontext.dumps writes
                return self._frame(
                    self._chunk, '{"delta_kind":"text","delta":' + orjson.dumps(event.delta).decode() + "}"
                )
            except orjson.JSONEncodeError:
                pass  # a lone surrogate: the general path escapes it
        body: dict[str, Any] = {"delta_kind": event.delta_kind, "delta": event.delta}
        if event.mime_type is not None:
            body["mime_type"] = event.mime_type
        return self._frame(self._chunk, jsontext.dumps(body, "body"))

    def passthrough(self, event: Passthrough) -> agent_service_pb2.ChatResponse:
        body = jsontext.dumps(event.body, "body") if event.body else ""
        return self._frame(self._shared, body, event.response_kind, ResponseStatus.IN_PROGRESS)

    def for_event(self, event: Delta | Complete | Passthrough) -> agent_service_pb2.ChatResponse:
        """The frame of one backend event (``AgentIds`` make no frame: see ``adopt_agent_ids``)."""
        if isinstance(event, Delta):
            return self.delta(event)
        if isinstance(event, Complete):
            return self.complete(event.result)
        if isinstance(event, Passthrough):
            return self.passthrough(event)
        raise TypeError(f"unknown backend event {event!r}")

    def complete(self, result: dict[str, Any]) -> agent_service_pb2.ChatResponse:
        body = jsontext.dumps({"result": result}, "body")
        self.final_code = "ok"
        return self._frame(self._shared, body, ResponseKind.E2A_COMPLETE, ResponseStatus.SUCCEEDED, True)

    def error(
        self,
        code: ErrorCode | int,
        message: str,
        details: dict[str, Any] | None = None,
        external: dict[str, Any] | None = None,
    ) -> agent_service_pb2.ChatResponse:
        body: dict[str, Any] = {"code": code, "message": message, "details": details or {}}
        if external is not None:
            body["external"] = external
        self.final_code = str(code)
        return self._frame(
            self._shared, jsontext.dumps(body, "body"), ResponseKind.E2A_ERROR, ResponseStatus.FAILED, True
        )
