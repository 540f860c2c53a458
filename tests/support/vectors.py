"""Loading and comparing the conformance vectors of testdata/vectors (rules in testdata/README.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.conftest import VECTORS_DIR

RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(\+00:00|Z)$")

VECTOR_FILES = (
    "E2AEnvelope.from_dict",
    "E2AEnvelope.roundtrip",
    "E2AResponse.from_dict",
    "merge_params_to_acp_prompt",
    "envelope_to_acp_jsonrpc_call",
    "envelope_from_acp_jsonrpc",
    "envelope_from_a2a_send_message",
    "e2a_response_to_acp_jsonrpc_response",
    "e2a_response_to_a2a_stream_payload",
)


def load(name: str) -> list[dict[str, Any]]:
    path = VECTORS_DIR / f"{name}.jsonl"
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _get(document: Any, dotted: str) -> tuple[Any, str]:
    *parents, last = dotted.split(".")
    for key in parents:
        document = document[key]
    return document, last


def assert_matches(actual: Any, expected: Any, volatile: list[str]) -> None:
    """Exact equality (key order included) after the README's volatile/converter rules."""
    actual = json.loads(json.dumps(actual))
    expected = json.loads(json.dumps(expected))
    for dotted in volatile:
        got_parent, key = _get(actual, dotted)
        want_parent, _ = _get(expected, dotted)
        assert isinstance(got_parent[key], str) and RFC3339_UTC.match(got_parent[key]), (
            f"{dotted} should be an RFC 3339 UTC timestamp, got {got_parent[key]!r}"
        )
        got_parent[key] = want_parent[key]
    _apply_converter_rule(actual, expected)
    assert json.dumps(actual) == json.dumps(expected)  # compares key order too


def _apply_converter_rule(actual: Any, expected: Any) -> None:
    for got, want in _walk_pairs(actual, expected):
        if want.get("converter") == "<default>" and isinstance(got.get("converter"), str) and got["converter"]:
            got["converter"] = "<default>"


def _walk_pairs(actual: Any, expected: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    if isinstance(actual, dict) and isinstance(expected, dict):
        yield actual, expected
        for key, value in expected.items():
            if key in actual:
                yield from _walk_pairs(actual[key], value)
