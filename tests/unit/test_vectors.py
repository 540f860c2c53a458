"""The conformance vectors of testdata/vectors, under the rules of testdata/README.md."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from e2a_grpc import (
    E2AEnvelope,
    E2AFieldError,
    E2AResponse,
    e2a_response_to_a2a_stream_payload,
    e2a_response_to_acp_jsonrpc_response,
    envelope_from_a2a_send_message,
    envelope_from_acp_jsonrpc,
    envelope_to_acp_jsonrpc_call,
    merge_params_to_acp_prompt,
)
from tests.support import vectors
from tests.support.wellformed import envelope_well_typed, response_well_typed


def _roundtrip(data: dict[str, Any]) -> dict[str, Any]:
    once = E2AEnvelope.from_dict(data).to_dict()
    twice = E2AEnvelope.from_dict(once).to_dict()
    return {"once": once, "twice": twice, "stable": once == twice}


def _merge(data: dict[str, Any]) -> dict[str, Any]:
    envelope = E2AEnvelope.from_dict(data)
    return {"result": merge_params_to_acp_prompt(envelope), "envelope_params_after": envelope.params}


# name -> (call on the vector's input, whether that input is well-typed)
CALLS: dict[str, tuple[Any, Any]] = {
    "E2AEnvelope.from_dict": (
        lambda i: E2AEnvelope.from_dict(i["data"]).to_dict(),
        lambda i: envelope_well_typed(i["data"]),
    ),
    "E2AEnvelope.roundtrip": (lambda i: _roundtrip(i["data"]), lambda i: envelope_well_typed(i["data"])),
    "E2AResponse.from_dict": (
        lambda i: E2AResponse.from_dict(i["data"]).to_dict(),
        lambda i: response_well_typed(i["data"]),
    ),
    "merge_params_to_acp_prompt": (
        lambda i: _merge(i["envelope_dict"]),
        lambda i: envelope_well_typed(i["envelope_dict"]),
    ),
    "envelope_to_acp_jsonrpc_call": (
        lambda i: envelope_to_acp_jsonrpc_call(E2AEnvelope.from_dict(i["envelope_dict"])),
        lambda i: envelope_well_typed(i["envelope_dict"]),
    ),
    "envelope_from_acp_jsonrpc": (
        lambda i: envelope_from_acp_jsonrpc(i["method"], i["params"], **i["kwargs"]).to_dict(),
        lambda i: envelope_well_typed({"params": i["params"], **i["kwargs"]}),
    ),
    "envelope_from_a2a_send_message": (
        lambda i: envelope_from_a2a_send_message(**i["kwargs"]).to_dict(),
        lambda i: True,
    ),
    "e2a_response_to_acp_jsonrpc_response": (
        lambda i: e2a_response_to_acp_jsonrpc_response(E2AResponse.from_dict(i["response_dict"])),
        lambda i: response_well_typed(i["response_dict"]),
    ),
    "e2a_response_to_a2a_stream_payload": (
        lambda i: e2a_response_to_a2a_stream_payload(E2AResponse.from_dict(i["response_dict"])),
        lambda i: response_well_typed(i["response_dict"]),
    ),
}

CASES = [
    pytest.param(name, case, id=f"{name}-{case['i']}") for name in vectors.VECTOR_FILES for case in vectors.load(name)
]


def test_all_vector_files_present() -> None:
    for name in vectors.VECTOR_FILES:
        assert vectors.load(name), f"{name}.jsonl is missing or empty"


@pytest.mark.parametrize(("name", "case"), CASES)
def test_vector(name: str, case: dict[str, Any]) -> None:
    call, well_typed = CALLS[name]
    expected = case["output"]
    try:
        actual = call(case["input"])
    except (ValueError, TypeError) as exc:
        # The reference raised too, or the input is ill-typed (where this implementation may be
        # stricter): either way the error must name the field.
        assert "raises" in expected or not well_typed(case["input"]), f"raised on well-typed input: {exc!r}"
        assert isinstance(exc, E2AFieldError) and exc.field, f"error does not name a field: {exc!r}"
        return
    assert "raises" not in expected, f"expected {expected['raises']}: {expected['message']}, got {actual!r}"
    vectors.assert_matches(actual, _nulls_as_defaults(name, case["input"], expected["ok"]), case.get("volatile", []))


# Where this implementation departs from the reference on purpose: a null for a field that is never
# null (identity_origin, status) reads as the field's default, as protobuf's JSON mapping reads it
# (issue 10); the reference copies the null (or its text) through.
_NULL_DEFAULTS: dict[str, tuple[type[E2AEnvelope] | type[E2AResponse], tuple[str, ...]]] = {
    "E2AEnvelope.from_dict": (E2AEnvelope, ()),
    "E2AEnvelope.roundtrip": (E2AEnvelope, ("once", "twice")),
    "E2AResponse.from_dict": (E2AResponse, ()),
}


def _nulls_as_defaults(name: str, given: dict[str, Any], expected: Any) -> Any:
    if name not in _NULL_DEFAULTS:
        return expected
    record, parts = _NULL_DEFAULTS[name]
    defaults = {field.name: field.default for field in record.FIELDS if field.name in ("identity_origin", "status")}
    nulls = {key: str(defaults[key]) for key in defaults if key in given["data"] and given["data"][key] is None}
    if not nulls:
        return expected
    adjusted = copy.deepcopy(expected)
    for document in [adjusted[part] for part in parts] if parts else [adjusted]:
        document.update(nulls)
    return adjusted
