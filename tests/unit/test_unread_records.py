"""Records read by ``from_bytes`` / ``from_json`` stay unread until an attribute is read.

They must be indistinguishable from records decoded at once (``from_proto``, ``from_dict``): the
same errors raised by the same call, the same bytes, JSON, messages and dicts written, and any
change made through the public API written out.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf.message import DecodeError, Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2a.v1 import e2a_pb2
from e2a_grpc import E2AEnvelope, E2AResponse, jsontext
from e2a_grpc import _canonical as native
from e2a_grpc.model import records
from e2a_grpc.model.fields import Kind
from tests.support.outcomes import outcome
from tests.support.record_messages import RecordType, free_form_texts, messages, record_types
from tests.support.strategies import (
    assert_identical,
    canonical_envelopes,
    canonical_responses,
    json_values,
    unicode_text,
)
from tests.support.wire import field_number, top_level_fields

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

Record = E2AEnvelope | E2AResponse


def _writes(read: Callable[[], Record]) -> dict[str, Any]:
    """Everything a record writes, each from a freshly read one (reading an attribute decodes it)."""
    return {
        "bytes": outcome(lambda: read().to_bytes()),
        "json": outcome(lambda: read().to_json()),
        "proto": outcome(lambda: read().to_proto().SerializeToString()),
        "dict": outcome(lambda: json.dumps(read().to_dict(), default=repr)),
        "repr": outcome(lambda: repr(read())),
    }


def _is_unread(record: Record) -> bool:
    return set(vars(record)) == {"_unread"}


@PROPERTY
@given(messages())
def test_from_bytes_is_from_proto_for_any_message(case: tuple[RecordType, bytes]) -> None:
    record_type, data = case

    def decoded_at_once() -> Record:
        message: Any = record_type.CODEC.message_type.FromString(data)
        return record_type.from_proto(message)

    eager = outcome(decoded_at_once)
    lazy = outcome(lambda: record_type.from_bytes(data))
    if isinstance(eager, tuple):  # the same error, raised by from_bytes itself
        assert lazy == eager
        return
    assert lazy == eager
    assert _writes(lambda: record_type.from_bytes(data)) == _writes(decoded_at_once)


def _plans(plan: Any) -> list[Any]:
    """A wire plan and the plans of the messages it checks, nested ones included."""
    nested = [check[2][0] for check in plan[0] if check is not None and check[1] == native.ACTION_MESSAGE]
    return [plan, *(inner for outer in nested for inner in _plans(outer))]


ALL_PLANS = [plan for record_type in (E2AEnvelope, E2AResponse) for plan in _plans(record_type.CODEC.wire_plan)]


@st.composite
def _rearranged(draw: st.DrawFn) -> tuple[RecordType, bytes]:
    """A message with whole fields repeated (the parser merges a repeated message field) or dropped."""
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        record_type, data = draw(messages())
    else:  # mostly messages kept unread, as long as no field is repeated; auth is the one merge that collapses
        values = draw(canonical_envelopes.map(dict) | canonical_responses)
        if "auth" in values and draw(st.booleans()):
            values["auth"] = {
                "extra_headers": draw(st.dictionaries(unicode_text, unicode_text, min_size=1, max_size=3))
            }
        record_type, values = _canonical(values)
        data = record_type.dict_to_bytes(values)
    parts = top_level_fields(data)
    assert parts is not None
    descriptor = record_type.CODEC.message_type.DESCRIPTOR
    message_numbers = {field.number for field in descriptor.fields if field.message_type is not None}
    if draw(st.booleans()):  # every message field twice: the parser merges the parts
        parts = [twice for part in parts for twice in [part] * (2 if field_number(part) in message_numbers else 1)]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        if parts:
            repeated = parts[draw(st.integers(min_value=0, max_value=len(parts) - 1))]
            parts.insert(draw(st.integers(min_value=0, max_value=len(parts))), repeated)
        if draw(st.booleans()) and parts:
            del parts[draw(st.integers(min_value=0, max_value=len(parts) - 1))]
    return record_type, b"".join(parts)


@st.composite
def _mangled(draw: st.DrawFn) -> tuple[RecordType, bytes]:
    """A message with bytes overwritten, inserted or cut off: mostly not one upb reads."""
    record_type, data = draw(messages())
    out = bytearray(data)
    for at, byte in draw(
        st.lists(st.tuples(st.integers(min_value=0, max_value=4096), st.integers(0, 255)), max_size=3)
    ):
        out.insert(at % (len(out) + 1), byte)
    return record_type, bytes(out[: draw(st.integers(min_value=0, max_value=len(out)))])


def _kept_only_if_decoding_changes_nothing(record_type: RecordType, data: bytes) -> None:
    """Every plan answers for ``data`` without raising; True on a message upb reads means keeping it
    unread writes what decoding it at once writes."""
    for plan in ALL_PLANS:
        assert type(native.message_round_trips(data, plan)) is bool
    if not native.message_round_trips(data, record_type.CODEC.wire_plan):
        return
    try:
        record_type.CODEC.message_type.FromString(data)
    except DecodeError:
        return  # from_bytes raises before asking

    def decoded_at_once() -> Record:
        message: Any = record_type.CODEC.message_type.FromString(data)
        return record_type.from_proto(message)

    assert _writes(lambda: record_type.from_bytes(data)) == _writes(decoded_at_once)


@PROPERTY
@given(record_types.flatmap(lambda kind: st.tuples(st.just(kind), st.binary(max_size=200))) | _mangled())
def test_the_round_trip_check_takes_any_bytes(case: tuple[RecordType, bytes]) -> None:
    _kept_only_if_decoding_changes_nothing(*case)


@PROPERTY
@given(_rearranged())
def test_the_round_trip_check_sees_repeated_fields(case: tuple[RecordType, bytes]) -> None:
    _kept_only_if_decoding_changes_nothing(*case)


@pytest.mark.parametrize(
    ("data", "plan"),
    [
        (b"", ()),
        (b"", ("fields", 0, 0)),
        (b"", ((), 2**64, 0)),  # a mask beyond 64 bits
        (b"\x08\x01", ((None, "check"), 0, 0)),
        (b"\x08\x01", ((None, (0, "action", None)), 0, 0)),
        (b"\x08\x01", ((None, (0, native.ACTION_ENUM, "mask")), 0, 0)),
        (b"\x0d\x00\x00\x80\x7f", ((None, (native.WIRE_I32, native.ACTION_FINITE_DOUBLE, None)), 0, 0)),
        (b"\x0b", ((None, (3, native.ACTION_SKIP, None)), 0, 0)),  # a group: no plan has one
        (b"\x0a\x00", ((None, (native.WIRE_LEN, native.ACTION_MESSAGE, ())), 0, 0)),
    ],
)
def test_a_malformed_plan_is_a_type_error(data: bytes, plan: Any) -> None:
    with pytest.raises((TypeError, OverflowError)):
        native.message_round_trips(data, plan)


def test_an_unknown_action_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown action"):
        native.message_round_trips(b"\x08\x01", ((None, (native.WIRE_VARINT, 99, None)), 0, 0))


_HEADER_A1 = e2a_pb2.HttpHeader(name="X-A", value="1")


@pytest.mark.parametrize(
    ("field", "first", "second"),
    [
        # Each part's header names are distinct, the merged auth's are not (the check saw each part).
        ("auth", e2a_pb2.E2AAuth(extra_headers=[_HEADER_A1]), e2a_pb2.E2AAuth(extra_headers=[_HEADER_A1])),
        ("auth", e2a_pb2.E2AAuth(extra_headers=[_HEADER_A1]), e2a_pb2.E2AAuth(meta='{"k":1}')),
        ("provenance", e2a_pb2.E2AProvenance(source_protocol="acp"), e2a_pb2.E2AProvenance(source_protocol="e2a")),
        ("jsonrpc_id", e2a_pb2.JsonRpcId(string_value="a"), e2a_pb2.JsonRpcId(integer_value=5)),
    ],
)
def test_a_message_field_in_parts_is_decoded_at_once(field: str, first: Message, second: Message) -> None:
    """The parser merges the parts of a singular message field; the codec never writes parts."""
    message = E2AEnvelope.from_dict(SPEC_EXAMPLE).to_proto()
    message.ClearField(field)
    data = message.SerializeToString()
    for part in (first, second):
        holder = e2a_pb2.E2AEnvelope()
        getattr(holder, field).CopyFrom(part)
        data += holder.SerializeToString()
    record = E2AEnvelope.from_bytes(data)
    assert not _is_unread(record)
    assert record.to_bytes() == E2AEnvelope.from_proto(e2a_pb2.E2AEnvelope.FromString(data)).to_bytes()


def _canonical(values: dict[str, Any]) -> tuple[RecordType, dict[str, Any]]:
    record_type: RecordType = E2AResponse if "body" in values else E2AEnvelope
    return record_type, record_type.from_dict(values).to_dict()  # e.g. a blank agent_id reads as null


@PROPERTY
@given(canonical_envelopes | canonical_responses)
def test_an_unchanged_record_writes_its_input_back(values: dict[str, Any]) -> None:
    record_type, canonical = _canonical(values)
    data = record_type.dict_to_bytes(canonical)
    text = record_type.from_bytes(data).to_json()
    from_bytes, from_json = record_type.from_bytes(data), record_type.from_json(text)
    assert from_bytes.to_bytes() == data
    assert from_json.to_json() == text
    assert from_bytes.to_json() == text
    assert from_json.to_bytes() == data
    assert from_bytes.to_proto().SerializeToString() == data
    assert _is_unread(from_json)  # written without decoding an attribute
    assert_identical(from_bytes.to_dict(), canonical)
    assert_identical(from_json.to_dict(), canonical)
    assert not _is_unread(from_bytes) and not _is_unread(from_json)


# Changes through the public API, each applied alike to a record read lazily and to one decoded at once.
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
def test_changes_to_an_unread_record_are_written(values: dict[str, Any], changes: list[Change]) -> None:
    record_type, canonical = _canonical(values)
    data = record_type.dict_to_bytes(canonical)
    text = record_type.from_bytes(data).to_json()

    def changed(read: Callable[[], Record]) -> Callable[[], Record]:
        def record() -> Record:
            value = read()
            for change in changes:
                change(value)
            return value

        return record

    eager = _writes(changed(lambda: record_type.from_dict(canonical)))
    assert _writes(changed(lambda: record_type.from_bytes(data))) == eager
    assert _writes(changed(lambda: record_type.from_json(text))) == eager


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
    eager = outcome(lambda: record_type.from_dict(jsontext.loads(text, "$")))
    lazy = outcome(lambda: record_type.from_json(text))
    if isinstance(eager, tuple):
        assert lazy == eager
        return
    assert _writes(lambda: record_type.from_json(text)) == _writes(
        lambda: record_type.from_dict(jsontext.loads(text, "$"))
    )


@pytest.mark.parametrize("source", ["bytes", "json"])
def test_a_copy_never_writes_a_value_changed_through_the_other(source: str) -> None:
    """``copy.copy`` of an unread record shares what it keeps; a NaN put in one copy's decoded
    values must not be written as null by the other (an error, or the value it was read with)."""
    record = E2AEnvelope.from_dict({"params": {"x": 1}})
    original = record.to_json()
    unread = E2AEnvelope.from_bytes(record.to_bytes()) if source == "bytes" else E2AEnvelope.from_json(original)
    first, second = copy.copy(unread), copy.copy(unread)
    first.params["x"] = float("nan")
    written = outcome(second.to_json)
    assert written == original or (isinstance(written, tuple) and written[1] == "$.params.x")


@pytest.mark.parametrize("source", ["bytes", "json"])
def test_unread_records_copy_pickle_and_compare(source: str) -> None:
    record = E2AResponse.from_dict({"body": {"delta": "hé", "n": 2**64}, "sequence": 3})
    unread = E2AResponse.from_bytes(record.to_bytes()) if source == "bytes" else E2AResponse.from_json(record.to_json())
    for twin in (copy.deepcopy(unread), pickle.loads(pickle.dumps(unread)), copy.copy(unread)):
        assert twin.to_bytes() == record.to_bytes()
        assert twin == record
    assert unread == record  # compares the attributes, which decodes them
    assert not _is_unread(unread)


SPEC_EXAMPLE = {
    "request_id": "req_abc_01",
    "jsonrpc_id": 7,
    "identity_origin": "user",
    "method": "chat.send",
    "params": {"content": "Hello", "n": 2**63 - 1, "x": -0.0, "t": "héllo"},
    "provenance": {"source_protocol": "acp", "details": {"kind": "acp_jsonrpc"}},
    "auth": {"extra_headers": {"X-A": "1"}, "_meta": {"k": [1]}},
    "expected_output_modes": ["text"],
}


def test_a_message_as_the_codec_writes_it_is_written_without_decoding() -> None:
    data = E2AEnvelope.from_dict(SPEC_EXAMPLE).to_bytes()
    unread = E2AEnvelope.from_bytes(data)
    assert unread.to_bytes() == data and _is_unread(unread)
    assert unread.to_json() == E2AEnvelope.from_dict(SPEC_EXAMPLE).to_json() and _is_unread(unread)


@pytest.mark.parametrize(
    "change",
    [
        {"identity_origin": e2a_pb2.IDENTITY_ORIGIN_UNSPECIFIED},  # written as the record's default
        {"params": '{"content": "Hello"}'},  # written without the space
        {"params": "{}"},  # written as "", the default
        {"jsonrpc_id": e2a_pb2.JsonRpcId(big_integer_value="7")},  # written as integer_value
    ],
)
def test_a_message_decoding_changes_is_decoded_at_once(change: dict[str, Any]) -> None:
    message = E2AEnvelope.from_dict(SPEC_EXAMPLE).to_proto()
    for name, value in change.items():
        if isinstance(value, Message):
            getattr(message, name).CopyFrom(value)
        else:
            setattr(message, name, value)
    data = message.SerializeToString()
    record = E2AEnvelope.from_bytes(data)
    assert not _is_unread(record)
    assert record.to_bytes() == E2AEnvelope.from_proto(message).to_bytes() != data


@pytest.mark.parametrize(
    "suffix",
    [
        b"\xf8\x06\x01",  # an unknown field (number 111)
        b"\x12\x03\xf8\x06\x01",  # an unknown field inside the provenance, which merges into it
        b"\x18\x01",  # request_id (3) as a varint: the decoder keeps it as an unknown field
    ],
)
def test_a_message_with_unknown_fields_is_decoded_at_once(suffix: bytes) -> None:
    data = E2AEnvelope.from_dict(SPEC_EXAMPLE).to_bytes() + suffix
    record = E2AEnvelope.from_bytes(data)
    assert not _is_unread(record)
    assert record.to_bytes() == E2AEnvelope.from_dict(SPEC_EXAMPLE).to_bytes()


@pytest.mark.parametrize("repeated", [False, True])
def test_many_auth_headers_are_told_apart(repeated: bool) -> None:
    """Past eight headers the names are compared through a hash table: a repeat is still found."""
    message = E2AEnvelope.from_dict(SPEC_EXAMPLE).to_proto()
    names = [f"X-Header-{index}" for index in range(12)] + (["X-Header-3"] if repeated else [])
    message.auth.extra_headers.extend(e2a_pb2.HttpHeader(name=name, value="v") for name in names)
    data = message.SerializeToString()
    record = E2AEnvelope.from_bytes(data)
    assert _is_unread(record) is not repeated
    assert record.to_bytes() == E2AEnvelope.from_proto(message).to_bytes()


@PROPERTY
@given(canonical_envelopes | canonical_responses)
def test_what_the_codec_writes_is_kept_unread(values: dict[str, Any]) -> None:
    """The fast path is the common one: only what decoding would change is decoded at once."""
    record_type, canonical = _canonical(values)
    record = record_type.from_bytes(record_type.dict_to_bytes(canonical))
    jsonrpc_id = canonical["jsonrpc_id"]
    big_integer = type(jsonrpc_id) is int and not -(2**63) <= jsonrpc_id < 2**63
    objects = [canonical[item.name] for item in record_type.FIELDS if item.kind in (Kind.OBJECT, Kind.OPTIONAL_OBJECT)]
    objects.append(canonical["provenance"]["details"])
    if canonical.get("auth"):
        objects.append(canonical["auth"]["_meta"])
    # Integers beyond 64 bits are written as digits, which orjson reads as floats: decoded at once.
    orjson_reads_back = all(jsontext.canonical_object(jsontext.dumps(value)) is not None for value in objects if value)
    expected = orjson_reads_back and not big_integer and bool(canonical["provenance"]["source_protocol"])
    assert _is_unread(record) is expected


def test_an_unread_record_has_only_its_fields() -> None:
    message = e2a_pb2.E2AEnvelope(
        method="m",
        provenance=e2a_pb2.E2AProvenance(source_protocol="e2a"),
        identity_origin=e2a_pb2.IDENTITY_ORIGIN_USER,
    )
    unread = E2AEnvelope.from_bytes(message.SerializeToString())  # protocol_version unset
    assert not hasattr(unread, "no_such_field")
    with pytest.raises(AttributeError, match="no_such_field"):
        unread.no_such_field  # type: ignore[attr-defined]  # noqa: B018
    assert _is_unread(unread)
    assert unread.method == "m" and unread.protocol_version is None  # a default, not the class's "1.0"


def test_an_unread_message_is_not_shared_with_the_caller() -> None:
    unread = E2AEnvelope.from_bytes(E2AEnvelope(method="m", params={"a": 1}).to_bytes())
    message = unread.to_proto()
    message.method = "changed by the caller"
    assert isinstance(message, Message)
    assert unread.to_proto().method == "m" and unread.method == "m"


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


def _documents_as_dicts() -> st.SearchStrategy[Any]:
    return _documents().map(lambda text: outcome(lambda: jsontext.loads(text, "$")))


@PROPERTY
@given(record_types, _documents_as_dicts())
def test_reading_takes_values_as_is_only_where_the_readers_would(record_type: RecordType, data: Any) -> None:
    """``from_dict``'s shortcut gives what calling every field's reader in field order gives."""
    if not isinstance(data, dict):
        return

    def every_reader() -> dict[str, Any]:
        return record_type._read_every_field(data)

    def repr_of(read: Callable[[], dict[str, Any]]) -> Any:
        return outcome(lambda: repr(list(read().items())))

    assert repr_of(lambda: record_type._read_dict(data)) == repr_of(every_reader)
