"""E2A data model: request ``E2AEnvelope``, response ``E2AResponse`` and their nested types.

The classes keep the dict semantics of the protocol document (``params`` and ``body`` are plain
dicts) and read the legacy shapes of its sections 9-11 in ``from_dict``. Values whose JSON type the
protocol does not allow raise an ``E2ATypeError`` / ``E2AValueError`` naming the field, instead of
being coerced into something else. ``to_proto`` / ``to_bytes`` / ``to_json`` and their inverses
delegate to ``e2a_grpc.codec``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from e2a_grpc import jsontext
from e2a_grpc.constants import (
    E2A_PROTOCOL_VERSION,
    E2A_RESPONSE_STATUS_IN_PROGRESS,
    E2A_SOURCE_PROTOCOL_A2A,
    E2A_SOURCE_PROTOCOL_ACP,
    E2A_SOURCE_PROTOCOL_E2A,
    E2A_WIRE_INTERNAL_METADATA_KEYS,
)
from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name


def utc_now_iso() -> str:
    """The current UTC time as an RFC 3339 string."""
    return datetime.now(UTC).isoformat()


class IdentityOrigin(str, Enum):
    """Who triggered the request."""

    SYSTEM = "system"
    USER = "user"
    AGENT = "agent"
    SERVICE = "service"


@dataclass
class E2AProvenance:
    """Where a record came from before it was E2A, and who converted it when."""

    source_protocol: str = E2A_SOURCE_PROTOCOL_E2A
    converter: str | None = None
    converted_at: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_protocol": self.source_protocol,
            "converter": self.converter,
            "converted_at": self.converted_at,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, data: Any, path: str = "provenance") -> E2AProvenance:
        if data is None:
            return cls()
        if isinstance(data, E2AProvenance):
            return data
        _require_object(data, path)
        source = data.get("source_protocol", E2A_SOURCE_PROTOCOL_E2A)
        if not isinstance(source, str):
            raise E2ATypeError(f"{path}.source_protocol", f"expected a string, got {type_name(source)}")
        return cls(
            source_protocol=source,
            converter=_opt_str(data, "converter", path),
            converted_at=_opt_str(data, "converted_at", path),
            details=_obj(data, "details", path),
        )


@dataclass
class E2AFileRef:
    """A file reference: the element type of ``params.files`` / ``params.attachments``."""

    uri: str
    name: str | None = None
    mime_type: str | None = None
    size: int | None = None
    _meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "name": self.name,
            "mime_type": self.mime_type,
            "size": self.size,
            "_meta": dict(self._meta),
        }

    @classmethod
    def from_dict(cls, data: Any, path: str = "file") -> E2AFileRef:
        _require_object(data, path)
        uri = data.get("uri")
        if not isinstance(uri, str):
            raise E2ATypeError(f"{path}.uri", f"is required and must be a string, got {type_name(uri)}")
        size = data.get("size")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
            raise E2ATypeError(f"{path}.size", f"expected an integer or null, got {type_name(size)}")
        return cls(
            uri=uri,
            name=_opt_str(data, "name", path),
            mime_type=_opt_str(data, "mime_type", path),
            size=size,
            _meta=_obj(data, "_meta", path),
        )


@dataclass
class E2AAuth:
    """Credentials or references to them. ``bearer_token`` is kept out of ``repr``."""

    method_id: str | None = None
    bearer_token: str | None = field(default=None, repr=False)
    api_key_ref: str | None = None
    credential_ref: str | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)
    _meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method_id": self.method_id,
            "bearer_token": self.bearer_token,
            "api_key_ref": self.api_key_ref,
            "credential_ref": self.credential_ref,
            "extra_headers": dict(self.extra_headers),
            "_meta": dict(self._meta),
        }

    @classmethod
    def from_dict(cls, data: Any, path: str = "auth") -> E2AAuth:
        if isinstance(data, E2AAuth):
            return data
        _require_object(data, path)
        headers = _obj(data, "extra_headers", path)
        for name, value in headers.items():
            if not isinstance(value, str):
                raise E2ATypeError(f"{path}.extra_headers.{name}", f"expected a string, got {type_name(value)}")
        return cls(
            method_id=_opt_str(data, "method_id", path),
            bearer_token=_opt_str(data, "bearer_token", path),
            api_key_ref=_opt_str(data, "api_key_ref", path),
            credential_ref=_opt_str(data, "credential_ref", path),
            extra_headers=headers,
            _meta=_obj(data, "_meta", path),
        )


class _Record:
    """Serialization shared by envelopes and responses (the wire forms live in ``codec``)."""

    timestamp: str | None

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def to_json(self) -> str:
        """The E2A wire JSON: ``to_dict()`` as compact JSON text."""
        return codec.dict_to_json(self.to_dict())

    def to_bytes(self) -> bytes:
        """Binary protobuf encoding of ``to_proto()``."""
        return self.to_proto().SerializeToString()  # type: ignore[attr-defined, no-any-return]

    def ensure_timestamp(self) -> None:
        """Set ``timestamp`` to now (RFC 3339 UTC) if it is unset."""
        if self.timestamp is None:
            self.timestamp = utc_now_iso()


@dataclass
class E2AEnvelope(_Record):
    """A request from the gateway to an agent server (spec section 4)."""

    protocol_version: str | None = E2A_PROTOCOL_VERSION
    provenance: E2AProvenance = field(default_factory=E2AProvenance)
    request_id: str | None = None
    jsonrpc_id: str | int | float | None = None
    correlation_id: str | None = None
    task_id: str | None = None
    context_id: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    timestamp: str | None = None
    identity_origin: IdentityOrigin = IdentityOrigin.USER
    channel: str | None = None
    user_id: str | None = None
    agent_ref: dict[str, Any] | None = None
    chat_id: str | None = None
    source_agent_id: str | None = None
    agent_id: str | None = None
    service_id: str | None = None
    workspace_key: str | None = None
    method: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    ext_method: str | None = None
    session_update_kind: str | None = None
    is_stream: bool = False
    expected_output_modes: list[str] = field(default_factory=list)
    auth: E2AAuth | None = None
    channel_context: dict[str, Any] = field(default_factory=dict)
    a2a_metadata: dict[str, Any] = field(default_factory=dict)
    acp_meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol_version": self.protocol_version,
            "provenance": self.provenance.to_dict(),
            "request_id": self.request_id,
            "jsonrpc_id": self.jsonrpc_id,
            "correlation_id": self.correlation_id,
            "task_id": self.task_id,
            "context_id": self.context_id,
            "session_id": self.session_id,
            "message_id": self.message_id,
            "timestamp": self.timestamp,
            "identity_origin": _origin_value(self.identity_origin),
            "channel": self.channel,
            "user_id": self.user_id,
            "agent_ref": None if self.agent_ref is None else dict(self.agent_ref),
            "chat_id": self.chat_id,
            "source_agent_id": self.source_agent_id,
            "agent_id": self.agent_id,
            "service_id": self.service_id,
            "workspace_key": self.workspace_key,
            "method": self.method,
            "params": dict(self.params),
            "ext_method": self.ext_method,
            "session_update_kind": self.session_update_kind,
            "is_stream": self.is_stream,
            "expected_output_modes": list(self.expected_output_modes),
            "auth": None if self.auth is None else self.auth.to_dict(),
            "channel_context": dict(self.channel_context),
            "a2a_metadata": dict(self.a2a_metadata),
            "acp_meta": dict(self.acp_meta),
        }

    @classmethod
    def from_dict(cls, data: Any) -> E2AEnvelope:
        """Read an envelope dict, including the legacy keys of spec sections 9-11."""
        _require_object(data, "envelope")
        provenance = _migrate_legacy_binding(data, E2AProvenance.from_dict(data.get("provenance")))
        auth_raw = data.get("auth")
        return cls(
            protocol_version=_opt_str_default(data, "protocol_version", E2A_PROTOCOL_VERSION),
            provenance=provenance,
            request_id=_opt_str(data, "request_id"),
            jsonrpc_id=_jsonrpc_id(data),
            correlation_id=_opt_str(data, "correlation_id"),
            task_id=_opt_str(data, "task_id"),
            context_id=_opt_str(data, "context_id"),
            session_id=_opt_str(data, "session_id"),
            message_id=_opt_str(data, "message_id"),
            timestamp=_timestamp(data),
            identity_origin=_identity_origin(data, IdentityOrigin.USER),
            channel=_channel(data),
            user_id=_opt_str(data, "user_id"),
            agent_ref=_opt_obj(data, "agent_ref"),
            chat_id=_opt_str(data, "chat_id"),
            source_agent_id=_opt_str(data, "source_agent_id"),
            agent_id=_stripped(data, "agent_id") or _stripped(data, "source_agent_id"),
            service_id=_stripped(data, "service_id"),
            workspace_key=_stripped(data, "workspace_key") or _stripped(data, "workspace_dir"),
            method=_method(data),
            params=_params_with_legacy_payload(data),
            ext_method=_opt_str(data, "ext_method"),
            session_update_kind=_opt_str(data, "session_update_kind"),
            is_stream=_bool(data, "is_stream"),
            expected_output_modes=_str_list(data, "expected_output_modes"),
            auth=None if auth_raw is None else E2AAuth.from_dict(auth_raw),
            channel_context=_channel_context_with_legacy_metadata(data),
            a2a_metadata=_obj(data, "a2a_metadata"),
            acp_meta=_obj(data, "acp_meta"),
        )

    def to_proto(self) -> Any:
        """The ``e2a.v1.E2AEnvelope`` protobuf message."""
        return codec.to_proto_envelope(vars(self))

    @classmethod
    def from_proto(cls, message: Any) -> E2AEnvelope:
        # The codec yields the attributes already typed and in field order: no re-validation.
        envelope = cls.__new__(cls)
        envelope.__dict__.update(codec.envelope_attributes_from_proto(message))
        return envelope

    @classmethod
    def from_bytes(cls, data: bytes) -> E2AEnvelope:
        return cls.from_proto(codec.parse_envelope(data))

    @classmethod
    def from_json(cls, text: str | bytes) -> E2AEnvelope:
        return cls.from_dict(_loads_document(text))


@dataclass
class E2AResponse(_Record):
    """One outbound record from an agent; each streaming frame is one (spec section 12)."""

    protocol_version: str | None = E2A_PROTOCOL_VERSION
    response_id: str | None = None
    request_id: str | None = None
    sequence: int = 0
    is_final: bool = False
    status: str = E2A_RESPONSE_STATUS_IN_PROGRESS
    response_kind: str = ""
    timestamp: str | None = None
    provenance: E2AProvenance = field(default_factory=E2AProvenance)
    body: dict[str, Any] = field(default_factory=dict)
    jsonrpc_id: str | int | float | None = None
    correlation_id: str | None = None
    task_id: str | None = None
    context_id: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    is_stream: bool = False
    identity_origin: IdentityOrigin = IdentityOrigin.AGENT
    channel: str | None = None
    user_id: str | None = None
    agent_ref: dict[str, Any] | None = None
    source_agent_id: str | None = None
    method: str | None = None
    projections: dict[str, Any] = field(default_factory=dict)
    channel_context: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    a2a_metadata: dict[str, Any] = field(default_factory=dict)
    acp_meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol_version": self.protocol_version,
            "response_id": self.response_id,
            "request_id": self.request_id,
            "sequence": self.sequence,
            "is_final": self.is_final,
            "status": self.status,
            "response_kind": self.response_kind,
            "timestamp": self.timestamp,
            "provenance": self.provenance.to_dict(),
            "body": dict(self.body),
            "jsonrpc_id": self.jsonrpc_id,
            "correlation_id": self.correlation_id,
            "task_id": self.task_id,
            "context_id": self.context_id,
            "session_id": self.session_id,
            "message_id": self.message_id,
            "is_stream": self.is_stream,
            "identity_origin": _origin_value(self.identity_origin),
            "channel": self.channel,
            "user_id": self.user_id,
            "agent_ref": None if self.agent_ref is None else dict(self.agent_ref),
            "source_agent_id": self.source_agent_id,
            "method": self.method,
            "projections": dict(self.projections),
            "channel_context": dict(self.channel_context),
            "metadata": dict(self.metadata),
            "a2a_metadata": dict(self.a2a_metadata),
            "acp_meta": dict(self.acp_meta),
        }

    @classmethod
    def from_dict(cls, data: Any) -> E2AResponse:
        _require_object(data, "response")
        kind = data.get("response_kind")
        if kind is not None and not isinstance(kind, str):
            raise E2ATypeError("response_kind", f"expected a string, got {type_name(kind)}")
        status = data.get("status", E2A_RESPONSE_STATUS_IN_PROGRESS)
        if not isinstance(status, str):
            raise E2ATypeError("status", f"expected a string, got {type_name(status)}")
        return cls(
            protocol_version=_opt_str_default(data, "protocol_version", E2A_PROTOCOL_VERSION),
            response_id=_opt_str(data, "response_id"),
            request_id=_opt_str(data, "request_id"),
            sequence=_sequence(data),
            is_final=_bool(data, "is_final"),
            status=status,
            response_kind=kind or "",
            timestamp=_timestamp(data),
            provenance=E2AProvenance.from_dict(data.get("provenance")),
            body=_obj(data, "body"),
            jsonrpc_id=_jsonrpc_id(data),
            correlation_id=_opt_str(data, "correlation_id"),
            task_id=_opt_str(data, "task_id"),
            context_id=_opt_str(data, "context_id"),
            session_id=_opt_str(data, "session_id"),
            message_id=_opt_str(data, "message_id"),
            is_stream=_bool(data, "is_stream"),
            identity_origin=_identity_origin(data, IdentityOrigin.AGENT),
            channel=_channel(data),
            user_id=_opt_str(data, "user_id"),
            agent_ref=_opt_obj(data, "agent_ref"),
            source_agent_id=_opt_str(data, "source_agent_id"),
            method=_opt_str(data, "method"),
            projections=_obj(data, "projections"),
            channel_context=_obj(data, "channel_context"),
            metadata=_obj(data, "metadata"),
            a2a_metadata=_obj(data, "a2a_metadata"),
            acp_meta=_obj(data, "acp_meta"),
        )

    def to_proto(self) -> Any:
        """The ``e2a.v1.E2AResponse`` protobuf message."""
        return codec.to_proto_response(vars(self))

    @classmethod
    def from_proto(cls, message: Any) -> E2AResponse:
        response = cls.__new__(cls)
        response.__dict__.update(codec.response_attributes_from_proto(message))
        return response

    @classmethod
    def from_bytes(cls, data: bytes) -> E2AResponse:
        return cls.from_proto(codec.parse_response(data))

    @classmethod
    def from_json(cls, text: str | bytes) -> E2AResponse:
        return cls.from_dict(_loads_document(text))


# --- field readers: each names the field it rejects -------------------------------------------


def _path(parent: str | None, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _require_object(data: Any, path: str) -> None:
    if not isinstance(data, dict):
        raise E2ATypeError(path, f"expected an object, got {type_name(data)}")


def _opt_str(data: dict[str, Any], key: str, parent: str | None = None) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise E2ATypeError(_path(parent, key), f"expected a string or null, got {type_name(value)}")


def _opt_str_default(data: dict[str, Any], key: str, default: str) -> str | None:
    return _opt_str(data, key) if key in data else default


def _obj(data: dict[str, Any], key: str, parent: str | None = None) -> dict[str, Any]:
    """An object slot: null or absent reads as ``{}``; the dict is copied."""
    value = data.get(key)
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    raise E2ATypeError(_path(parent, key), f"expected an object, got {type_name(value)}")


def _opt_obj(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, dict):
        return dict(value)
    raise E2ATypeError(key, f"expected an object or null, got {type_name(value)}")


def _bool(data: dict[str, Any], key: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if isinstance(value, int):  # bool, or a legacy 0/1 integer flag
        return bool(value)
    raise E2ATypeError(key, f"expected a boolean, got {type_name(value)}")


def _sequence(data: dict[str, Any]) -> int:
    value = data.get("sequence")
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise E2ATypeError("sequence", f"expected an integer, got {type_name(value)}")


def _str_list(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise E2ATypeError(key, f"expected an array of strings, got {type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise E2ATypeError(f"{key}[{index}]", f"expected a string, got {type_name(item)}")
    return list(value)


def _jsonrpc_id(data: dict[str, Any]) -> str | int | float | None:
    value = data.get("jsonrpc_id")
    if isinstance(value, float) and not math.isfinite(value):
        raise E2AValueError("jsonrpc_id", f"{value!r} is not a JSON number")
    if value is None or isinstance(value, (str, float)) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise E2ATypeError("jsonrpc_id", f"expected a string, number or null, got {type_name(value)}")


def _timestamp(data: dict[str, Any]) -> str | None:
    """RFC 3339 string as given; legacy epoch seconds (int/float) are normalized to UTC."""
    value = data.get("timestamp")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC).isoformat()
        except (OverflowError, OSError, ValueError) as exc:
            raise E2AValueError("timestamp", f"epoch seconds {value!r} out of range ({exc})") from None
    raise E2ATypeError("timestamp", f"expected an RFC 3339 string or epoch seconds, got {type_name(value)}")


def _identity_origin(data: dict[str, Any], default: IdentityOrigin) -> IdentityOrigin:
    value = data.get("identity_origin", default)
    if isinstance(value, IdentityOrigin):
        return value
    if isinstance(value, str):
        try:
            return IdentityOrigin(value)
        except ValueError:
            allowed = ", ".join(origin.value for origin in IdentityOrigin)
            raise E2AValueError("identity_origin", f"{value!r} is not one of {allowed}") from None
    raise E2ATypeError("identity_origin", f"expected a string, got {type_name(value)}")


def _origin_value(origin: IdentityOrigin | str) -> str:
    return origin.value if isinstance(origin, IdentityOrigin) else origin


def _channel(data: dict[str, Any]) -> str | None:
    """``channel``, or the legacy ``channel_id`` when ``channel`` is absent or null."""
    channel = _opt_str(data, "channel")
    return channel if channel is not None else _opt_str(data, "channel_id")


def _method(data: dict[str, Any]) -> str | None:
    """``method``, or the legacy ``req_method`` (a string or enum) when ``method`` is null."""
    method = _opt_str(data, "method")
    if method is None and "req_method" in data:
        legacy = data["req_method"]
        if isinstance(legacy, str):
            return legacy
        if isinstance(legacy, Enum):
            return str(legacy.value)
    return method


def _stripped(data: dict[str, Any], key: str) -> str | None:
    """Tenant routing keys: a non-blank string, stripped; anything else counts as absent."""
    value = data.get(key)
    if not isinstance(value, str):
        return None
    return value.strip() or None


def _params_with_legacy_payload(data: dict[str, Any]) -> dict[str, Any]:
    """``params``; keys of a legacy top-level ``payload`` object are added without overwriting."""
    params = _obj(data, "params")
    payload = data.get("payload")
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in params or value is None or (isinstance(value, (list, dict)) and not value):
                continue
            params[key] = value
    return params


def _channel_context_with_legacy_metadata(data: dict[str, Any]) -> dict[str, Any]:
    """``channel_context`` plus keys of legacy ``metadata`` and ``app_id`` it does not have yet."""
    context = _obj(data, "channel_context")
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        for key, value in metadata.items():
            if key not in E2A_WIRE_INTERNAL_METADATA_KEYS and key not in context:
                context[key] = value
    app_id = data.get("app_id")
    if app_id and "app_id" not in context:
        context["app_id"] = app_id
    return context


def _migrate_legacy_binding(data: dict[str, Any], provenance: E2AProvenance) -> E2AProvenance:
    """Legacy ``binding`` moves to ``provenance.details.migrated_from_binding`` (spec 4.2)."""
    legacy = data.get("binding")
    if legacy is None or provenance.details.get("migrated_from_binding") is not None:
        return provenance
    if isinstance(legacy, dict) and "value" in legacy:
        legacy = legacy["value"]
    if legacy is None:
        text = ""
    elif isinstance(legacy, (str, int, float)):
        text = str(legacy)
    else:
        raise E2ATypeError("binding", f"expected a string, got {type_name(legacy)}")
    source = provenance.source_protocol
    if source == E2A_SOURCE_PROTOCOL_E2A and text in (E2A_SOURCE_PROTOCOL_ACP, E2A_SOURCE_PROTOCOL_A2A):
        source = text
    return E2AProvenance(
        source_protocol=source,
        converter=provenance.converter,
        converted_at=provenance.converted_at,
        details={**provenance.details, "migrated_from_binding": text},
    )


def _loads_document(text: str | bytes) -> Any:
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode()
        except UnicodeDecodeError as exc:
            raise E2AValueError("$", f"JSON text is not UTF-8: {exc}") from None
    return jsontext.loads(text, "$")


# Imported last: codec needs the classes above (a cycle), and these methods use it on every call.
from e2a_grpc import codec  # noqa: E402
