"""Unit tests of the protobuf/JSON codec: presence, JSON-RPC id types, limits and errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from e2a.v1 import e2a_pb2
from e2a_grpc import (
    E2AAuth,
    E2AEnvelope,
    E2AFieldError,
    E2AFileRef,
    E2AProvenance,
    E2AResponse,
    E2ATypeError,
    E2AValueError,
)
from e2a_grpc.jsontext import MAX_DEPTH
from tests.support.strategies import assert_identical


def _through_bytes(envelope: E2AEnvelope) -> E2AEnvelope:
    return E2AEnvelope.from_bytes(envelope.to_bytes())


@pytest.mark.parametrize("rpc_id", [42, "42", 1.0, 0, "", 2**60, 2**64, -(2**70), -0.0, 1e308, None])
def test_jsonrpc_id_keeps_its_json_type(rpc_id: Any) -> None:
    for cls in (E2AEnvelope, E2AResponse):
        record = cls(jsonrpc_id=rpc_id)
        assert_identical(cls.from_bytes(record.to_bytes()).jsonrpc_id, rpc_id)
        assert_identical(cls.from_json(record.to_json()).jsonrpc_id, rpc_id)


def test_empty_string_and_null_are_different_values() -> None:
    envelope = E2AEnvelope(request_id="", session_id=None, method="", channel=None, timestamp="")
    back = _through_bytes(envelope)
    assert (back.request_id, back.session_id, back.method, back.channel, back.timestamp) == ("", None, "", None, "")
    assert E2AEnvelope(protocol_version=None).to_proto().HasField("protocol_version") is False
    assert _through_bytes(E2AEnvelope(protocol_version=None)).protocol_version is None


def test_agent_ref_null_and_empty_object_differ() -> None:
    assert _through_bytes(E2AEnvelope(agent_ref=None)).agent_ref is None
    assert _through_bytes(E2AEnvelope(agent_ref={})).agent_ref == {}


def test_auth_round_trips_with_header_order() -> None:
    auth = E2AAuth(bearer_token="secret", extra_headers={"z": "1", "a": "2", "m": ""}, _meta={"k": [1, 2.0]})
    back = _through_bytes(E2AEnvelope(auth=auth)).auth
    assert back is not None
    assert_identical(back.to_dict(), auth.to_dict())
    assert "secret" not in repr(auth)


def test_provenance_round_trips() -> None:
    provenance = E2AProvenance(source_protocol="", converter=None, converted_at="", details={"b": 2**70, "a": [1.0]})
    assert_identical(_through_bytes(E2AEnvelope(provenance=provenance)).provenance.to_dict(), provenance.to_dict())


def test_file_ref_dict_form() -> None:
    document = {"uri": "file:///a", "name": None, "mime_type": None, "size": 2**40, "_meta": {"x": None}}
    assert_identical(E2AFileRef.from_dict(document).to_dict(), document)
    with pytest.raises(E2ATypeError, match=r"file\.uri"):
        E2AFileRef.from_dict({"name": "x"})


def test_nesting_200_deep_survives() -> None:
    deep: Any = "leaf"
    for index in range(200):
        deep = [deep] if index % 2 else {"k": deep}
    envelope = E2AEnvelope(params={"deep": deep})
    assert_identical(_through_bytes(envelope).params, envelope.params)
    assert_identical(E2AEnvelope.from_json(envelope.to_json()).params, envelope.params)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 5, 5000, 100_000])
def test_too_deep_is_a_clear_error(depth: int) -> None:
    deep: Any = 1
    for _ in range(depth):
        deep = [deep]
    with pytest.raises(E2AValueError, match="nesting deeper"):
        E2AEnvelope(params={"deep": deep}).to_bytes()


def test_too_deep_json_text_from_a_peer_is_a_clear_error() -> None:
    text = "[" * 100_000 + "]" * 100_000
    message = e2a_pb2.E2AEnvelope(params='{"a":' + text + "}")
    with pytest.raises(E2AValueError, match="params"):
        E2AEnvelope.from_proto(message)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"x": float("nan")}, "params.x"),
        ({"x": [1, float("inf")]}, r"params.x\[1\]"),
        ({1: "int key"}, "params"),
        ({"x": object()}, "params.x"),
        ({"x": {"y": b"bytes"}}, "params.x.y"),
    ],
)
def test_values_that_are_not_json_name_their_path(params: dict[Any, Any], field: str) -> None:
    with pytest.raises(E2AFieldError, match=field):
        E2AEnvelope(params=params).to_bytes()


def test_invalid_scalars_set_on_a_model_name_the_field() -> None:
    envelope = E2AEnvelope()
    envelope.request_id = 5  # type: ignore[assignment]
    with pytest.raises(E2ATypeError, match="request_id"):
        envelope.to_bytes()
    response = E2AResponse(sequence=2**64)
    with pytest.raises(E2AValueError, match="sequence"):
        response.to_bytes()
    with pytest.raises(E2AValueError, match="request_id"):
        E2AEnvelope(request_id="\ud800").to_bytes()


def test_peer_json_text_is_validated() -> None:
    for text, problem in [("[1]", "object"), ("{", "invalid JSON"), ('{"a":NaN}', "invalid JSON")]:
        with pytest.raises(E2AFieldError, match=problem):
            E2AResponse.from_proto(e2a_pb2.E2AResponse(body=text))


def test_peer_json_text_in_any_style_decodes_exactly() -> None:
    # Another language's writer: spaces, escapes, big integers, duplicate-free but unusual floats.
    text = '{ "b" : [ 18446744073709551617, 1E2, -0.0, "\\u00e9\\ud83c\\udf0d" ], "a": {} }'
    body = E2AResponse.from_proto(e2a_pb2.E2AResponse(body=text)).body
    assert_identical(body, json.loads(text))


def test_non_finite_numbers_from_a_peer_are_rejected() -> None:
    with pytest.raises(E2AValueError, match="jsonrpc_id"):
        E2AEnvelope.from_proto(e2a_pb2.E2AEnvelope(jsonrpc_id=e2a_pb2.JsonRpcId(number_value=float("nan"))))
    with pytest.raises(E2AValueError, match="body"):
        E2AResponse.from_proto(e2a_pb2.E2AResponse(body='{"x": 1e400}'))


def test_corrupt_bytes_are_a_clear_error() -> None:
    with pytest.raises(E2AValueError, match=r"not a valid e2a\.v1\.E2AEnvelope"):
        E2AEnvelope.from_bytes(b"\xff\xff\xff")


def test_unset_proto_reads_as_e2a_defaults() -> None:
    envelope = E2AEnvelope.from_proto(e2a_pb2.E2AEnvelope())
    assert envelope.identity_origin.value == "user"
    assert envelope.provenance.source_protocol == "e2a"
    assert envelope.params == {} and envelope.expected_output_modes == [] and envelope.auth is None
    response = E2AResponse.from_proto(e2a_pb2.E2AResponse())
    assert response.identity_origin.value == "agent" and response.body == {}


def test_proto_json_names_are_the_e2a_names() -> None:
    for message in (e2a_pb2.E2AEnvelope, e2a_pb2.E2AResponse):
        for field in message.DESCRIPTOR.fields:
            assert field.json_name == field.name
    meta = {f.name: f.json_name for f in e2a_pb2.E2AAuth.DESCRIPTOR.fields}
    assert meta["meta"] == "_meta"


def test_canonical_key_order_is_the_protocol_order() -> None:
    assert list(E2AEnvelope().to_dict()) == [f.name for f in e2a_pb2.E2AEnvelope.DESCRIPTOR.fields]
    assert list(E2AResponse().to_dict()) == [f.name for f in e2a_pb2.E2AResponse.DESCRIPTOR.fields]
    assert len(E2AEnvelope().to_dict()) == 29 and len(E2AResponse().to_dict()) == 28


def test_null_for_a_field_that_is_never_null_reads_as_its_default() -> None:
    # As protobuf's JSON mapping reads null (issue 10); the other kinds keep their own null rules.
    assert E2AEnvelope.from_dict({"identity_origin": None}).identity_origin == "user"
    response = E2AResponse.from_dict({"identity_origin": None, "status": None, "response_kind": None})
    assert (response.identity_origin, response.status, response.response_kind) == ("agent", "in_progress", "")
    assert E2AEnvelope.from_json('{"protocol_version": null}').protocol_version is None
    with pytest.raises(E2ATypeError, match=r"provenance\.source_protocol"):
        E2AEnvelope.from_dict({"provenance": {"source_protocol": None}})
