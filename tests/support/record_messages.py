"""Hypothesis strategies for binary record messages as peers send them: canonical or not, valid or not."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from e2a.v1 import e2a_pb2
from e2a_grpc import E2AEnvelope, E2AResponse, jsontext
from e2a_grpc.model.fields import Kind
from tests.support.strategies import json_objects, unicode_text

RecordType = type[E2AEnvelope] | type[E2AResponse]
record_types = st.sampled_from([E2AEnvelope, E2AResponse])

# Free-form JSON texts as peers write them: exactly as jsontext.dumps does, in other styles, "{}"
# where "" is the default, and texts a reader must reject.
free_form_texts = st.one_of(
    st.just(""),
    json_objects.map(jsontext.dumps),
    json_objects.map(json.dumps),  # spaces after separators, \u escapes
    st.sampled_from(
        [
            "{}",
            '{"a": 1}',
            '{"n":18446744073709551616}',
            '{"x":1.0,"y":-0.0}',
            '{"s":"\\ud800"}',
            '{"x":1e400}',
            '{"x":NaN}',
            "[1]",
            "{",
            "null",
            '"text"',
            "[" * 300 + "]" * 300,
            '{"a":' + "[" * 600 + "]" * 600 + "}",
        ]
    ),
)
# Unknown fields (numbers the schema does not use): decoding drops them.
unknown_fields = st.sampled_from([b"", b"\xf8\x06\x01", b"\xfa\x06\x03abc"])


def _jsonrpc_ids() -> st.SearchStrategy[e2a_pb2.JsonRpcId]:
    return st.one_of(
        st.just(e2a_pb2.JsonRpcId()),  # set, but no kind
        unicode_text.map(lambda text: e2a_pb2.JsonRpcId(string_value=text)),
        st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda n: e2a_pb2.JsonRpcId(integer_value=n)),
        st.floats().map(lambda x: e2a_pb2.JsonRpcId(number_value=x)),  # NaN and infinities included
        st.sampled_from(["18446744073709551616", "-18446744073709551617", "7", "007", "-0", "12x", ""]).map(
            lambda digits: e2a_pb2.JsonRpcId(big_integer_value=digits)
        ),
    )


@st.composite
def _provenance(draw: st.DrawFn) -> e2a_pb2.E2AProvenance:
    message = e2a_pb2.E2AProvenance(
        source_protocol=draw(st.sampled_from(["e2a", "acp", ""])),
        converter=draw(st.none() | unicode_text),
        details=draw(free_form_texts),
    )
    # An unknown field inside a nested message is dropped too.
    return e2a_pb2.E2AProvenance.FromString(message.SerializeToString() + draw(unknown_fields))


@st.composite
def _auth(draw: st.DrawFn) -> e2a_pb2.E2AAuth:
    names = st.sampled_from(["X-A", "X-B", "x-a"])  # repeats collapse into one key
    headers = draw(st.lists(st.tuples(names, unicode_text), max_size=3))
    return e2a_pb2.E2AAuth(
        method_id=draw(st.none() | unicode_text),
        extra_headers=[e2a_pb2.HttpHeader(name=name, value=value) for name, value in headers],
        meta=draw(free_form_texts),
    )


_BY_KIND: dict[Kind, Callable[[], st.SearchStrategy[Any]]] = {
    Kind.TEXT: lambda: st.none() | unicode_text,
    Kind.PLAIN_TEXT: lambda: unicode_text,
    Kind.FLAG: st.booleans,
    Kind.INTEGER: lambda: st.integers(min_value=-(2**63), max_value=2**63 - 1),
    Kind.TEXT_LIST: lambda: st.lists(unicode_text, max_size=3),
    Kind.OBJECT: lambda: free_form_texts,
    Kind.OPTIONAL_OBJECT: lambda: free_form_texts,
    Kind.ORIGIN: lambda: st.integers(min_value=0, max_value=6),  # 5 and 6: values the enum does not have
    Kind.JSONRPC_ID: lambda: st.none() | _jsonrpc_ids(),
    Kind.PROVENANCE: lambda: st.none() | _provenance(),
    Kind.AUTH: lambda: st.none() | _auth(),
}


@st.composite
def messages(
    draw: st.DrawFn,
    types: st.SearchStrategy[RecordType] = record_types,
    chosen: Mapping[str, st.SearchStrategy[Any]] | None = None,
) -> tuple[RecordType, bytes]:
    """Any message of a record type, as bytes: canonical or not, valid or not. ``chosen``: the values
    of these fields come from these strategies instead (None leaves the field unset)."""
    record_type: RecordType = draw(types)
    chosen = chosen or {}
    fields = {}
    for item in record_type.FIELDS:
        if item.name in chosen:
            value = draw(chosen[item.name])
            if value is not None:
                fields[item.name] = value
        elif draw(st.booleans()):  # about half the fields set
            fields[item.name] = draw(_BY_KIND[item.kind]())
    message = record_type.CODEC.message_type(**fields)
    return record_type, message.SerializeToString() + draw(unknown_fields)
