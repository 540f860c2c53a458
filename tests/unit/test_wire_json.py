"""The E2A wire JSON of docs/wire-json.md: ``jsontext.dumps`` writes it byte for byte on every path.

orjson writes most documents directly; documents holding an integer beyond 64 bits, a lone surrogate
or more than 255 levels of nesting take the fallback path. Both must give the same bytes for the
same values, so the same value may not be written two ways depending on what else the document holds.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from e2a.v1 import e2a_pb2
from e2a_grpc import E2AEnvelope, E2AFieldError, E2AResponse, E2AValueError, jsontext
from e2a_grpc.jsontext import MAX_DEPTH

STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')  # a JSON string literal, escapes included
BIG = 2**70  # beyond 64 bits: forces the fallback path
SURROGATE = "\ud800"  # a lone surrogate: forces the fallback path

# Floats around the points where the notation changes, and the extremes.
EDGE_FLOATS = [0.0, -0.0, 1.0, 1e-5, 1.5e-05, 9.999999999999999e-06, 1e-06, 1e-7, 0.0001, 1e15, 9999999999999998.0]
EDGE_FLOATS += [1e16, 1.5e16, 1e21, 1e22, 1e308, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 0.1]
finite_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EDGE_FLOATS)
# Values orjson writes directly: 64-bit integers, valid Unicode, shallow.
direct_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    finite_floats,
    st.text(max_size=8),
)
direct_values = st.recursive(
    direct_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12,
)


def float_text(value: float) -> str:
    """The number text docs/wire-json.md prescribes, built from Python's shortest round-trip digits."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # The decimal exponent of the first significant digit: value = d.ddd x 10**exponent.
    exponent = int(exponent_text or 0) + len(whole) - 1 - (len(whole + fraction) - len((whole + fraction).lstrip("0")))
    digits = digits.rstrip("0")
    if -5 <= exponent < 16:
        if exponent < 0:
            return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
        return f"{sign}{digits[: exponent + 1].ljust(exponent + 1, '0')}.{digits[exponent + 1 :] or '0'}"
    significand = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{significand}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


@given(direct_values)
def test_a_big_integer_elsewhere_does_not_change_how_a_value_is_written(value: Any) -> None:
    text = jsontext.dumps(value)
    assert jsontext.dumps([value, BIG]) == f"[{text},{BIG}]"
    assert jsontext.dumps({"v": value, "big": -BIG}) == f'{{"v":{text},"big":{-BIG}}}'


@given(direct_values)
def test_a_lone_surrogate_elsewhere_does_not_change_how_a_value_is_written(value: Any) -> None:
    text = jsontext.dumps(value)
    assert jsontext.dumps([value, SURROGATE]) == f'[{text},"\\ud800"]'
    assert jsontext.dumps({SURROGATE: value}) == f'{{"\\ud800":{text}}}'


@given(direct_values)
def test_deep_nesting_does_not_change_how_a_value_is_written(value: Any) -> None:
    nested: Any = value
    for _ in range(300):  # beyond orjson's own 255 levels
        nested = [nested]
    assert jsontext.dumps(nested) == "[" * 300 + jsontext.dumps(value) + "]" * 300


@given(finite_floats)
@example(1.5e-05)
@example(1e-06)
def test_floats_are_written_as_the_document_says_on_both_paths(value: float) -> None:
    expected = float_text(value)
    assert jsontext.dumps(value) == expected
    assert jsontext.dumps([value, BIG]) == f"[{expected},{BIG}]"
    assert jsontext.dumps([value, SURROGATE]) == f'[{expected},"\\ud800"]'
    assert float(expected) == value and math.copysign(1.0, float(expected)) == math.copysign(1.0, value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5e-05, "0.000015"),
        (1e-05, "0.00001"),
        (1e-06, "1e-6"),
        (9.999999999999999e-06, "9.999999999999999e-6"),
        (1e16, "1e+16"),
        (9999999999999998.0, "9999999999999998.0"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (5e-324, "5e-324"),
        (1e308, "1e+308"),
        (0.1, "0.1"),
    ],
)
def test_float_examples_of_the_document(value: float, text: str) -> None:
    assert jsontext.dumps(value) == text
    assert jsontext.dumps([value, BIG]) == f"[{text},{BIG}]"


def test_integers_of_any_size_are_written_as_their_digits() -> None:
    for value in (0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 10**300, -(10**4299)):
        assert jsontext.dumps(value) == str(value)
        assert jsontext.loads(str(value), "x") == value


