"""The legacy shapes of spec sections 9-11, read by ``from_dict``: each function gives one field's
value from the whole input dict, current key first, legacy key or shape as the fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name
from e2a_grpc.model import readers
from e2a_grpc.model.constants import E2A_WIRE_INTERNAL_METADATA_KEYS
from e2a_grpc.model.enums import SourceProtocol
from e2a_grpc.model.parts import E2AProvenance


def timestamp(data: dict[str, Any]) -> str | None:
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


def response_kind(data: dict[str, Any]) -> str:
    """``response_kind``; null reads as ``""`` (no kind), as older writers sent it."""
    return readers.text(data.get("response_kind"), "response_kind") or ""


def channel(data: dict[str, Any]) -> str | None:
    """``channel``, or the legacy ``channel_id`` when ``channel`` is absent or null."""
    value = readers.text(data.get("channel"), "channel")
    return value if value is not None else readers.text(data.get("channel_id"), "channel_id")


def method(data: dict[str, Any]) -> str | None:
    """``method``, or the legacy ``req_method`` (a string or enum) when ``method`` is null."""
    value = readers.text(data.get("method"), "method")
    if value is None and "req_method" in data:
        legacy = data["req_method"]
        if isinstance(legacy, str):
            return legacy
        if isinstance(legacy, Enum):
            return str(legacy.value)
    return value


def _stripped(data: dict[str, Any], key: str) -> str | None:
    """Tenant routing keys: a non-blank string, stripped; anything else counts as absent."""
    value = data.get(key)
    if not isinstance(value, str):
        return None
    return value.strip() or None


def agent_id(data: dict[str, Any]) -> str | None:
    """``agent_id``, falling back to ``source_agent_id`` (both stripped)."""
    return _stripped(data, "agent_id") or _stripped(data, "source_agent_id")


def service_id(data: dict[str, Any]) -> str | None:
    return _stripped(data, "service_id")


def workspace_key(data: dict[str, Any]) -> str | None:
    """``workspace_key``, falling back to the legacy ``workspace_dir`` (both stripped)."""
    return _stripped(data, "workspace_key") or _stripped(data, "workspace_dir")


def params(data: dict[str, Any]) -> dict[str, Any]:
    """``params``; keys of a legacy top-level ``payload`` object are added without overwriting."""
    merged = readers.json_object(data.get("params"), "params")
    payload = data.get("payload")
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in merged or value is None or (isinstance(value, (list, dict)) and not value):
                continue
            merged[key] = value
    return merged


def channel_context(data: dict[str, Any]) -> dict[str, Any]:
    """``channel_context`` plus keys of legacy ``metadata`` and ``app_id`` it does not have yet."""
    context = readers.json_object(data.get("channel_context"), "channel_context")
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        for key, value in metadata.items():
            if key not in E2A_WIRE_INTERNAL_METADATA_KEYS and key not in context:
                context[key] = value
    app_id = data.get("app_id")
    if app_id and "app_id" not in context:
        context["app_id"] = app_id
    return context


def provenance(data: dict[str, Any]) -> E2AProvenance:
    """``provenance``; a legacy ``binding`` moves to ``provenance.details.migrated_from_binding`` (spec 4.2)."""
    current = E2AProvenance.from_dict(data.get("provenance"))
    legacy = data.get("binding")
    if legacy is None or current.details.get("migrated_from_binding") is not None:
        return current
    if isinstance(legacy, dict) and "value" in legacy:
        legacy = legacy["value"]
    if legacy is None:
        text = ""
    elif isinstance(legacy, (str, int, float)):
        text = str(legacy)
    else:
        raise E2ATypeError("binding", f"expected a string, got {type_name(legacy)}")
    source = current.source_protocol
    if source == SourceProtocol.E2A and text in (SourceProtocol.ACP, SourceProtocol.A2A):
        source = text
    return E2AProvenance(
        source_protocol=source,
        converter=current.converter,
        converted_at=current.converted_at,
        details={**current.details, "migrated_from_binding": text},
    )


#: Each reader by the name the schema binds it by (``(e2a.v1.json).legacy_reader``), whose
#: ``fallback_keys`` list the keys it reads besides its own field's.
READERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    reader.__name__: reader
    for reader in (
        timestamp,
        response_kind,
        channel,
        method,
        agent_id,
        service_id,
        workspace_key,
        params,
        channel_context,
        provenance,
    )
}
#: The readers that change strings of their own key (they strip them); the others, given no
#: fallback key, return a value of their own key that the field's type allows as its kind reads it.
NORMALIZING = frozenset({agent_id, service_id, workspace_key})
