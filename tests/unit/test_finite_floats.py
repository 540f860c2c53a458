"""``_canonical.floats_finite``, which spares ``jsontext.dumps`` reading its output back to find a NaN
or an infinity (orjson writes them as null): True only if every float is finite, False only if one
is not, None where the walk cannot tell (other types, deep nesting), for the read-back to decide.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2a_grpc import E2AValueError, _canonical, jsontext
from tests.support.strategies import any_text, json_scalars

PROPERTY = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: The types whose values the C walk knows (exact types: a subclass may be written otherwise).
PLAIN_SCALARS = (str, int, bool, type(None))
MAX_LEVELS = 254


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


def _has(value: Any, found: Any, level: int = 0) -> bool:
    """Whether ``found(value, level)`` holds for ``value`` or anything in it (dict keys included)."""
    if found(value, level):
        return True
    if type(value) is dict:
        return any(_has(key, found, level + 1) or _has(item, found, level + 1) for key, item in value.items())
    if type(value) in (list, tuple):
        return any(_has(item, found, level + 1) for item in value)
    return False


def _not_finite(value: Any, level: int) -> bool:
    return type(value) is float and not math.isfinite(value)


def _unknown(value: Any, level: int) -> bool:
    """A value the walk does not look into, or a container nested too deep for it."""
    if type(value) in (dict, list, tuple):
        return level >= MAX_LEVELS
    return type(value) is not float and type(value) not in PLAIN_SCALARS


def _key_not_text(value: Any, level: int) -> bool:
    return type(value) is dict and any(type(key) is not str for key in value)


@PROPERTY
@given(values)
def test_the_walk_answers_only_what_it_knows(value: Any) -> None:
    finite = _canonical.floats_finite(value)
    unknown = _has(value, _unknown) or _has(value, _key_not_text)
    if finite is True:
        assert not unknown and not _has(value, _not_finite)
    elif finite is False:
        assert _has(value, _not_finite)
    else:
        assert finite is None and unknown
    if not unknown:
        assert finite is (not _has(value, _not_finite))


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
