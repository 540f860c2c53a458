"""Lossless JSON text for the free-form fields (``params``, ``body``, ``*_meta`` ...).

The protobuf schema carries free-form JSON as UTF-8 JSON text. Decoding must give back exactly the
Python value that was encoded: ints of any size stay ints, ``1.0`` stays a float, key order,
``-0.0`` and all of Unicode survive. The text written is the E2A wire JSON of docs/wire-json.md,
byte for byte, and it is always orjson's: the standard ``json`` module formats some floats
differently (``1e-06`` where orjson writes ``1e-6``), so it never writes. orjson alone cannot
(a) encode ints outside 64 bits or lone surrogates or nest deeper than 255 levels, (b) tell NaN or
Infinity apart from null (it writes them as ``null``) or (c) decode integers beyond 64 bits
(it reads them as floats). So:

- encoding: when orjson raises for (a), the value is walked once, checked, and what orjson cannot
  write is handed to it as pre-encoded ``orjson.Fragment`` text (a big integer as its digits, a
  string with lone surrogates with ``\\uXXXX`` escapes, every 128th level of nesting as its own
  orjson text). For (b), ``dumps`` asks the C module whether the value holds NaN or Infinity (output
  containing ``null`` is read back where it cannot tell), and the walk names the value and rejects it.
- decoding: orjson's result is kept only if orjson re-encodes it to exactly the input text. A big
  integer decoded as a float cannot re-encode to its digits, so any loss shows as a mismatch (as do
  texts from other writers, with other spacing or escapes): those are decoded by ``json``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import orjson

from e2a_grpc import _canonical
from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name

#: Deepest nesting of arrays/objects accepted in one JSON text or value (``[]`` is 1 level, ``[[]]``
#: 2). Deeper documents get a clear error rather than a RecursionError from deep inside a parser.
MAX_DEPTH = 512

#: Most decimal digits of an integer E2A carries (Python's default limit for converting integers to and
#: from text, sys.get_int_max_str_digits()). Longer integers get a clear error naming the field.
MAX_INTEGER_DIGITS = 4300

# orjson passes these Python types through to ``default`` (and so to an error) instead of silently
# turning datetimes, dataclasses or str/int subclasses into JSON of its own choosing.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
# The integers orjson writes itself; others are written as their digits.
_ORJSON_INT_MIN, _ORJSON_INT_MAX = -(2**63), 2**64 - 1
# orjson raises beyond 255 levels; the fallback encodes each subtree starting at a multiple of this
# depth separately, so no single orjson call sees more than this many levels.
_FRAGMENT_LEVELS = 128
_LONE_SURROGATE = re.compile("([\ud800-\udfff])")


def dumps(value: Any, field: str = "$", *, parsed: bool = False) -> str:
    """A JSON value as compact JSON text, or an error naming the path (under ``field``) that is not JSON.

    Key order is kept, non-ASCII text is written as UTF-8 and a lone surrogate (which UTF-8 cannot
    hold) as a ``\\uXXXX`` escape, so the result always encodes as UTF-8. ``parsed=True`` says every
    float in ``value`` came from a JSON parser, which never yields NaN or Infinity, so the check for
    them is skipped.
    """
    try:
        encoded = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        # Big ints, lone surrogates, deep nesting or a non-JSON type: the walk names a real problem
        # and pre-encodes what orjson cannot write.
        return orjson.dumps(_encodable(value, field, 0)).decode()
    # orjson writes NaN/Infinity as null. The C walk says whether the value holds one; where it
    # cannot tell, output with a null is read back: the value differs (None != nan). Either way
    # the walk below names the value. (A tuple holding None also differs from the list read back;
    # it is valid.)
    if not parsed:
        finite = _canonical.floats_finite(value)
        if finite is False or (finite is None and b"null" in encoded and orjson.loads(encoded) != value):
            _encodable(value, field, 0)
    return encoded.decode()


def _encodable(value: Any, field: str, depth: int) -> Any:
    """``value`` checked, as values orjson writes exactly as docs/wire-json.md says.

    Raises an error naming the path of the first value that is not JSON. ``depth`` is the number
    of arrays/objects around ``value``.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = str.__str__(value)  # a str subclass as its plain string
        return orjson.Fragment(_string_text(text)) if _LONE_SURROGATE.search(text) else text
    if isinstance(value, int):
        if type(value) is int and _ORJSON_INT_MIN <= value <= _ORJSON_INT_MAX:
            return value
        try:
            return orjson.Fragment(int.__repr__(value))
        except ValueError:  # Python's limit on int -> str conversion
            limit = sys.get_int_max_str_digits()
            raise E2AValueError(field, f"integer has more than {limit} digits") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise E2AValueError(field, f"{value!r} is not a JSON number")
        return float(value)
    if isinstance(value, (list, tuple, dict)):
        if depth >= MAX_DEPTH:
            raise E2AValueError(field, f"nesting deeper than {MAX_DEPTH} levels")
        # Plain loops, no comprehensions: one stack frame per level keeps 512 levels within Python's
        # recursion limit.
        container: Any
        if isinstance(value, dict):
            container = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise E2ATypeError(field, f"object key {key!r} is a {type_name(key)}, not a string")
                container[str.__str__(key)] = _encodable(item, f"{field}.{key}", depth + 1)
            if any(_LONE_SURROGATE.search(key) for key in container):
                container = _object_fragment(container)
        else:
            container = []
            for index, item in enumerate(value):
                container.append(_encodable(item, f"{field}[{index}]", depth + 1))
        if depth and depth % _FRAGMENT_LEVELS == 0 and not isinstance(container, orjson.Fragment):
            return orjson.Fragment(orjson.dumps(container))
        return container
    raise E2ATypeError(field, f"a {type(value).__name__} is not a JSON value")


