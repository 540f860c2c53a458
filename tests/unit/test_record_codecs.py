"""``from_bytes`` / ``from_json`` and ``from_dict``'s shortcut read as the full readers do.

``from_json`` tries a reader of the canonical form first and ``from_dict`` one that takes values
of the types the readers return unchanged without calling them (both compiled per record class):
whatever a text or dict holds, the record must be the one the readers give, or the same error.
Records read from any binary message raise a clear error or write a message that reads back to
the same record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2a_grpc import E2AEnvelope, E2AResponse, jsontext
from e2a_grpc.model import records
from e2a_grpc.model.fields import Kind
from tests.support.outcomes import outcome
from tests.support.record_messages import RecordType, free_form_texts, messages, record_types
from tests.support.strategies import assert_identical, canonical_envelopes, canonical_responses, json_values

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

Record = E2AEnvelope | E2AResponse


def _writes(read: Callable[[], Record]) -> dict[str, Any]:
    """Everything a record writes, each from a freshly read one."""
    return {
        "bytes": outcome(lambda: read().to_bytes()),
        "json": outcome(lambda: read().to_json()),
        "proto": outcome(lambda: read().to_proto().SerializeToString()),
        "dict": outcome(lambda: json.dumps(read().to_dict(), default=repr)),
        "repr": outcome(lambda: repr(read())),
    }


@PROPERTY
@given(messages())
def test_any_message_reads_as_a_record_or_a_named_error(case: tuple[RecordType, bytes]) -> None:
    """Decoding may normalize (unknown fields dropped, "{}" written as ""), once: what a record
    writes reads back as the same record."""
    record_type, data = case
    read = outcome(lambda: record_type.from_bytes(data))
    if isinstance(read, tuple):
        assert read[0].__module__ == "e2a_grpc.errors" and read[1]
        return
    written = read.to_bytes()
    assert record_type.from_bytes(written) == read
    assert record_type.from_bytes(written).to_bytes() == written


def _canonical(values: dict[str, Any]) -> tuple[RecordType, dict[str, Any]]:
    record_type: RecordType = E2AResponse if "body" in values else E2AEnvelope
    return record_type, record_type.from_dict(values).to_dict()  # e.g. a blank agent_id reads as null


@PROPERTY
@given(canonical_envelopes | canonical_responses)
def test_an_unchanged_record_writes_its_input_back(values: dict[str, Any]) -> None:
    record_type, canonical = _canonical(values)
    data = record_type.from_dict(canonical).to_bytes()
    text = record_type.from_bytes(data).to_json()
    from_bytes, from_json = record_type.from_bytes(data), record_type.from_json(text)
    assert from_bytes.to_bytes() == data
    assert from_json.to_json() == text
    assert from_json.to_bytes() == data
    assert from_bytes.to_proto().SerializeToString() == data
    assert_identical(from_bytes.to_dict(), canonical)
    assert_identical(from_json.to_dict(), canonical)


# Changes through the public API, each applied alike to records read each way.
Change = Callable[[Record], None]


def _set_method(record: Record) -> None:
    record.method = "changed"


def _replace_free_form(record: Record) -> None:
    record.channel_context = {"replaced": [1, 2.5, None]}


def _change_free_form_in_place(record: Record) -> None:
    record.a2a_metadata["added"] = {"n": 2**70}


def _append_to_a_list(record: Record) -> None:
    record.provenance.details.setdefault("list", []).append("x")


def _change_nested_record(record: Record) -> None:
    record.provenance.converter = "changed"


def _put_nan_in_free_form(record: Record) -> None:
    record.acp_meta["bad"] = float("nan")


def _set_unknown_attribute(record: Record) -> None:
    record.extra = 1  # type: ignore[union-attr]  # not a field: written nowhere, refused by to_proto


CHANGES: list[Change] = [
    _set_method,
    _replace_free_form,
    _change_free_form_in_place,
    _append_to_a_list,
    _change_nested_record,
    _put_nan_in_free_form,
    _set_unknown_attribute,
]


@PROPERTY
@given(canonical_envelopes | canonical_responses, st.lists(st.sampled_from(CHANGES), min_size=1, max_size=3))
def test_changes_are_written_however_the_record_was_read(values: dict[str, Any], changes: list[Change]) -> None:
    """A record read from JSON text in canonical form shares the values the parser made: changes to
    them are written as changes to a record read from a dict are."""
    record_type, canonical = _canonical(values)
    data = record_type.from_dict(canonical).to_bytes()
    text = record_type.from_bytes(data).to_json()

    def changed(read: Callable[[], Record]) -> Callable[[], Record]:
        def record() -> Record:
            value = read()
            for change in changes:
                change(value)
            return value

        return record

    expected = _writes(changed(lambda: record_type.from_dict(canonical)))
    assert _writes(changed(lambda: record_type.from_bytes(data))) == expected
    assert _writes(changed(lambda: record_type.from_json(text))) == expected


def _documents() -> st.SearchStrategy[str]:
    """Wire JSON texts: canonical ones, legacy keys, ill-typed values, other styles, not JSON."""
    keys = st.sampled_from(
        [item.name for item in E2AEnvelope.FIELDS + E2AResponse.FIELDS]
        + ["channel_id", "req_method", "metadata", "payload", "binding", "app_id", "workspace_dir", "unknown"]
    )
    loose = st.dictionaries(keys, json_values, max_size=6).map(jsontext.dumps)
    canonical = (canonical_envelopes | canonical_responses).map(lambda values: E2AEnvelope.from_dict(values).to_json())
    return st.one_of(canonical, loose, loose.map(lambda text: json.dumps(json.loads(text))), free_form_texts)


@PROPERTY
@given(record_types, _documents())
def test_from_json_is_from_dict_for_any_text(record_type: RecordType, text: str) -> None:
    expected = outcome(lambda: record_type.from_dict(jsontext.loads(text, "$")))
    read = outcome(lambda: record_type.from_json(text))
    if isinstance(expected, tuple):
        assert read == expected
        return
    assert _writes(lambda: record_type.from_json(text)) == _writes(
        lambda: record_type.from_dict(jsontext.loads(text, "$"))
    )


SAMPLES: dict[type, list[Any]] = {
    str: ["", "x", " padded "],
    type(None): [None],
    bool: [True, False],
    int: [0, -(2**63), 2**70],
}


@pytest.mark.parametrize("kind", list(records._TAKEN_AS_IS))
def test_values_from_dict_takes_as_is_are_what_the_reader_returns(kind: Kind) -> None:
    """``from_dict`` skips the reader for these types: it must return them unchanged."""
    for value_type in records._TAKEN_AS_IS[kind]:
        for value in SAMPLES[value_type]:
            assert records._READERS[kind](value, "field") is value


@PROPERTY
@given(record_types, _documents().map(lambda text: outcome(lambda: jsontext.loads(text, "$"))))
def test_reading_takes_values_as_is_only_where_the_readers_would(record_type: RecordType, data: Any) -> None:
    """``from_dict``'s shortcut gives what calling every field's reader in field order gives."""
    if not isinstance(data, dict):
        return

    def repr_of(read: Callable[[], dict[str, Any]]) -> Any:
        return outcome(lambda: repr(list(read().items())))

    assert repr_of(lambda: record_type._read_dict(data)) == repr_of(lambda: record_type._read_every_field(data))
