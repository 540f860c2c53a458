"""Property tests of the lossless guarantees: dict -> protobuf bytes -> dict and dict -> JSON -> dict."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.model import proto
from tests.support.strategies import (
    assert_identical,
    canonical_envelopes,
    canonical_responses,
    json_objects,
    json_values,
)

# How many examples: the hypothesis profile (tests/conftest.py; HYPOTHESIS_PROFILE=thorough for 1000).
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(canonical_envelopes)
def test_envelope_dict_bytes_dict(envelope: dict[str, Any]) -> None:
    data = proto.encode(envelope, E2AEnvelope.CODEC).SerializeToString()  # the dict as it is, not read by from_dict
    assert_identical(E2AEnvelope.from_bytes(data).to_dict(), envelope)


@PROPERTY
@given(canonical_responses)
def test_response_dict_bytes_dict(response: dict[str, Any]) -> None:
    data = proto.encode(response, E2AResponse.CODEC).SerializeToString()  # the dict as it is, not read by from_dict
    assert_identical(E2AResponse.from_bytes(data).to_dict(), response)


@PROPERTY
@given(canonical_envelopes)
def test_envelope_model_bytes_and_json(envelope: dict[str, Any]) -> None:
    canonical = E2AEnvelope.from_dict(envelope).to_dict()
    model = E2AEnvelope.from_dict(canonical)
    assert_identical(E2AEnvelope.from_bytes(model.to_bytes()).to_dict(), canonical)
    text = model.to_json()
    again = E2AEnvelope.from_json(text)
    assert_identical(again.to_dict(), canonical)
    assert again.to_json() == text


@PROPERTY
@given(canonical_responses)
def test_response_model_bytes_and_json(response: dict[str, Any]) -> None:
    canonical = E2AResponse.from_dict(response).to_dict()
    assert_identical(canonical, response)  # a canonical response reads back unchanged
    model = E2AResponse.from_dict(canonical)
    assert_identical(E2AResponse.from_bytes(model.to_bytes()).to_dict(), canonical)
    text = model.to_json()
    again = E2AResponse.from_json(text)
    assert_identical(again.to_dict(), canonical)
    assert again.to_json() == text


@PROPERTY
@given(json_objects, json_values)
def test_free_form_fields_keep_any_json(params: dict[str, Any], value: Any) -> None:
    """Every free-form slot keeps any JSON value, through bytes and through JSON text."""
    nested = {"value": value, "params": params}
    envelope = E2AEnvelope(
        params=params,
        agent_ref=nested,
        channel_context=nested,
        a2a_metadata={"v": value},
        acp_meta={"v": value},
    )
    envelope.provenance.details = {"v": value}
    expected = envelope.to_dict()
    assert_identical(E2AEnvelope.from_bytes(envelope.to_bytes()).to_dict(), expected)
    assert_identical(E2AEnvelope.from_json(envelope.to_json()).to_dict(), expected)
    response = E2AResponse(body=nested, projections={"acp": value}, metadata=params)
    expected = response.to_dict()
    assert_identical(E2AResponse.from_bytes(response.to_bytes()).to_dict(), expected)
    assert_identical(E2AResponse.from_json(response.to_json()).to_dict(), expected)
