"""``_canonical.floats_finite``, which spares ``jsontext.dumps`` reading its output back to find a NaN
or an infinity (orjson writes them as null): True only if every float is finite, False only if one
is not, None where the walk cannot tell (other types, deep nesting), for the read-back to decide.
It must answer exactly as its definition in ``tests/support/canonical_json.py``.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc import E2AValueError, _canonical, jsontext
from tests.support.canonical_json import MAX_LEVELS, floats_finite
from tests.support.strategies import any_text, json_scalars


class Number(float, enum.Enum):
    NOT_A_NUMBER = math.nan


class Text(str):
    pass


values = st.recursive(
    json_scalars | st.sampled_from([math.nan, math.inf, -math.inf, Number.NOT_A_NUMBER, Text("x"), b"x"]),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(any_text, children, max_size=4),
        st.dictionaries(st.integers(), children, min_size=1, max_size=2),
    ),
    max_leaves=12,
)


@given(values)
def test_the_walk_answers_as_its_definition(value: Any) -> None:
    assert _canonical.floats_finite(value) is floats_finite(value)


@pytest.mark.parametrize("levels", [1, MAX_LEVELS - 1, MAX_LEVELS, MAX_LEVELS + 1, 3000])
@pytest.mark.parametrize("leaf", [1.5, math.nan])
def test_nesting(levels: int, leaf: float) -> None:
    value: Any = leaf
    for _ in range(levels):
        value = [value]
    expected = None if levels > MAX_LEVELS else math.isfinite(leaf)
    assert _canonical.floats_finite(value) is expected


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, {"b": math.nan}]},
        {"a": (None, -math.inf)},
        {"n": Number.NOT_A_NUMBER},  # orjson writes an Enum member by its value: null
        [None, math.inf],
    ],
)
def test_dumps_still_refuses_what_orjson_writes_as_null(value: Any) -> None:
    with pytest.raises(E2AValueError):
        jsontext.dumps(value)


def test_dumps_writes_nulls_and_tuples() -> None:
    assert jsontext.dumps({"a": None, "t": (None, 1.5)}) == '{"a":null,"t":[null,1.5]}'
