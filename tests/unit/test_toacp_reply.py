"""ToACP's shortcut (``acp_fast_path.to_acp_reply``, in C) answers as the servicer does, or leaves the call to it.

The servicer's answer (``conversion_servicer.to_acp`` of the parsed request, serialized) is the
reference: for any request bytes the shortcut's reply is None or that answer byte for byte, and
None wherever upb cannot parse the bytes or the servicer refuses the request. The portable build
(no SSE2) answers as the native one. And the shortcut does answer the common call: an envelope
whose params pass through, written as the codec writes them.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st

from bench.toacp_throughput import WORKLOADS
from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import e2a_pb2
from e2a_grpc import E2AEnvelope, E2AFieldError, _canonical, jsontext
from e2a_grpc.conversion.acp_fast_path import _reply_plan, to_acp_reply
from e2a_grpc.grpc.conversion_servicer import to_acp
from tests.support.canonical_json import portable_build
from tests.support.record_messages import free_form_texts, messages
from tests.support.strategies import canonical_envelopes, json_objects, unicode_text

# The portable variant of the C module is built with cc (tests/support/canonical_json.py).
pytestmark = pytest.mark.subprocess

PLAN = _reply_plan()
ENVELOPE, PROMPT_METHODS, DIALECT = PLAN[0]
USER_ID = e2a_pb2.E2AEnvelope.DESCRIPTOR.fields_by_name["user_id"].number


def servicer_reply(data: bytes) -> bytes | None:
    """The servicer's answer to request bytes, serialized; None if it refuses them."""
    try:
        request = pb.ToACPRequest.FromString(data)
    except DecodeError:
        return None
    try:
        return to_acp(request).SerializeToString()
    except E2AFieldError:
        return None


