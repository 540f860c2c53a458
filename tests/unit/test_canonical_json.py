"""``_canonical.is_canonical_object`` answers exactly as its definition does: a JSON object that
orjson reads and writes back byte for byte.

The definition is written once, with orjson itself (``tests/support/canonical_json.py``); the C
check must agree with it on every text, canonical or not: the texts orjson writes, those other
writers produce, and mangled ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from e2a_grpc import _canonical, jsontext
from tests.support.canonical_json import is_canonical, portable_build
from tests.support.strategies import json_objects, json_values

# The portable variant of the C module is built with cc (tests/support/canonical_json.py).
pytestmark = pytest.mark.subprocess


def agree(text: str) -> None:
    expected = is_canonical(text)
    assert _canonical.is_canonical_object(text) is expected, text
    assert portable_build().is_canonical_object(text) is expected, text


def written(value: Any) -> str:
    """A value as jsontext writes it (big integers and lone surrogates included)."""
    return jsontext.dumps({"v": value})


# Characters JSON texts are made of, for mangled texts.
_JSON_ALPHABET = '{}[]",:0123456789.eE+-truefalsn \\/u\n\tab\x00\x1f\x7fé\u2028😀'
_EDITS = st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from(_JSON_ALPHABET))


@given(json_objects)
def test_what_jsontext_writes_is_canonical_unless_orjson_reads_it_otherwise(value: dict[str, Any]) -> None:
    # Big integers, lone surrogates and deep nesting are written, but orjson reads them otherwise.
    agree(jsontext.dumps(value))


@given(json_objects, st.sampled_from([{}, {"indent": 1}, {"ensure_ascii": True}, {"separators": (",", ":")}]))
def test_other_writers(value: dict[str, Any], options: dict[str, Any]) -> None:
    agree(json.dumps(value, **options))


@given(json_objects, st.lists(_EDITS, min_size=1, max_size=3), st.booleans())
@example({"a": 1}, [(5, ",")], False)
@example({"a": "x"}, [(6, "\\")], True)
def test_mangled_texts(value: dict[str, Any], edits: list[tuple[int, str]], insert: bool) -> None:
    text = jsontext.dumps(value)
    for position, character in edits:
        at = position % (len(text) + 1)
        text = text[:at] + character + text[at + (0 if insert else 1) :]
    agree(text)


@given(json_values)
def test_any_value_in_an_object(value: Any) -> None:
    agree(written(value))


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "",
        " {}",
        "{} ",
        "[]",
        "{}{}",
        '{"a":1,"a":2}',
        '{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}',  # past the pairwise check
        '{"a":{"b":1,"b":1}}',
        '{"k0":0,' + ",".join(f'"k{n}":{n}' for n in range(1, 500)) + "}",
        '{"k0":0,' + ",".join(f'"k{n}":{n}' for n in range(1, 500)) + ',"k7":7}',
        '{"a":-0}',
        '{"a":0}',
        '{"a":01}',
        '{"a":-}',
        '{"a":1.}',
        '{"a":.5}',
        '{"a":1e}',
        '{"a":9223372036854775807}',
        '{"a":-9223372036854775808}',
        '{"a":-9223372036854775809}',
        '{"a":18446744073709551615}',
        '{"a":18446744073709551616}',
        '{"a":100000000000000000000}',
        '{"a":1.0}',
        '{"a":1.00}',
        '{"a":1e16}',
        '{"a":1e+16}',
        '{"a":1E+16}',
        '{"a":1.5e-7}',
        '{"a":0.00001}',
        '{"a":-0.0}',
        '{"a":1e400}',
        '{"a":5e-324}',
        '{"a":1.7976931348623157e+308}',
        '{"a":0.1000000000000000055511151231257827021181583404541015625}',
        '{"a":true,"b":false,"c":null}',
        '{"a":tru}',
        '{"a":"\\u001f"}',
        '{"a":"\\u001F"}',
        '{"a":"\\u000a"}',
        '{"a":"\\n"}',
        '{"a":"\\/"}',
        '{"a":"\\u0041"}',
        '{"a":"\\ud83d\\ude00"}',
        '{"a":"\\ud800"}',
        '{"a":"\ud800"}',
        '{"a":"😀é\u2028\x7f"}',
        '{"a":"\x1f"}',
        '{"a":"unterminated}',
        '{"a":"abcdefgh\\"ijklmnop\\\\qrstuvwx"}',  # escapes past the 8-byte skip
        '{"a":"abcdefghijklmnop\nqrstuvwx"}',
        '{"a"}',
        '{"a":}',
        '{"a":1,}',
        '{,"a":1}',
        '{"a":[1,2,]}',
        '{"a":[,1]}',
        '{"a":[]}',
        "{1:2}",
    ],
)
def test_edge_cases(text: str) -> None:
    agree(text)


@pytest.mark.parametrize("levels", [2, 253, 254, 255, 256, 1100])
def test_nesting_where_orjson_stops_writing(levels: int) -> None:
    """orjson reads up to 1,024 levels, but writes at most 254."""
    agree('{"a":' + "[" * (levels - 1) + "]" * (levels - 1) + "}")
    agree("{" + '"a":{' * (levels - 1) + "}" * levels)


def test_only_str() -> None:
    with pytest.raises(TypeError, match="expected a str"):
        _canonical.is_canonical_object(b"{}")  # type: ignore[arg-type]
