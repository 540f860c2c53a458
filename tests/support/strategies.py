"""Hypothesis strategies for E2A documents and arbitrary JSON values."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

# All of Unicode, lone surrogates included: JSON text can carry them as escapes.
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
# Scalar protobuf string fields must be valid Unicode.
unicode_text = st.text(max_size=12)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # unbounded
    st.integers(min_value=2**63 - 4, max_value=2**200),
    st.integers(min_value=-(2**200), max_value=-(2**63) + 4),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308, 5e-324, 1e16, 1.5]),
    any_text,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(any_text, children, max_size=5),
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(any_text, json_values, max_size=4)
# Most object slots are empty or small in practice; keep generation cheap for 1000-example runs.
slot_objects: st.SearchStrategy[dict[str, Any]] = st.just({}) | json_objects

optional_text = st.none() | unicode_text
jsonrpc_ids = st.one_of(
    st.none(),
    unicode_text,
    st.integers(),
    st.integers(min_value=2**64, max_value=2**100),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([42, "42", 1.0, 0, "", 2**60, -0.0]),
)
origins = st.sampled_from(["system", "user", "agent", "service"])


def _ordered(keys_and_strategies: list[tuple[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict strategy that keeps the given key order (st.fixed_dictionaries does not)."""
    keys = [key for key, _ in keys_and_strategies]
    strategies = (strategy for _, strategy in keys_and_strategies)
    return st.tuples(*strategies).map(lambda values: dict(zip(keys, values, strict=True)))


provenances = _ordered(
    [
        ("source_protocol", st.sampled_from(["e2a", "acp", "a2a", ""]) | unicode_text),
        ("converter", optional_text),
        ("converted_at", optional_text),
        ("details", slot_objects),
    ]
)
auths = st.none() | _ordered(
    [
        ("method_id", optional_text),
        ("bearer_token", optional_text),
        ("api_key_ref", optional_text),
        ("credential_ref", optional_text),
        ("extra_headers", st.dictionaries(unicode_text, unicode_text, max_size=4)),
        ("_meta", slot_objects),
    ]
)


canonical_envelopes = _ordered(
    [
        ("protocol_version", optional_text),
        ("provenance", provenances),
        ("request_id", optional_text),
        ("jsonrpc_id", jsonrpc_ids),
        ("correlation_id", optional_text),
        ("task_id", optional_text),
        ("context_id", optional_text),
        ("session_id", optional_text),
        ("message_id", optional_text),
        ("timestamp", optional_text),
        ("identity_origin", origins),
        ("channel", optional_text),
        ("user_id", optional_text),
        ("agent_ref", st.none() | slot_objects),
        ("chat_id", optional_text),
        ("source_agent_id", optional_text),
        ("agent_id", optional_text),
        ("service_id", optional_text),
        ("workspace_key", optional_text),
        ("method", optional_text),
        ("params", json_objects),
        ("ext_method", optional_text),
        ("session_update_kind", optional_text),
        ("is_stream", st.booleans()),
        ("expected_output_modes", st.lists(unicode_text, max_size=3)),
        ("auth", auths),
        ("channel_context", slot_objects),
        ("a2a_metadata", slot_objects),
        ("acp_meta", slot_objects),
    ]
)
canonical_responses = _ordered(
    [
        ("protocol_version", optional_text),
        ("response_id", optional_text),
        ("request_id", optional_text),
        ("sequence", st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        ("is_final", st.booleans()),
        ("status", st.sampled_from(["succeeded", "failed", "in_progress", ""]) | unicode_text),
        ("response_kind", st.sampled_from(["e2a.chunk", "e2a.complete", "e2a.error", ""]) | unicode_text),
        ("timestamp", optional_text),
        ("provenance", provenances),
        ("body", json_objects),
        ("jsonrpc_id", jsonrpc_ids),
        ("correlation_id", optional_text),
        ("task_id", optional_text),
        ("context_id", optional_text),
        ("session_id", optional_text),
        ("message_id", optional_text),
        ("is_stream", st.booleans()),
        ("identity_origin", origins),
        ("channel", optional_text),
        ("user_id", optional_text),
        ("agent_ref", st.none() | slot_objects),
        ("source_agent_id", optional_text),
        ("method", optional_text),
        ("projections", slot_objects),
        ("channel_context", slot_objects),
        ("metadata", slot_objects),
        ("a2a_metadata", slot_objects),
        ("acp_meta", slot_objects),
    ]
)


def assert_identical(actual: Any, expected: Any, path: str = "$") -> None:
    """Equal with Python type identity, key order, and the sign of zero."""
    assert type(actual) is type(expected), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, dict):
        assert list(actual) == list(expected), f"{path}: key order {list(actual)} != {list(expected)}"
        for key in expected:
            assert_identical(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
            assert_identical(got, want, f"{path}[{index}]")
    elif isinstance(expected, float):
        assert actual == expected and math.copysign(1, actual) == math.copysign(1, expected), f"{path}: {actual!r}"
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
