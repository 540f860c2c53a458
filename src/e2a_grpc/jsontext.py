"""Lossless JSON text for the free-form fields (``params``, ``body``, ``*_meta`` ...).

The protobuf schema carries free-form JSON as UTF-8 JSON text. Decoding must give back exactly the
Python value that was encoded: ints of any size stay ints, ``1.0`` stays a float, key order,
``-0.0`` and all of Unicode survive. The standard ``json`` module does that; ``orjson`` is several
times faster but (a) cannot encode ints outside 64 bits or lone surrogates, (b) silently encodes
NaN/Infinity as ``null`` and (c) silently decodes integers beyond 64 bits as floats. So orjson is
only a fast path, and each of those cases goes to ``json``:

- encoding: orjson raises for (a); output containing ``null`` is read back, and if it no longer
  equals the input (a NaN/Infinity became null) the standard encoder names and rejects the value.
- decoding: orjson's result is kept only if orjson re-encodes it to exactly the input text. A big
  integer decoded as a float cannot re-encode to its digits, so any loss shows as a mismatch (as do
  texts from other writers, with other spacing or escapes): those are decoded by ``json``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name

#: Deepest nesting of arrays/objects accepted. Deeper documents get a clear error rather than a
#: RecursionError from deep inside a parser.
MAX_DEPTH = 512

# orjson passes these Python types through to ``default`` (and so to an error) instead of silently
# turning datetimes, dataclasses or str/int subclasses into JSON of its own choosing.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
_STD_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: Any, field: str = "$", *, parsed: bool = False) -> str:
    """A JSON value as compact JSON text, or an error naming the path (under ``field``) that is not JSON.

    Key order is kept, non-ASCII text is written as UTF-8 and a lone surrogate (which UTF-8 cannot
    hold) as a ``\\uXXXX`` escape, so the result always encodes as UTF-8. orjson writes it when it can;
    the standard encoder writes what orjson cannot (integers beyond 64 bits, lone surrogates).
    ``parsed=True`` says every float in ``value`` came from a JSON parser, which never yields NaN or
    Infinity, so the check for them is skipped.
    """
    try:
        encoded = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        # Big ints, lone surrogates, deep nesting or a non-JSON type: find and name the exact
        # problem, then let the standard encoder write what is valid.
        check_value(value, field)
    else:
        # orjson writes NaN/Infinity as null (and None != nan): then the standard encoder rejects it.
        if parsed or not (b"null" in encoded and orjson.loads(encoded) != value):
            return encoded.decode()
    try:
        text = _STD_ENCODER.encode(value)
    except ValueError:
        check_value(value, field)  # names the offending path
        raise
    except RecursionError:
        raise E2AValueError(field, f"nesting deeper than {MAX_DEPTH} levels") from None
    try:
        text.encode()
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # e.g. 1e400: valid JSON syntax, but no double holds it
        raise ValueError(f"number {text} is out of range")
    return value


def loads(text: str, field: str) -> Any:
    """Decode JSON text written by any E2A implementation, losslessly."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        pass  # lone surrogate escapes, depth or malformed text: let json decide and explain
    else:
        if orjson.dumps(value) == text.encode():
            return value
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise E2AValueError(field, f"JSON nesting deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise E2AValueError(field, f"invalid JSON text: {exc}") from None


def loads_object(text: str, field: str) -> dict[str, Any]:
    """``loads`` for the JSON-object slots; anything but an object is an error naming ``field``."""
    value = loads(text, field)
    if not isinstance(value, dict):
        raise E2ATypeError(field, f"expected JSON text of an object, got {type_name(value)}")
    return value


def object_or_none(text: str) -> dict[str, Any] | None:
    """The object ``text`` holds, if orjson reads it as one, else None (``""`` reads as ``{}``).

    For JSON text that is checked and then forwarded unchanged, never for its values: they are
    not lossless (integers beyond 64 bits come back as floats). ``loads_object`` accepts the same
    texts, except nesting between what the standard decoder reaches (about 950 levels) and
    orjson's limit (1,024) in text orjson cannot re-encode exactly.
    """
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else None


def check_value(value: Any, field: str, depth: int = 0) -> None:
    """Raise an error naming the exact path if ``value`` is not a JSON value E2A can carry."""
    if depth > MAX_DEPTH:
        raise E2AValueError(field, f"nesting deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise E2AValueError(field, f"{value!r} is not a JSON number")
        return
    if isinstance(value, str):
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_value(item, f"{field}[{index}]", depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise E2ATypeError(field, f"object key {key!r} is a {type_name(key)}, not a string")
            check_value(item, f"{field}.{key}", depth + 1)
        return
    raise E2ATypeError(field, f"a {type(value).__name__} is not a JSON value")
