"""``from_json``'s reader of a record dict in canonical form (exactly as ``to_dict`` writes it).

It skips the legacy readers and the copies. So it must accept only dicts that the full readers read to the very
same values and that the record writes back unchanged, and it should accept every dict that
``to_dict`` writes (read from text by orjson). The legacy readers' declarations it relies on (their ``fallback_keys`` in the schema,
``legacy.NORMALIZING``) are checked against what the readers do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc import E2AAuth, E2AEnvelope, E2AProvenance, E2AResponse, jsontext
from e2a_grpc.model import legacy, records
from e2a_grpc.model.fields import Kind
from tests.conftest import fewer_examples
from tests.support.outcomes import outcome
from tests.support.strategies import canonical_envelopes, canonical_responses, json_values

#: For the tests run once per legacy field (and value): dozens of them, so a twentieth of the profile's examples each.
FEW = fewer_examples(20)

RecordType = type[E2AEnvelope] | type[E2AResponse]

#: Each legacy reader's fallback keys, as the schema declares them for the fields it reads.
FALLBACK_KEYS: dict[Callable[[dict[str, Any]], Any], tuple[str, ...]] = {
    record_type.LEGACY_READERS[item.name]: item.fallback_keys
    for record_type in (E2AEnvelope, E2AResponse)
    for item in record_type.FIELDS
    if item.legacy_reader
}
#: Keys that only the legacy readers read.
LEGACY_KEYS = sorted({key for keys in FALLBACK_KEYS.values() for key in keys} - {"source_agent_id"})


def record_dicts(record_type: RecordType | None = None) -> st.SearchStrategy[tuple[RecordType, dict[str, Any]]]:
    """A record type (``record_type`` if given) and the ``to_dict()`` form of a record read from
    generated values."""
    values: dict[RecordType, st.SearchStrategy[dict[str, Any]]] = {
        E2AEnvelope: canonical_envelopes,
        E2AResponse: canonical_responses,
    }
    types = [record_type] if record_type is not None else list(values)

    def to_dict(chosen: RecordType) -> st.SearchStrategy[tuple[RecordType, dict[str, Any]]]:
        return values[chosen].map(lambda generated: (chosen, chosen.from_dict(generated).to_dict()))

    return st.sampled_from(types).flatmap(to_dict)


def _swap(items: list[tuple[str, Any]], index: int) -> list[tuple[str, Any]]:
    index %= len(items) - 1
    return [*items[:index], items[index + 1], items[index], *items[index + 2 :]]


@st.composite
def _mangled(draw: st.DrawFn, record_type: RecordType, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with one change that may or may not leave it in canonical form."""
    items = list(data.items())
    key = draw(st.sampled_from([key for key, _ in items]))
    change = draw(st.sampled_from(["swap", "drop", "add", "value", "string", "nested", "legacy"]))
    if change == "legacy":  # a value a legacy reader changes: padded, or null with a fallback field set
        name, reader = draw(st.sampled_from(list(record_type.LEGACY_READERS.items())))
        fallbacks = {key: "fallback" for key in FALLBACK_KEYS[reader] if key in data}
        return {**data, **fallbacks, name: draw(st.sampled_from([None, "", " padded ", "x"]))}
    if change == "swap":
        return dict(_swap(items, draw(st.integers(0, len(items)))))
    if change == "drop":
        return {name: value for name, value in items if name != key}
    if change == "add":
        return {**data, draw(st.sampled_from([*LEGACY_KEYS, "unknown", key])): draw(json_values)}
    if change == "value":
        return {**data, key: draw(json_values)}
    if change == "string":  # strings the strip readers change, and null where a fallback may apply
        return {**data, key: draw(st.sampled_from([" padded ", "", "  ", None, "x"]))}
    nested = data.get(key)
    if not isinstance(nested, dict) or len(nested) < 2:
        return data
    nested_items = list(nested.items())
    if draw(st.booleans()):
        return {**data, key: dict(_swap(nested_items, draw(st.integers(0, len(nested_items)))))}
    inner = draw(st.sampled_from([name for name, _ in nested_items]))
    return {**data, key: {**nested, inner: draw(json_values)}}


@given(record_dicts())
def test_every_dict_to_dict_writes_is_read_in_canonical_form(case: tuple[RecordType, dict[str, Any]]) -> None:
    record_type, data = case
    assert record_type._READ_CANONICAL(dict(data)) is not None
    text = jsontext.dumps(data)
    record = record_type.from_json(text)
    assert record.to_json() == text
    assert record.to_dict() == data


def _reads_as_the_readers_do(record_type: RecordType, data: dict[str, Any]) -> None:
    values = record_type._READ_CANONICAL(data)
    if values is None:
        return
    # The same values, types, key order and nested records as every field's reader gives ...
    assert repr(list(values.items())) == repr(list(record_type._read_every_field(data).items()))
    # ... and they write the dict they were read from.
    assert jsontext.dumps(record_type._plain(values.copy())) == jsontext.dumps(data)


#: A value of each JSON type, and strings that readers change.
SAMPLE_VALUES: list[Any] = [None, True, False, 0, 1, 1.5, "", " padded ", "x", "user", [], ["a"], [1], {}, {"a": 1}]


