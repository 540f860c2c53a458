"""What a canonical JSON object text is, written with orjson itself: the definition that
``e2a_grpc._canonical.is_canonical_object`` is tested (and fuzzed) against."""

from __future__ import annotations

import orjson


def is_canonical(text: str) -> bool:
    """A JSON object that orjson reads and writes back byte for byte (what ``jsontext.canonical_object``
    stood for before the check was in C)."""
    try:
        value = orjson.loads(text)
        return type(value) is dict and orjson.dumps(value) == text.encode()
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, UnicodeEncodeError):
        return False