def shortcut(data: bytes) -> bytes | None:
    """The shortcut's reply, checked against the portable build's and the servicer's."""
    reply = to_acp_reply(data)
    assert portable_build().acp_call_reply(PLAN, data) == reply
    if reply is not None:
        assert reply == servicer_reply(data), data
    return reply


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def length_delimited(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def request(envelope: bytes, *, prompt_methods: tuple[str, ...] = (), dialect: int | None = None) -> bytes:
    data = length_delimited(ENVELOPE, envelope)
    data += b"".join(length_delimited(PROMPT_METHODS, method.encode()) for method in prompt_methods)
    if dialect is not None:
        data += varint(DIALECT << 3) + varint(dialect)
    return data


def envelope_bytes(**values: Any) -> bytes:
    return E2AEnvelope(**values).to_bytes()


def call(reply: bytes | None) -> Any:
    assert reply is not None
    return orjson.loads(pb.ToACPResponse.FromString(reply).jsonrpc)


# --- any bytes -------------------------------------------------------------------------------------

methods = st.none() | st.sampled_from(["session/prompt", "ext", "chat.send", "", 'a"b', "a\\b", "tab\t", "é✓"])
clean_text = st.text(st.characters(codec="utf-8", exclude_characters='"\\', min_codepoint=0x20), max_size=12)
common_envelopes = st.fixed_dictionaries(
    {
        "method": st.none() | st.sampled_from(["chat.send", "session/cancel", "ext", ""]) | clean_text,
        "jsonrpc_id": st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | clean_text,
        "params": st.dictionaries(
            unicode_text, st.integers(-(2**63), 2**63 - 1) | unicode_text, min_size=1, max_size=4
        ),
    },
    optional={
        "session_id": unicode_text,
        "user_id": unicode_text,
        "identity_origin": st.sampled_from(["user", "agent"]),
        "provenance": st.just({"source_protocol": "acp", "details": {"kind": "x"}}),
        "expected_output_modes": st.lists(unicode_text, max_size=2),
    },
)
param_objects = json_objects | st.dictionaries(unicode_text, st.integers(-5, 5), max_size=3).map(
    lambda extra: {"prompt": [{"type": "text", "text": "hi"}], **extra}
)
call_fields = {"method": methods | unicode_text, "ext_method": st.none() | st.sampled_from(["", "_x/y", 'q"'])}
# Envelopes as any peer may write them (mostly ones the shortcut leaves to the servicer), and as the
# codec writes them (many it answers), with the fields the call reads drawn to matter.
envelopes = st.one_of(
    messages(st.just(E2AEnvelope), {**call_fields, "params": free_form_texts | param_objects.map(jsontext.dumps)}).map(
        lambda case: case[1]
    ),
    st.tuples(canonical_envelopes, st.fixed_dictionaries({**call_fields, "params": param_objects})).map(
        lambda pair: E2AEnvelope.from_dict({**pair[0], **pair[1]}).to_bytes()
    ),
    st.tuples(common_envelopes, st.fixed_dictionaries(call_fields)).map(
        lambda pair: E2AEnvelope.from_dict({**pair[0], **pair[1]}).to_bytes()
    ),
)
prompt_method_lists = st.lists(
    st.sampled_from(["chat.send", "ext", "", "é", "session/prompt"]) | unicode_text, max_size=10
)


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    """ToACP requests as any peer may send them: envelopes of every kind, aliases, dialects, at times
    other sources, fields repeated, and bytes inserted or cut off."""
    parts = [length_delimited(ENVELOPE, draw(envelopes))]
    parts += [length_delimited(PROMPT_METHODS, text.encode()) for text in draw(prompt_method_lists)]
    dialect = draw(st.none() | st.integers(min_value=0, max_value=2))
    if dialect is not None:
        parts.append(varint(DIALECT << 3) + varint(dialect))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        extra = draw(st.sampled_from([length_delimited(3, b"{}"), length_delimited(ENVELOPE, b""), b"\xf8\x06\x01"]))
        parts.insert(draw(st.integers(min_value=0, max_value=len(parts))), extra)
    data = bytearray(b"".join(draw(st.permutations(parts))))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        for at, byte in draw(
            st.lists(st.tuples(st.integers(min_value=0, max_value=4096), st.integers(0, 255)), min_size=1, max_size=2)
        ):
            data.insert(at % (len(data) + 1), byte)
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    return bytes(data)


@given(requests())
def test_any_request_gets_the_servicers_reply_or_none(data: bytes) -> None:
    shortcut(data)


@given(
    common_envelopes,
    st.fixed_dictionaries(call_fields),
    st.lists(st.sampled_from(["chat.send", "ext", "", "session/prompt"]), max_size=3),
    st.sampled_from([None, 0]),
)
def test_requests_near_the_common_call_get_the_servicers_reply_or_none(
    values: dict[str, Any], call_values: dict[str, Any], aliases: list[str], dialect: int | None
) -> None:
    """The call's fields in every combination the shortcut decides on, around envelopes it answers."""
    shortcut(
        request(
            E2AEnvelope.from_dict({**values, **call_values}).to_bytes(), prompt_methods=tuple(aliases), dialect=dialect
        )
    )


@given(st.binary(max_size=64))
def test_any_bytes_get_the_servicers_reply_or_none(data: bytes) -> None:
    shortcut(data)


# --- the common call ---------------------------------------------------------------------------------


@given(common_envelopes)
def test_the_common_call_is_answered(values: dict[str, Any]) -> None:
    if values["method"] == "session/prompt":
        values["params"]["prompt"] = []
    assert shortcut(request(E2AEnvelope.from_dict(values).to_bytes())) is not None


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_benchmark_requests_are_answered(name: str) -> None:
    message = pb.ToACPRequest(envelope=E2AEnvelope.from_dict(WORKLOADS[name]).to_proto())
    assert shortcut(message.SerializeToString()) == to_acp(message).SerializeToString()


def test_an_alias_of_session_prompt_is_renamed() -> None:
    data = request(envelope_bytes(method="chat.send", params={"prompt": []}), prompt_methods=("x", "chat.send"))
    assert call(shortcut(data))["method"] == "session/prompt"


def test_ext_stands_for_ext_method() -> None:
    assert (
        call(shortcut(request(envelope_bytes(method="ext", ext_method="_co/do", params={"a": 1}))))["method"]
        == "_co/do"
    )
    assert call(shortcut(request(envelope_bytes(method="ext", ext_method="", params={"a": 1}))))["method"] == "ext"


def test_missing_id_and_method_are_null() -> None:
    assert call(shortcut(request(envelope_bytes(params={"a": 1})))) == {
        "jsonrpc": "2.0",
        "id": None,
        "method": None,
        "params": {"a": 1},
    }


@pytest.mark.parametrize("rpc_id", [0, -1, 2**63 - 1, -(2**63), "", "42", "é"])
def test_ids_as_json(rpc_id: int | str) -> None:
    assert call(shortcut(request(envelope_bytes(jsonrpc_id=rpc_id, method="m", params={"a": 1}))))["id"] == rpc_id


def test_the_default_dialect_written_out_is_answered() -> None:
    assert shortcut(request(envelope_bytes(method="m", params={"a": 1}), dialect=0)) is not None


# --- left to the servicer ----------------------------------------------------------------------------

_PROMPT_PARAMS = {"prompt": [{"type": "text", "text": "hi"}]}


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(request(envelope_bytes(method="session/prompt", params={"text": "hi"})), id="prompt-merged-in"),
        pytest.param(
            request(envelope_bytes(method="chat.send", params={"text": "hi"}), prompt_methods=("chat.send",)),
            id="alias-prompt-merged-in",
        ),
        pytest.param(request(envelope_bytes(method="m", params={"a": 1}), dialect=1), id="wire-dialect"),
        pytest.param(request(envelope_bytes(method="m", params={"a": 1}), dialect=2), id="unknown-dialect"),
        pytest.param(request(envelope_bytes(method="m")), id="no-params"),
        pytest.param(request(envelope_bytes(method="m", params={"a": 1}, jsonrpc_id=1.5)), id="number-id"),
        pytest.param(request(envelope_bytes(method="m", params={"a": 1}, jsonrpc_id=2**64)), id="big-integer-id"),
        pytest.param(request(envelope_bytes(method="m", params={"a": 1}, jsonrpc_id='a"b')), id="id-with-escape"),
        pytest.param(request(envelope_bytes(method="a\nb", params={"a": 1})), id="method-with-escape"),
        pytest.param(
            request(envelope_bytes(method="ext", ext_method="a\\b", params={"a": 1})), id="ext-method-with-escape"
        ),
        pytest.param(
            request(envelope_bytes(method="m", params=_PROMPT_PARAMS), prompt_methods=tuple("abcdefghi")),
            id="nine-aliases",
        ),
        pytest.param(
            request(e2a_pb2.E2AEnvelope(method="m", params='{"a": 1}').SerializeToString()), id="params-not-canonical"
        ),
        pytest.param(
            request(envelope_bytes(method="m", params={"a": 1}) + b"\xf8\x06\x01"), id="unknown-envelope-field"
        ),
        pytest.param(
            request(envelope_bytes(method="m", params={"a": 1})) + length_delimited(PROMPT_METHODS, b"\xff"),
            id="alias-not-utf8",
        ),
        pytest.param(
            length_delimited(ENVELOPE, envelope_bytes(method="m"))
            + length_delimited(ENVELOPE, envelope_bytes(params={"a": 1})),
            id="envelope-in-two-parts",
        ),
        pytest.param(
            pb.ToACPRequest(envelope_json=E2AEnvelope(method="m", params={"a": 1}).to_json()).SerializeToString(),
            id="envelope-json",
        ),
        pytest.param(pb.ToACPRequest(response=e2a_pb2.E2AResponse()).SerializeToString(), id="response"),
        pytest.param(b"", id="no-envelope"),
        # Varints in more bytes than their value takes: upb reads some (a length in up to 5 bytes)
        # and refuses others; the shortcut reads none.
        pytest.param(
            b"\x2a\x80\x00" + request(envelope_bytes(method="m", params={"a": 1})), id="alias-length-overlong"
        ),
        pytest.param(
            b"\xaa\x80\x00\x00" + request(envelope_bytes(method="m", params={"a": 1})), id="alias-tag-overlong"
        ),
        pytest.param(request(envelope_bytes(method="m", params={"a": 1})) + b"\x30\x80\x00", id="dialect-overlong"),
        pytest.param(  # found by the ASan fuzzer: a 10-byte length, which upb refuses
            b'*\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00\n,\n\x03).0\x12\x05\n\x03e2a"\x02\x10\x05X\x02\xa2\x01'
            b'\x03jxW\xaa\x01\n{"a":"\xc3\xa9"}\xb2\x01\x04_x/y0\x00',
            id="alias-length-in-10-bytes",
        ),
    ],
)
def test_left_to_the_servicer(data: bytes) -> None:
    assert shortcut(data) is None


