"""The records' field tables: the dataclasses and the protobuf messages declare the same fields
(``record_fields`` refuses them at import otherwise; these tests check that it does)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from e2a.v1 import e2a_pb2
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.model import records
from e2a_grpc.model.fields import Kind, record_fields


@pytest.mark.parametrize(
    ("record", "message"), [(E2AEnvelope, e2a_pb2.E2AEnvelope), (E2AResponse, e2a_pb2.E2AResponse)]
)
def test_to_dict_writes_every_proto_field_in_order(record: Any, message: Any) -> None:
    # That the dataclass and FIELDS name the proto's fields in its order, record_fields checks at import.
    wire = [descriptor.name for descriptor in message.DESCRIPTOR.fields]
    assert list(record().to_dict()) == wire


def test_kinds_follow_the_declarations() -> None:
    kinds = {field.name: field.kind for field in E2AEnvelope.FIELDS}
    assert kinds["protocol_version"] is Kind.TEXT
    assert kinds["params"] is Kind.OBJECT
    assert kinds["agent_ref"] is Kind.OPTIONAL_OBJECT
    assert kinds["jsonrpc_id"] is Kind.JSONRPC_ID
    assert kinds["identity_origin"] is Kind.ORIGIN
    assert kinds["provenance"] is Kind.PROVENANCE
    assert kinds["auth"] is Kind.AUTH
    assert kinds["is_stream"] is Kind.FLAG
    assert kinds["expected_output_modes"] is Kind.TEXT_LIST
    response = {field.name: field.kind for field in E2AResponse.FIELDS}
    assert (response["sequence"], response["status"], response["body"]) == (Kind.INTEGER, Kind.PLAIN_TEXT, Kind.OBJECT)


def test_a_field_missing_on_one_side_is_refused() -> None:
    @dataclasses.dataclass
    class Partial:
        protocol_version: str | None = None

    with pytest.raises(TypeError, match=r"Partial fields \['protocol_version'\] differ from e2a\.v1\.E2AEnvelope"):
        record_fields(Partial, e2a_pb2.E2AEnvelope)


def test_fields_out_of_order_are_refused() -> None:
    names = [descriptor.name for descriptor in e2a_pb2.E2AResponse.DESCRIPTOR.fields]
    swapped = dataclasses.make_dataclass("Swapped", [(name, Any, None) for name in [names[1], names[0], *names[2:]]])
    with pytest.raises(TypeError, match="same names, same order"):
        record_fields(swapped, e2a_pb2.E2AResponse)


def test_a_default_other_than_the_schema_s_is_refused() -> None:
    declared = [(item.name, Any, item) for item in dataclasses.fields(E2AResponse)]
    changed = [
        (name, kind, dataclasses.field(default="succeeded")) if name == "status" else (name, kind, item)
        for name, kind, item in declared
    ]
    record = dataclasses.make_dataclass("Changed", changed)
    with pytest.raises(TypeError, match=r"Changed\.status defaults to 'succeeded', the schema to 'in_progress'"):
        record_fields(record, e2a_pb2.E2AResponse)


def test_a_legacy_reader_the_schema_names_must_exist() -> None:
    item = dataclasses.replace(E2AEnvelope.FIELDS[0], legacy_reader="no_such_reader")
    with pytest.raises(TypeError, match=r"no legacy reader 'no_such_reader' in model\.legacy"):
        records._legacy_reader(item)