def _object_fragment(members: dict[str, Any]) -> orjson.Fragment:
    """An object with lone surrogates in its keys: orjson takes no fragment as a key, so the object
    is written here (its values still by orjson)."""
    pairs = (_string_text(key) + ":" + orjson.dumps(item).decode() for key, item in members.items())
    return orjson.Fragment("{" + ",".join(pairs) + "}")


def _string_text(text: str) -> str:
    """A string holding lone surrogates as JSON text: each surrogate as ``\\uXXXX``, the rest as orjson writes it."""
    pieces = _LONE_SURROGATE.split(text)  # text, surrogate, text, ...: the surrogates at odd indexes
    escaped = (
        f"\\u{ord(piece):04x}" if index % 2 else orjson.dumps(piece).decode()[1:-1]
        for index, piece in enumerate(pieces)
    )
    return '"' + "".join(escaped) + '"'


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # e.g. 1e400: valid JSON syntax, but no double holds it
        raise ValueError(f"number {text} is out of range")
    return value


def _too_deep(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests more than ``max_depth`` arrays/objects; level by level, as it may be
    deeper than Python's recursion limit allows a recursive walk."""
    containers = [value] if isinstance(value, (list, dict)) else []
    depth = 0
    while containers:
        depth += 1
        if depth > max_depth:
            return True
        containers = [
            child
            for container in containers
            for child in (container.values() if isinstance(container, dict) else container)
            if isinstance(child, (list, dict))
        ]
    return False


def _openings(text: bytes | str, end: int | None = None) -> int:
    """How many arrays/objects could open in ``text[:end]``: never fewer than its nesting depth."""
    if isinstance(text, str):
        return text.count("[", 0, end) + text.count("{", 0, end)
    return text.count(b"[", 0, end) + text.count(b"{", 0, end)


def nesting_problem(text: bytes, max_depth: int = MAX_DEPTH) -> str | None:
    """Why a recursive JSON parser (Python's ``json``, which protobuf's too uses) must not be given
    ``text``: it nests deeper than ``max_depth``. None when it may be: JSON within the depth, or text
    whose syntax error a parser meets within it (that parser says what is wrong). Found without
    recursion that could run out of stack, and at the cost of two byte counts for most texts."""
    if _openings(text) <= max_depth:
        return None
    too_deep = f"JSON nesting deeper than {max_depth} levels"
    try:
        value = orjson.loads(text)  # no Python frames per level; refuses past 1,024 levels
    except orjson.JSONDecodeError:
        # Deeper than orjson reads, or what orjson refuses and json reads (NaN, lone surrogates).
        try:
            value = json.loads(text)
        except RecursionError:
            return too_deep
        except json.JSONDecodeError as exc:
            # A parser deeper in the stack than this one could run out of it before the error.
            return None if _openings(exc.doc, exc.pos) <= max_depth else too_deep
        except ValueError:  # not UTF-8 text: no parser gets past its first bytes
            return None
    return too_deep if _too_deep(value, max_depth) else None


def loads(text: str, field: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Decode JSON text written by any E2A implementation, losslessly; errors name ``field``.

    ``max_depth`` is more than ``MAX_DEPTH`` only for documents that wrap E2A documents (a CloudEvent
    carrying a record is one level deeper than the record)."""
    if _canonical.is_canonical_object(text):  # the common case, checked without writing it back
        return orjson.loads(text)
    try:
        value = orjson.loads(text)
        # Texts orjson writes back identically need no other check: orjson writes 255 levels at most.
        if orjson.dumps(value) == text.encode():
            return value
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        pass  # lone surrogate escapes, deep nesting or malformed text: let json decide and explain
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise E2AValueError(field, f"JSON nesting deeper than {max_depth} levels") from None
    except ValueError as exc:  # also NaN/Infinity, a number out of range, an integer beyond the digit limit
        raise E2AValueError(field, f"invalid JSON text: {exc}") from None
    if _too_deep(value, max_depth):
        raise E2AValueError(field, f"JSON nesting deeper than {max_depth} levels")
    return value


def loads_object(text: str, field: str) -> dict[str, Any]:
    """``loads`` for the JSON-object slots; anything but an object is an error naming ``field``."""
    value = loads(text, field)
    if not isinstance(value, dict):
        raise E2ATypeError(field, f"expected JSON text of an object, got {type_name(value)}")
    return value


def canonical_object(text: str) -> dict[str, Any] | None:
    """The object ``text`` holds if ``text`` is exactly what ``dumps`` writes for it, else None.

    Such a text decodes losslessly (``loads`` gives the same object) and re-encodes to itself, so a
    field holding it can be forwarded as it is. None says nothing about validity: ``loads_object``
    judges any other text (other spacing or escapes, big integers, deep nesting, malformed).
    """
    # The check is orjson.dumps(orjson.loads(text)) == text, without the writing.
    return orjson.loads(text) if _canonical.is_canonical_object(text) else None


def check_value(value: Any, field: str) -> None:
    """Raise an error naming the exact path if ``value`` is not a JSON value E2A can carry."""
    _encodable(value, field, 0)