@pytest.mark.parametrize("record_type", [E2AEnvelope, E2AResponse])
@pytest.mark.parametrize("fallback", [None, "fallback"])
def test_each_field_with_any_type_of_value_reads_as_the_readers_do(record_type: RecordType, fallback: Any) -> None:
    """Each field of a default record's dict set to a value of each type, with the fields that
    legacy readers fall back on null or set."""
    fallback_fields = {key for keys in FALLBACK_KEYS.values() for key in keys} & set(record_type._NAMES)
    default = {**record_type().to_dict(), **dict.fromkeys(fallback_fields, fallback)}
    nested = {"provenance": E2AProvenance().to_dict(), "auth": E2AAuth().to_dict()}
    for name in record_type._NAMES:
        for value in [*SAMPLE_VALUES, nested.get(name)]:
            _reads_as_the_readers_do(record_type, {**default, name: value})
        if name in nested:  # each nested field with each type of value
            for inner in nested[name]:
                for value in SAMPLE_VALUES:
                    _reads_as_the_readers_do(record_type, {**default, name: {**nested[name], inner: value}})


@given(record_dicts().flatmap(lambda case: st.tuples(st.just(case[0]), _mangled(*case))))
def test_the_canonical_reader_reads_as_the_readers_do(case: tuple[RecordType, dict[str, Any]]) -> None:
    _reads_as_the_readers_do(*case)


@given(record_dicts().flatmap(lambda case: st.tuples(st.just(case[0]), _mangled(*case))))
def test_from_json_of_any_changed_text_is_from_dict(case: tuple[RecordType, dict[str, Any]]) -> None:
    record_type, data = case
    text = outcome(lambda: jsontext.dumps(data))
    if not isinstance(text, str):
        return  # not JSON text (a lone surrogate key written as an escape reads back differently: fine)
    eager = outcome(lambda: record_type.from_dict(jsontext.loads(text, "$")).to_json())
    assert outcome(lambda: record_type.from_json(text).to_json()) == eager


class _Recording(dict[str, Any]):
    """A dict that notes every key looked up in it."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.looked_up: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.looked_up.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.looked_up.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.looked_up.add(str(key))
        return super().__contains__(key)


LEGACY_FIELDS = [
    (record_type, name, reader)
    for record_type in (E2AEnvelope, E2AResponse)
    for name, reader in record_type.LEGACY_READERS.items()
]


def test_every_legacy_reader_is_bound_with_the_same_fallback_keys_everywhere() -> None:
    assert {reader for _, _, reader in LEGACY_FIELDS} == set(legacy.READERS.values()) >= legacy.NORMALIZING
    for record_type, name, reader in LEGACY_FIELDS:
        item = next(item for item in record_type.FIELDS if item.name == name)
        assert item.fallback_keys == FALLBACK_KEYS[reader], name


@pytest.mark.parametrize(
    ("record_type", "name", "reader"), LEGACY_FIELDS, ids=lambda item: getattr(item, "__name__", item)
)
def test_a_legacy_reader_reads_only_its_declared_keys(
    record_type: RecordType, name: str, reader: Callable[[dict[str, Any]], Any]
) -> None:
    @FEW
    @given(
        record_dicts(record_type),
        st.dictionaries(st.sampled_from(LEGACY_KEYS), json_values | st.sampled_from(["acp", " x ", {"value": "a2a"}])),
        st.booleans(),
    )
    def reads(case: tuple[RecordType, dict[str, Any]], legacy_values: dict[str, Any], null: bool) -> None:
        recording = _Recording({**case[1], **legacy_values, **({name: None} if null else {})})
        outcome(lambda: reader(recording))
        assert recording.looked_up <= {name, *FALLBACK_KEYS[reader]}

    reads()


@pytest.mark.parametrize(
    ("record_type", "name", "reader"), LEGACY_FIELDS, ids=lambda item: getattr(item, "__name__", item)
)
@pytest.mark.parametrize("text", [None, "", " padded ", "x", "acp"])
def test_a_reader_with_no_fallback_key_changes_only_what_it_declares(
    record_type: RecordType, name: str, reader: Callable[[dict[str, Any]], Any], text: str | None
) -> None:
    """Given none of its fallback keys, a legacy reader reads a value of the field's type as the
    field's kind does, unless it is NORMALIZING (it strips strings; null stays null)."""
    item = next(item for item in record_type.FIELDS if item.name == name)

    @FEW
    @given(record_dicts(record_type))
    def reads(case: tuple[RecordType, dict[str, Any]]) -> None:
        data = case[1]
        value = text if item.kind in (Kind.TEXT, Kind.PLAIN_TEXT) else data[name]
        given_data = {key: each for key, each in {**data, name: value}.items() if key not in FALLBACK_KEYS[reader]}
        read = outcome(lambda: reader(given_data))
        if reader in legacy.NORMALIZING:
            if value is None:
                assert read is None
            return
        assert repr(read) == repr(outcome(lambda: records._reader(item)(value, name)))

    reads()
