"""The nested E2A types: ``E2AProvenance``, ``E2AAuth`` and ``E2AFileRef``, with their dict forms."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from e2a_grpc.errors import E2ATypeError, type_name
from e2a_grpc.model import readers
from e2a_grpc.model.enums import SourceProtocol


@dataclass
class E2AProvenance:
    """Where a record came from before it was E2A, and who converted it when."""

    source_protocol: str = SourceProtocol.E2A.value
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
        readers.require_object(data, path)
        source_protocol = data.get("source_protocol", SourceProtocol.E2A)
        converter, converted_at, details = data.get("converter"), data.get("converted_at"), data.get("details")
        # Each reader is called only for a value it may change or reject (it is on every record
        # read, and the readers' error paths cost an f-string each).
        if type(source_protocol) is not str:
            source_protocol = readers.required_text(source_protocol, f"{path}.source_protocol")
        if converter is not None and type(converter) is not str:
            converter = readers.text(converter, f"{path}.converter")
        if converted_at is not None and type(converted_at) is not str:
            converted_at = readers.text(converted_at, f"{path}.converted_at")
        details = dict(details) if type(details) is dict else readers.json_object(details, f"{path}.details")
        return cls(source_protocol, converter, converted_at, details)

    @classmethod
    def from_canonical(cls, data: Any) -> E2AProvenance | None:
        """The provenance of a dict exactly as ``to_dict()`` writes one (its keys in order, each
        value of the type written), taking its values without copying them; None for anything else,
        which ``from_dict`` then reads or rejects."""
        if type(data) is not dict or tuple(data) != _PROVENANCE_KEYS:
            return None
        source_protocol, converter, converted_at, details = data.values()
        if (
            type(source_protocol) is str
            and (converter is None or type(converter) is str)
            and (converted_at is None or type(converted_at) is str)
            and type(details) is dict
        ):
            return cls(source_protocol, converter, converted_at, details)
        return None


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
        readers.require_object(data, path)
        uri = data.get("uri")
        if not isinstance(uri, str):
            raise E2ATypeError(f"{path}.uri", f"is required and must be a string, got {type_name(uri)}")
        size = data.get("size")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
            raise E2ATypeError(f"{path}.size", f"expected an integer or null, got {type_name(size)}")
        return cls(
            uri=uri,
            name=readers.text(data.get("name"), f"{path}.name"),
            mime_type=readers.text(data.get("mime_type"), f"{path}.mime_type"),
            size=size,
            _meta=readers.json_object(data.get("_meta"), f"{path}._meta"),
        )


_PROVENANCE_KEYS = tuple(item.name for item in fields(E2AProvenance))


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
        readers.require_object(data, path)
        headers = readers.json_object(data.get("extra_headers"), f"{path}.extra_headers")
        for name, value in headers.items():
            if not isinstance(value, str):
                raise E2ATypeError(f"{path}.extra_headers.{name}", f"expected a string, got {type_name(value)}")
        return cls(
            method_id=readers.text(data.get("method_id"), f"{path}.method_id"),
            bearer_token=readers.text(data.get("bearer_token"), f"{path}.bearer_token"),
            api_key_ref=readers.text(data.get("api_key_ref"), f"{path}.api_key_ref"),
            credential_ref=readers.text(data.get("credential_ref"), f"{path}.credential_ref"),
            extra_headers=headers,
            _meta=readers.json_object(data.get("_meta"), f"{path}._meta"),
        )

    @classmethod
    def from_canonical(cls, data: Any) -> E2AAuth | None:
        """As ``E2AProvenance.from_canonical``: the auth of a dict exactly as ``to_dict()`` writes one."""
        if type(data) is not dict or tuple(data) != _AUTH_KEYS:
            return None
        method_id, bearer_token, api_key_ref, credential_ref, headers, meta = data.values()
        if (
            (method_id is None or type(method_id) is str)
            and (bearer_token is None or type(bearer_token) is str)
            and (api_key_ref is None or type(api_key_ref) is str)
            and (credential_ref is None or type(credential_ref) is str)
            and type(headers) is dict
            and all(type(value) is str for value in headers.values())
            and type(meta) is dict
        ):
            return cls(method_id, bearer_token, api_key_ref, credential_ref, headers, meta)
        return None


_AUTH_KEYS = tuple(item.name for item in fields(E2AAuth))