def _escaped(character: str) -> str:
    """How the document says a character inside a string is written."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if character in short:
        return short[character]
    if ord(character) < 0x20 or 0xD800 <= ord(character) <= 0xDFFF:
        return f"\\u{ord(character):04x}"
    return character


ESCAPE_SAMPLES = [chr(code) for code in range(0x20)] + ['"', "\\", "/", "\x7f", "\u2028", "\u2029", "é", "\ufeff"]
ESCAPE_SAMPLES += ["\U0010ffff", "😀", "\ud800", "\udbff", "\udc00", "\udfff"]


@pytest.mark.parametrize("character", ESCAPE_SAMPLES, ids=lambda c: f"U+{ord(c):04X}")
def test_string_escaping_rules(character: str) -> None:
    escaped = _escaped(character)
    assert jsontext.dumps(character) == f'"{escaped}"'
    assert jsontext.dumps({character: [character, BIG]}) == f'{{"{escaped}":["{escaped}",{BIG}]}}'
    assert jsontext.dumps({"k": character, "s": SURROGATE}) == f'{{"k":"{escaped}","s":"\\ud800"}}'
    assert jsontext.loads(jsontext.dumps(character), "x") == character


@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=12))
def test_every_string_follows_the_escaping_rules(text: str) -> None:
    expected = '"' + "".join(_escaped(character) for character in text) + '"'
    assert jsontext.dumps(text) == expected
    assert jsontext.dumps([text, BIG]) == f"[{expected},{BIG}]"


@given(st.dictionaries(st.text(max_size=4), direct_values, max_size=4))
def test_separators_are_compact(value: dict[str, Any]) -> None:
    for document in (value, {**value, "big": BIG}, {**value, "s": SURROGATE}):
        outside_strings = STRING_LITERAL.sub("", jsontext.dumps(document))
        assert not any(space in outside_strings for space in " \n\r\t"), outside_strings


def test_nesting_limit_is_the_same_on_every_path() -> None:
    for filler in ([], [BIG], [SURROGATE]):
        deepest: Any = list(filler)
        for _ in range(MAX_DEPTH - 1):
            deepest = [deepest]
        text = jsontext.dumps(deepest)
        assert jsontext.loads(text, "params") == deepest
        with pytest.raises(E2AValueError, match=f"nesting deeper than {MAX_DEPTH}"):
            jsontext.dumps([deepest])
        with pytest.raises(E2AValueError, match="params") as raised:
            jsontext.loads(f"[{text}]", "params")
        assert raised.value.field == "params"


def test_orjson_depth_edge_reads_back() -> None:
    """Texts between orjson's 255 levels (encoding) and 1,024 (decoding) are read by the fallback."""
    for depth in (254, 255, 256, 300):
        text = "[" * depth + "1" + "]" * depth
        assert jsontext.dumps(jsontext.loads(text, "x")) == text


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"big": BIG, "x": float("nan")}, "$.x"),
        ({"s": SURROGATE, "x": [1, float("inf")]}, "$.x[1]"),
        ({"big": BIG, 1: "int key"}, "$"),
        ({"big": BIG, "x": object()}, "$.x"),
        ({"x": 10**5000}, "$.x"),
    ],
)
def test_fallback_path_errors_name_the_path(value: Any, field: str) -> None:
    with pytest.raises(E2AFieldError) as raised:
        jsontext.dumps(value)
    assert raised.value.field == field


def test_parsed_values_skip_the_nan_check_but_keep_the_text() -> None:
    value = {"a": None, "b": [1.5e-05, BIG]}
    assert jsontext.dumps(value, parsed=True) == jsontext.dumps(value) == f'{{"a":null,"b":[0.000015,{BIG}]}}'


@pytest.mark.parametrize(
    ("record_type", "message_type"), [(E2AEnvelope, e2a_pb2.E2AEnvelope), (E2AResponse, e2a_pb2.E2AResponse)]
)
def test_wire_json_keys_are_every_field_in_proto_order(record_type: Any, message_type: Any) -> None:
    wire = record_type.from_proto(message_type()).to_json()
    assert list(json.loads(wire)) == [field.name for field in message_type.DESCRIPTOR.fields]
    assert wire.startswith('{"protocol_version":null,')  # an unset optional field of the message is null
    # An absent key of wire JSON is the record's default instead.
    assert record_type.from_json("{}").to_json().startswith('{"protocol_version":"1.0",')


def _nested(depth: int, inner: str = "") -> bytes:
    return ("[" * depth + inner + "]" * depth).encode()


@pytest.mark.parametrize(
    ("text", "too_deep"),
    [
        (_nested(MAX_DEPTH), False),
        (_nested(MAX_DEPTH + 1), True),
        (_nested(100_000), True),  # past orjson's 1,024 levels: json's recursion limit speaks
        (b"[" * 100_000, True),  # never closed: too deep before the error a parser would meet
        (_nested(MAX_DEPTH + 1, "NaN"), True),  # orjson refuses NaN; json reads it
        (_nested(MAX_DEPTH - 1, "NaN"), False),
        (b"[]" * 10 * MAX_DEPTH, False),  # many arrays, none deep
        (b'"' + b"[" * 2 * MAX_DEPTH + b'"', False),  # brackets in a string
        (b"x" + b"[" * 2 * MAX_DEPTH, False),  # a syntax error before any nesting: its parser says so
        (b"\xff" + _nested(2 * MAX_DEPTH), False),  # not UTF-8: likewise
    ],
)
def test_nesting_problem_names_json_nested_past_the_limit_without_recursing(text: bytes, too_deep: bool) -> None:
    problem = jsontext.nesting_problem(text)
    assert problem == (f"JSON nesting deeper than {MAX_DEPTH} levels" if too_deep else None)
