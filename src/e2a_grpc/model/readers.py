"""Readers of dict values into record attributes: each checks one JSON type and names the field it rejects.

A reader takes the value found under a key (``None`` for JSON null) and the dotted path to name in
an error; an absent key never reaches a reader, it gets the field's default.
"""

from __future__ import annotations

import math
from typing import Any

from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name
from e2a_grpc.model.enums import IdentityOrigin

#: A JSON-RPC id as E2A carries it: a string, a number (any integer, or a finite float) or null.
JsonRpcIdValue = str | int | float | None


def require_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise E2ATypeError(path, f"expected an object, got {type_name(value)}")
    return value


def text(value: Any, path: str) -> str | None:
    """A string or null."""
    if value is None or isinstance(value, str):
        return value
    raise E2ATypeError(path, f"expected a string or null, got {type_name(value)}")


def required_text(value: Any, path: str) -> str:
    """A string (no null)."""
    if isinstance(value, str):
        return value
    raise E2ATypeError(path, f"expected a string, got {type_name(value)}")


def flag(value: Any, path: str) -> bool:
    """A boolean; null reads as false, and a legacy 0/1 integer flag as its truth value."""
    if value is None:
        return False
    if isinstance(value, int):
        return bool(value)
    raise E2ATypeError(path, f"expected a boolean, got {type_name(value)}")


def integer(value: Any, path: str) -> int:
    """An integer; null reads as 0."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise E2ATypeError(path, f"expected an integer, got {type_name(value)}")


def text_list(value: Any, path: str) -> list[str]:
    """An array of strings (copied); null reads as empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise E2ATypeError(path, f"expected an array of strings, got {type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise E2ATypeError(f"{path}[{index}]", f"expected a string, got {type_name(item)}")
    return list(value)


def json_object(value: Any, path: str) -> dict[str, Any]:
    """A free-form object slot: null reads as ``{}``; the dict is copied."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    raise E2ATypeError(path, f"expected an object, got {type_name(value)}")


def optional_json_object(value: Any, path: str) -> dict[str, Any] | None:
    """An object or null (copied)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return dict(value)
    raise E2ATypeError(path, f"expected an object or null, got {type_name(value)}")


def jsonrpc_id(value: Any, path: str) -> JsonRpcIdValue:
    """A JSON-RPC id: a string, a finite number or null (JSON-RPC 2.0 section 4)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise E2AValueError(path, f"{value!r} is not a JSON number")
    if isinstance(value, str):
        return unicode_text(value, path)
    if value is None or isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise E2ATypeError(path, f"expected a string, number or null, got {type_name(value)}")


def unicode_text(value: str, path: str) -> str:
    """A string that protobuf can carry: no lone surrogate (JSON text may escape one, UTF-8 cannot hold it)."""
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        raise E2AValueError(path, f"a lone surrogate (U+{ord(value[exc.start]):04X}) is not Unicode text") from None
    return value


#: Each origin by the string that names it.
ORIGINS: dict[str, IdentityOrigin] = {origin.value: origin for origin in IdentityOrigin}


def identity_origin(value: Any, path: str) -> IdentityOrigin:
    """An ``IdentityOrigin`` member or its string value."""
    if type(value) is str and value in ORIGINS:  # IdentityOrigin(value), without the Enum call's cost
        return ORIGINS[value]
    if isinstance(value, IdentityOrigin):
        return value
    if isinstance(value, str):
        try:
            return IdentityOrigin(value)
        except ValueError:
            allowed = ", ".join(IdentityOrigin)
            raise E2AValueError(path, f"{value!r} is not one of {allowed}") from None
    raise E2ATypeError(path, f"expected a string, got {type_name(value)}")