# UTF-8 as upb reads it: overlong forms, surrogates and code points above U+10FFFF are not.
_UTF8_EDGES = [
    b"\xc0\x80",
    b"\xc1\xbf",
    b"\xc2\x80",
    b"\xdf\xbf",
    b"\xe0\x9f\xbf",
    b"\xe0\xa0\x80",
    b"\xed\x9f\xbf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xee\x80\x80",
    b"\xef\xbf\xbf",
    b"\xf0\x8f\xbf\xbf",
    b"\xf0\x90\x80\x80",
    b"\xf4\x8f\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\xff",
    b"\x80",
    b"\xe2\x82",
    b"abcdefgh\xe2\x82\xac",
]


@given(st.sampled_from(_UTF8_EDGES) | st.binary(max_size=24) | unicode_text.map(str.encode), st.binary(max_size=3))
def test_strings_are_checked_as_upb_checks_them(text: bytes, tail: bytes) -> None:
    """A string field the call does not use, set to any bytes: the request is answered exactly when
    upb reads the bytes as UTF-8 (a request it cannot read gets its error from the servicer)."""
    value = text + tail
    data = request(envelope_bytes(method="m", params={"a": 1}) + length_delimited(USER_ID, value))
    try:
        value.decode()
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert (shortcut(data) is not None) is valid
    assert (servicer_reply(data) is not None) is valid


# --- the plan ------------------------------------------------------------------------------------------


def _with(plan: Any, index: int, value: Any) -> Any:
    return (*plan[:index], value, *plan[index + 1 :])


@pytest.mark.parametrize(
    "plan",
    [
        (),
        PLAN[:5],
        _with(PLAN, 0, (1, 5)),
        _with(PLAN, 0, (0, 5, 6)),
        _with(PLAN, 2, (4, 20, 21, 64)),
        _with(PLAN, 3, ("1", 2)),
        _with(PLAN, 4, ("session/prompt", b"ext", b"prompt", b"null")),
        _with(PLAN, 5, (b"\n", b"", b"", b"", None)),
        _with(PLAN, 1, ("fields", 0, 0)),
    ],
)
def test_a_malformed_plan_is_a_type_error(plan: Any) -> None:
    with pytest.raises(TypeError):
        _canonical.acp_call_reply(plan, request(envelope_bytes(method="m", params={"a": 1})))


def test_data_must_be_bytes_like() -> None:
    with pytest.raises(TypeError):
        _canonical.acp_call_reply(PLAN, "text")  # type: ignore[arg-type]
