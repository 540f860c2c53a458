"""What ``e2a_grpc._canonical`` answers, written in Python: the definitions its C functions are
tested (and fuzzed) against. A canonical JSON object text is defined with orjson itself."""

from __future__ import annotations

import math
from typing import Any

import orjson

#: The deepest level of nesting ``floats_finite`` walks into (orjson writes no more levels).
MAX_LEVELS = 254


def is_canonical(text: str) -> bool:
    """A JSON object that orjson reads and writes back byte for byte (what ``jsontext.canonical_object``
    stood for before the check was in C)."""
    try:
        value = orjson.loads(text)
        return type(value) is dict and orjson.dumps(value) == text.encode()
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, UnicodeEncodeError):
        return False


def floats_finite(value: Any, level: int = 0) -> bool | None:
    """True if every float in ``value`` is finite, False at the first (depth first, in order) that is
    not, None at the first value of another type than dict (with str keys), list, tuple, str, int,
    bool, None and float (exact types), or container below ``MAX_LEVELS`` levels."""
    if type(value) is float:
        return math.isfinite(value)
    if type(value) in (str, int, bool) or value is None:
        return True
    if level >= MAX_LEVELS or type(value) not in (dict, list, tuple):
        return None
    for key, item in value.items() if type(value) is dict else enumerate(value):
        if type(value) is dict and type(key) is not str:
            return None
        finite = floats_finite(item, level + 1)
        if finite is not True:
            return finite
    return True
