"""Protobuf messages cut into their top-level fields, for tests that repeat, move or drop whole fields."""

from __future__ import annotations


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and the offset after it; IndexError if the bytes end inside it."""
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if not byte & 0x80:
            return value, at


_FIXED_SIZES = {1: 8, 5: 4}  # I64, I32


def top_level_fields(data: bytes) -> list[bytes] | None:
    """Each top-level field of a message (tag and value), in order, or None if ``data`` is not a
    sequence of whole fields of wire types 0, 1, 2 and 5."""
    found = []
    at = 0
    try:
        while at < len(data):
            start = at
            tag, at = _varint(data, at)
            wire_type = tag & 7
            if wire_type == 0:
                _, at = _varint(data, at)
            elif wire_type == 2:
                size, at = _varint(data, at)
                at += size
            else:
                at += _FIXED_SIZES[wire_type]
            if at > len(data):
                return None
            found.append(data[start:at])
    except (IndexError, KeyError):
        return None
    return found


def field_number(field: bytes) -> int:
    """The number of a field as ``top_level_fields`` gives it."""
    return _varint(field, 0)[0] >> 3
