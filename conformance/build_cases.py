"""Write conformance/cases.jsonl, the cases of the E2A conformance suite, from the Python reference.

The inputs come from the repository's test data (the conformance vectors' envelope and response
inputs, the protocol document's examples) and from the tables below (lossless edge cases, each legacy
key, ill-typed values, protobuf messages written by hand). The expected output of every case is what
the reference testee, conformance/testees/python_testee.py, answers; each case's ``origin`` says what
else vouches for it (``ORIGINS``), and an answer that disagrees with the vector, example or hand-written
expectation it should match stops the build. Run from the repository root:

    .venv/bin/python conformance/build_cases.py            # rewrite conformance/cases.jsonl
    .venv/bin/python conformance/build_cases.py --output F  # write elsewhere (the unit test compares)
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from e2a.v1 import e2a_pb2
from e2a_grpc import E2AEnvelope, E2AFieldError, E2AResponse, jsontext

ROOT = Path(__file__).resolve().parent.parent
CASES_FILE = ROOT / "conformance" / "cases.jsonl"
REFERENCE_TESTEE = ROOT / "conformance" / "testees" / "python_testee.py"
VECTOR_FILES = {
    "E2AEnvelope.from_dict": "envelope",
    "E2AEnvelope.roundtrip": "envelope",
    "E2AResponse.from_dict": "response",
}
RECORD_TYPES: dict[str, type[E2AEnvelope] | type[E2AResponse]] = {"envelope": E2AEnvelope, "response": E2AResponse}

#: Where a case's expected output comes from (a case's ``origin``; testdata/README.md counts them).
ORIGINS = {
    "vectors": "the conformance vectors of the maintained implementation (testdata/vectors) give the same output",
    "spec": "the protocol document's example (testdata/spec) is the output",
    "hand": "written by hand in this file: the error's field, or the fields the case is about (the others "
    "hold their defaults)",
    "python": "produced by the Python implementation alone: a regression check for Python, an oracle for the others",
}


@dataclass(frozen=True)
class Expected:
    """What vouches for the answers to an input, besides the reference: the record it reads as (its
    wire JSON ``document``, compared by ``match``), or the field its error names (``document`` None)."""

    origin: str
    document: dict[str, Any] | None = None
    field: str | None = None
    #: "record": the whole record; "fields": the fields given, every other one as ``defaults`` has it
    #: (the record of an empty input of the same form); "example": the values given, at any depth (a
    #: protocol example leaves out what it does not show).
    match: str = "record"
    defaults: dict[str, Any] | None = None


@dataclass(frozen=True)
class Source:
    """One input: a record as wire JSON text, or as protobuf bytes."""

    name: str
    message: str  # "envelope" | "response"
    wire_json: str | None = None
    protobuf: bytes | None = None
    #: For wire JSON the reference reads: also a protobuf -> protobuf case from its message (protobuf
    #: inputs always have one).
    identity: bool = False
    expected: Expected | None = None


def _nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def _params(text: str) -> str:
    return '{"params":' + text + "}"


def _body(text: str) -> str:
    return '{"body":' + text + "}"


# Wire JSON edge cases: (name, message, JSON text). Numbers and escapes are written here exactly as
# the input text says them; the expected output is the reference's canonical text.
EDGE_CASES: list[tuple[str, str, str]] = [
    (
        "integers beyond 2^64",
        "envelope",
        _params('{"a":18446744073709551616,"b":-18446744073709551617,"c":' + "9" * 60 + "}"),
    ),
    (
        "64-bit integer edges",
        "envelope",
        _params('{"a":9223372036854775807,"b":-9223372036854775808,"c":18446744073709551615}'),
    ),
    ("negative zero", "envelope", _params('{"f":-0.0,"i":0}')),
    ("1.0 stays a float, 1 an integer", "envelope", _params('{"f":1.0,"i":1,"l":[1.0,1,-1.0,-1]}')),
    ("exponent means a float", "envelope", _params('{"a":1e2,"b":1E+2,"c":-2.5e-3,"d":100e-2}')),
    ("largest and smallest doubles", "envelope", _params('{"max":1.7976931348623157e308,"big":1e308,"tiny":5e-324}')),
    (
        "float notation edges",
        "envelope",
        _params('{"a":1.5e-05,"b":1e-06,"c":1e-05,"d":1e16,"e":9999999999999998.0,"f":0.1}'),
    ),
    (
        "U+10FFFF and astral characters",
        "envelope",
        _params('{"max":"\U0010ffff","emoji":"😀","escaped":"\\udbff\\udfff"}'),
    ),
    ("escaped input is written raw", "envelope", _params('{"e":"\\u00e9\\u4e16\\/","q":"\\"\\\\"}')),
    ("control characters", "envelope", _params('{"c":"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\\u007f"}')),
    ("line and paragraph separators are not escaped", "envelope", _params('{"s":"\u2028\u2029"}')),
    ("lone surrogates in a string", "envelope", _params('{"hi":"\\ud800","lo":"x\\udfffy"}')),
    ("lone surrogate in a key", "envelope", _params('{"\\udc00":1,"k\\ud83d":[2]}')),
    ("lone surrogate in a response body", "response", _body('{"s":"\\udbff"}')),
    (
        "a waiting turn's final frame (docs/wire-json.md section 8)",
        "response",
        '{"protocol_version":"1.0","response_id":"r4","request_id":"req_1","sequence":3,"is_final":true,'
        '"status":"in_progress","response_kind":"e2a.input_required","task_id":"t-7","session_id":"s1",'
        '"body":{"reason":"permission","message":"May I write notes.txt?","result":{"content":""},'
        '"request":{"tool_call":{"toolCallId":"call-1","title":"write notes.txt","kind":"edit"}},'
        '"options":[{"option_id":"allow","name":"Allow once","kind":"allow_once"},'
        '{"option_id":"reject","name":"Reject","kind":"reject_once"}]}}',
    ),
    ("key order kept", "envelope", _params('{"z":1,"a":2,"m":{"b":1,"a":2},"A":3}')),
    ("empty containers and strings", "envelope", _params('{"o":{},"a":[],"s":"","n":null,"t":true,"f":false}')),
    ("depth 200 accepted", "envelope", _params('{"d":' + _nested(199) + "}")),
    ("document depth 512 accepted", "envelope", _params('{"d":' + "[" * 509 + "{}" + "]" * 509 + "}")),
    ("document depth 513 rejected", "envelope", _params('{"d":' + "[" * 510 + "{}" + "]" * 510 + "}")),
    ("depth 600 rejected", "envelope", _params('{"d":' + _nested(599) + "}")),
    ("response body depth 600 rejected", "response", _body('{"d":' + _nested(599) + "}")),
    ("whitespace between tokens", "envelope", ' {\n "params" : { "a" : [ 1 , 2.5 ] } ,\t"is_stream" : true }\r\n'),
    ("unknown keys are ignored", "envelope", '{"unknown":1,"request_id":"r","also_unknown":{"x":[1]}}'),
    ("empty object is all defaults", "envelope", "{}"),
    ("empty response object is all defaults", "response", "{}"),
    (
        "null reads as the default",
        "envelope",
        '{"provenance":null,"params":null,"is_stream":null,"expected_output_modes":null,"channel_context":null,"a2a_metadata":null,"acp_meta":null,"identity_origin":"user"}',
    ),
    (
        "response nulls read as the default",
        "response",
        '{"sequence":null,"is_final":null,"body":null,"projections":null,"metadata":null,"is_stream":null}',
    ),
    ("jsonrpc_id integer", "envelope", '{"jsonrpc_id":42}'),
    ("jsonrpc_id string", "envelope", '{"jsonrpc_id":"42"}'),
    ("jsonrpc_id float", "envelope", '{"jsonrpc_id":1.0}'),
    ("jsonrpc_id beyond 64 bits", "envelope", '{"jsonrpc_id":-1180591620717411303424}'),
    ("jsonrpc_id 2^64", "response", '{"jsonrpc_id":18446744073709551616}'),
    ("jsonrpc_id huge float", "response", '{"jsonrpc_id":1e300}'),
    ("jsonrpc_id null", "response", '{"jsonrpc_id":null}'),
    ("identity_origin system", "envelope", '{"identity_origin":"system"}'),
    ("identity_origin agent", "envelope", '{"identity_origin":"agent"}'),
    ("identity_origin service", "response", '{"identity_origin":"service"}'),
    ("identity_origin user on a response", "response", '{"identity_origin":"user"}'),
    (
        "auth with header order",
        "envelope",
        '{"auth":{"method_id":"m","bearer_token":"t","extra_headers":{"X-B":"2","x-a":"1","X-B2":""},"_meta":{"k":[1,1.0]}}}',
    ),
    ("auth defaults", "envelope", '{"auth":{}}'),
    ("agent_ref empty object differs from null", "envelope", '{"agent_ref":{}}'),
    ("agent_ref object", "response", '{"agent_ref":{"id":"a","n":2}}'),
    (
        "provenance with details",
        "envelope",
        '{"provenance":{"source_protocol":"acp","converter":"c","converted_at":"2024-01-01T00:00:00Z","details":{"x":[1,{"y":null}]}}}',
    ),
    ("empty string and null differ", "envelope", '{"request_id":"","channel":"","method":null,"chat_id":""}'),
    (
        "all of a response",
        "response",
        '{"protocol_version":"1.0","response_id":"r1","request_id":"q1","sequence":3,"is_final":true,"status":"succeeded","response_kind":"e2a.complete","timestamp":"2024-01-01T00:00:00Z","body":{"text":"done"},"is_stream":true,"method":"chat.send","projections":{"acp":{"jsonrpc":"2.0"}},"metadata":{"m":1}}',
    ),
    ("negative and large sequence", "response", '{"sequence":-9223372036854775808}'),
    ("integer flags of legacy writers", "envelope", '{"is_stream":1}'),
    ("integer flag zero", "response", '{"is_final":0,"is_stream":2}'),
]

# Each legacy key of spec sections 9-11 that readers still take.
LEGACY_CASES: list[tuple[str, str, str]] = [
    ("legacy channel_id", "envelope", '{"channel_id":"tui"}'),
    ("legacy channel_id loses to channel", "envelope", '{"channel":"web","channel_id":"tui"}'),
    ("legacy channel_id on a response", "response", '{"channel_id":"tui"}'),
    ("legacy req_method", "envelope", '{"req_method":"chat.send"}'),
    ("legacy req_method loses to method", "envelope", '{"method":"a","req_method":"b"}'),
    (
        "legacy metadata joins channel_context",
        "envelope",
        '{"channel_context":{"a":1},"metadata":{"a":2,"b":3,"_jiuwenswarm_server_push":true}}',
    ),
    ("legacy payload joins params", "envelope", '{"params":{"a":1},"payload":{"a":2,"b":3,"n":null,"e":[],"o":{}}}'),
    ("legacy binding", "envelope", '{"binding":"acp"}'),
    ("legacy binding object", "envelope", '{"binding":{"value":"a2a"},"provenance":{"details":{"k":1}}}'),
    ("legacy binding number", "envelope", '{"binding":7}'),
    ("legacy app_id", "envelope", '{"app_id":"app-1"}'),
    ("legacy app_id loses to channel_context", "envelope", '{"app_id":"app-1","channel_context":{"app_id":"mine"}}'),
    ("legacy workspace_dir", "envelope", '{"workspace_dir":"  /ws  "}'),
    ("workspace_key stripped, wins over workspace_dir", "envelope", '{"workspace_key":" k ","workspace_dir":"/ws"}'),
    ("legacy numeric timestamp", "envelope", '{"timestamp":1700000000}'),
    ("legacy numeric timestamp with fraction", "response", '{"timestamp":1700000000.25}'),
    ("agent_id falls back to source_agent_id", "envelope", '{"source_agent_id":"  agent-7 "}'),
    ("agent_id stripped", "envelope", '{"agent_id":" a ","source_agent_id":"b"}'),
    ("blank agent_id is absent", "envelope", '{"agent_id":"   ","service_id":" "}'),
    ("legacy null response_kind", "response", '{"response_kind":null}'),
]

# Ill-typed wire JSON: rejected, naming the field; but a null for a field that is never null reads as
# its default (identity_origin, status: issue 10), and a sequence beyond 64 bits is well-typed JSON
# that only protobuf cannot hold.
REJECTED_CASES: list[tuple[str, str, str]] = [
    ("params as a string", "envelope", '{"params":"{}"}'),
    ("params as an array", "envelope", '{"params":[1]}'),
    ("is_stream as a string", "envelope", '{"is_stream":"false"}'),
    ("is_stream as a float", "envelope", '{"is_stream":1.0}'),
    ("identity_origin as a number", "envelope", '{"identity_origin":3}'),
    ("identity_origin unknown", "envelope", '{"identity_origin":"robot"}'),
    ("identity_origin null", "response", '{"identity_origin":null}'),
    ("jsonrpc_id as a boolean", "envelope", '{"jsonrpc_id":true}'),
    ("jsonrpc_id as an object", "response", '{"jsonrpc_id":{"id":1}}'),
    ("extra header value a number", "envelope", '{"auth":{"extra_headers":{"X":1}}}'),
    ("extra_headers an array", "envelope", '{"auth":{"extra_headers":["X"]}}'),
    ("auth a string", "envelope", '{"auth":"token"}'),
    ("auth.bearer_token a number", "envelope", '{"auth":{"bearer_token":5}}'),
    ("auth._meta an array", "envelope", '{"auth":{"_meta":[]}}'),
    ("expected_output_modes item a number", "envelope", '{"expected_output_modes":["text",1]}'),
    ("expected_output_modes a string", "envelope", '{"expected_output_modes":"text"}'),
    ("request_id a number", "envelope", '{"request_id":5}'),
    ("channel a boolean", "envelope", '{"channel":true}'),
    ("provenance a string", "envelope", '{"provenance":"x"}'),
    ("provenance.source_protocol null", "envelope", '{"provenance":{"source_protocol":null}}'),
    ("provenance.details an array", "response", '{"provenance":{"details":[]}}'),
    ("timestamp a boolean", "envelope", '{"timestamp":true}'),
    ("channel_context a string", "envelope", '{"channel_context":"x"}'),
    ("agent_ref a string", "envelope", '{"agent_ref":"a"}'),
    ("a2a_metadata a number", "envelope", '{"a2a_metadata":1}'),
    ("legacy binding an array", "envelope", '{"binding":["acp"]}'),
    ("sequence as a string", "response", '{"sequence":"1"}'),
    ("sequence a float", "response", '{"sequence":1.0}'),
    ("sequence beyond 64 bits", "response", '{"sequence":9223372036854775808}'),
    ("is_final a string", "response", '{"is_final":"true"}'),
    ("status a number", "response", '{"status":1}'),
    ("status null", "response", '{"status":null}'),
    ("response_kind a number", "response", '{"response_kind":5}'),
    ("body an array", "response", '{"body":[]}'),
    ("body a string", "response", '{"body":"{}"}'),
    ("projections a number", "response", '{"projections":0}'),
    ("metadata a string", "response", '{"metadata":"m"}'),
    ("first bad field in field order is named", "envelope", '{"acp_meta":1,"params":2,"request_id":3}'),
    ("invalid JSON text", "envelope", '{"params":'),
    ("not JSON at all", "response", "not json"),
    ("empty text", "envelope", ""),
    ("trailing comma", "envelope", '{"params":{},}'),
    ("NaN is not JSON", "envelope", '{"params":{"x":NaN}}'),
    ("number out of double range", "response", '{"body":{"x":1e400}}'),
    ("raw control character in a string", "envelope", '{"request_id":"a\tb"}'),
    ("document an array", "envelope", "[]"),
    ("document null", "response", "null"),
]


# The field each rejected input's error names, written by hand from docs/wire-json.md section 7 (by
# case name; "protobuf: " cases by their name in the tables below).
HAND_FIELDS: dict[str, str] = {
    "params as a string": "params",
    "params as an array": "params",
    "is_stream as a string": "is_stream",
    "is_stream as a float": "is_stream",
    "identity_origin as a number": "identity_origin",
    "identity_origin unknown": "identity_origin",
    "jsonrpc_id as a boolean": "jsonrpc_id",
    "jsonrpc_id as an object": "jsonrpc_id",
    "extra header value a number": "auth.extra_headers.X",
    "extra_headers an array": "auth.extra_headers",
    "auth a string": "auth",
    "auth.bearer_token a number": "auth.bearer_token",
    "auth._meta an array": "auth._meta",
    "expected_output_modes item a number": "expected_output_modes[1]",
    "expected_output_modes a string": "expected_output_modes",
    "request_id a number": "request_id",
    "channel a boolean": "channel",
    "provenance a string": "provenance",
    "provenance.source_protocol null": "provenance.source_protocol",
    "provenance.details an array": "provenance.details",
    "timestamp a boolean": "timestamp",
    "channel_context a string": "channel_context",
    "agent_ref a string": "agent_ref",
    "a2a_metadata a number": "a2a_metadata",
    "legacy binding an array": "binding",
    "sequence as a string": "sequence",
    "sequence a float": "sequence",
    "is_final a string": "is_final",
    "status a number": "status",
    "response_kind a number": "response_kind",
    "body an array": "body",
    "body a string": "body",
    "projections a number": "projections",
    "metadata a string": "metadata",
    "first bad field in field order is named": "request_id",  # request_id comes before params and acp_meta
    "invalid JSON text": "$",
    "not JSON at all": "$",
    "empty text": "$",
    "trailing comma": "$",
    "NaN is not JSON": "$",
    "number out of double range": "$",
    "raw control character in a string": "$",
    "document an array": "envelope",
    "document null": "response",
    "depth 600 rejected": "$",
    "document depth 513 rejected": "$",
    "response body depth 600 rejected": "$",
    "params not JSON": "params",
    "params an array": "params",
    "params holding NaN": "params",
    "params too deep": "params",
    "agent_ref an array": "agent_ref",
    "provenance.details a number": "provenance.details",
    "auth._meta not JSON": "auth._meta",
    "identity_origin out of range": "identity_origin",
    "jsonrpc_id number_value NaN": "jsonrpc_id",
    "jsonrpc_id big_integer_value not digits": "jsonrpc_id",
    "sequence beyond 64 bits": "sequence",
    "truncated bytes": "$",
    "invalid UTF-8 in a string field": "$",
}

# What an accepted input reads as, written by hand from docs/wire-json.md (sections 2-5): the wire JSON
# of the fields the case is about; every other field holds its default.
HAND_RECORDS: dict[str, str] = {
    "integers beyond 2^64": _params('{"a":18446744073709551616,"b":-18446744073709551617,"c":' + "9" * 60 + "}"),
    "64-bit integer edges": _params('{"a":9223372036854775807,"b":-9223372036854775808,"c":18446744073709551615}'),
    "negative zero": _params('{"f":-0.0,"i":0}'),
    "1.0 stays a float, 1 an integer": _params('{"f":1.0,"i":1,"l":[1.0,1,-1.0,-1]}'),
    "exponent means a float": _params('{"a":100.0,"b":100.0,"c":-0.0025,"d":1.0}'),
    "U+10FFFF and astral characters": _params('{"max":"\U0010ffff","emoji":"\U0001f600","escaped":"\U0010ffff"}'),
    "escaped input is written raw": _params('{"e":"\u00e9\u4e16/","q":"\\"\\\\"}'),
    "key order kept": _params('{"z":1,"a":2,"m":{"b":1,"a":2},"A":3}'),
    "empty containers and strings": _params('{"o":{},"a":[],"s":"","n":null,"t":true,"f":false}'),
    "whitespace between tokens": '{"params":{"a":[1,2.5]},"is_stream":true}',
    "unknown keys are ignored": '{"request_id":"r"}',
    "jsonrpc_id integer": '{"jsonrpc_id":42}',
    "jsonrpc_id string": '{"jsonrpc_id":"42"}',
    "jsonrpc_id float": '{"jsonrpc_id":1.0}',
    "jsonrpc_id beyond 64 bits": '{"jsonrpc_id":-1180591620717411303424}',
    "jsonrpc_id 2^64": '{"jsonrpc_id":18446744073709551616}',
    "jsonrpc_id null": '{"jsonrpc_id":null}',
    "jsonrpc_id huge float": '{"jsonrpc_id":1e300}',
    "negative and large sequence": '{"sequence":-9223372036854775808}',
    "identity_origin system": '{"identity_origin":"system"}',
    "identity_origin agent": '{"identity_origin":"agent"}',
    "identity_origin service": '{"identity_origin":"service"}',
    "identity_origin user on a response": '{"identity_origin":"user"}',
    "identity_origin null": '{"identity_origin":"agent"}',  # a response's default
    "status null": '{"status":"in_progress"}',
    "agent_ref empty object differs from null": '{"agent_ref":{}}',
    "agent_ref object": '{"agent_ref":{"id":"a","n":2}}',
    "empty string and null differ": '{"request_id":"","channel":"","method":null,"chat_id":""}',
    "integer flags of legacy writers": '{"is_stream":true}',
    "integer flag zero": '{"is_final":false,"is_stream":true}',
    "legacy channel_id": '{"channel":"tui"}',
    "legacy channel_id loses to channel": '{"channel":"web"}',
    "legacy channel_id on a response": '{"channel":"tui"}',
    "legacy req_method": '{"method":"chat.send"}',
    "legacy req_method loses to method": '{"method":"a"}',
    "legacy metadata joins channel_context": '{"channel_context":{"a":1,"b":3}}',
    "legacy payload joins params": '{"params":{"a":1,"b":3}}',
    "legacy binding": '{"provenance":{"source_protocol":"acp","converter":null,"converted_at":null,'
    '"details":{"migrated_from_binding":"acp"}}}',
    "legacy binding object": '{"provenance":{"source_protocol":"a2a","converter":null,"converted_at":null,'
    '"details":{"k":1,"migrated_from_binding":"a2a"}}}',
    "legacy binding number": '{"provenance":{"source_protocol":"e2a","converter":null,"converted_at":null,'
    '"details":{"migrated_from_binding":"7"}}}',
    "legacy app_id": '{"channel_context":{"app_id":"app-1"}}',
    "legacy app_id loses to channel_context": '{"channel_context":{"app_id":"mine"}}',
    "legacy workspace_dir": '{"workspace_key":"/ws"}',
    "workspace_key stripped, wins over workspace_dir": '{"workspace_key":"k"}',
    "legacy numeric timestamp": '{"timestamp":"2023-11-14T22:13:20+00:00"}',
    "legacy numeric timestamp with fraction": '{"timestamp":"2023-11-14T22:13:20.250000+00:00"}',
    "agent_id falls back to source_agent_id": '{"source_agent_id":"  agent-7 ","agent_id":"agent-7"}',
    "agent_id stripped": '{"source_agent_id":"b","agent_id":"a"}',
    "blank agent_id is absent": "{}",
    "legacy null response_kind": '{"response_kind":""}',
    "free-form text in another style": _params('{"b":1.5,"a":[100.0,1.5e-05,1e-06,10]}'),
    "agent_ref {} is not null": '{"agent_ref":{}}',
    "unset identity_origin of an envelope is user": '{"identity_origin":"user"}',
    "jsonrpc_id integer_value": '{"jsonrpc_id":-7}',
    "jsonrpc_id number_value": '{"jsonrpc_id":2.0}',
    "jsonrpc_id string_value": '{"jsonrpc_id":""}',
    "jsonrpc_id big_integer_value": '{"jsonrpc_id":-123456789012345678901234567890}',
    "jsonrpc_id big_integer_value in 64 bits": '{"jsonrpc_id":5}',
    "unknown field ignored": '{"request_id":"r"}',
    "unset identity_origin of a response is agent": '{"identity_origin":"agent"}',
    "empty free-form text is the default": '{"params":{},"agent_ref":null,"channel_context":{}}',
    "optional strings set to empty": '{"protocol_version":"","request_id":"","channel":""}',
    "auth defaults": '{"auth":{"method_id":null,"bearer_token":null,"api_key_ref":null,"credential_ref":null,'
    '"extra_headers":{},"_meta":{}}}',
    "auth with header order": '{"auth":{"method_id":"m","bearer_token":"t","api_key_ref":null,"credential_ref":null,'
    '"extra_headers":{"X-B":"2","x-a":"1","X-B2":""},"_meta":{"k":[1,1.0]}}}',
    "auth headers in order": '{"auth":{"method_id":null,"bearer_token":null,"api_key_ref":null,"credential_ref":null,'
    '"extra_headers":{"b":"1","A":"2"},"_meta":{"z":0,"a":1}}}',
    "free-form text with escapes": '{"params":{"e":"\\u00e9/\\ud800"},"acp_meta":{"k":"v"}}',
}

# Inputs that read as exactly what they say: their record holds the fields they give, with the values
# they give (numbers, strings and key order as written), and every other field at its default.
READ_AS_WRITTEN = frozenset(
    {
        "float notation edges",
        "largest and smallest doubles",
        "control characters",
        "line and paragraph separators are not escaped",
        "lone surrogates in a string",
        "lone surrogate in a key",
        "lone surrogate in a response body",
        "depth 200 accepted",
        "document depth 512 accepted",
        "provenance with details",
        "all of a response",
        "a waiting turn's final frame (docs/wire-json.md section 8)",
    }
)


def _proto_cases() -> list[tuple[str, str, Message]]:
    """Protobuf inputs written by hand: free-form texts in other writers' styles, and bad fields."""
    envelope, response, json_id = e2a_pb2.E2AEnvelope, e2a_pb2.E2AResponse, e2a_pb2.JsonRpcId
    origin = e2a_pb2.IdentityOrigin
    return [
        (
            "free-form text in another style",
            "envelope",
            envelope(params='{ "b" : 1.50 , "a" : [ 1E2 , 0.000015 , 1e-6 , 10 ] }'),
        ),
        (
            "free-form text with escapes",
            "envelope",
            envelope(params='{"e":"\\u00e9\\/\\ud800"}', acp_meta='\n{"k" : "v"}\n'),
        ),
        ("empty free-form text is the default", "envelope", envelope(params="", agent_ref="", channel_context="")),
        ("agent_ref {} is not null", "envelope", envelope(agent_ref="{}")),
        (
            "unset identity_origin of an envelope is user",
            "envelope",
            envelope(identity_origin=origin.IDENTITY_ORIGIN_UNSPECIFIED),
        ),
        ("unset identity_origin of a response is agent", "response", response()),
        ("identity_origin service", "response", response(identity_origin=origin.IDENTITY_ORIGIN_SERVICE)),
        ("jsonrpc_id integer_value", "envelope", envelope(jsonrpc_id=json_id(integer_value=-7))),
        ("jsonrpc_id number_value", "envelope", envelope(jsonrpc_id=json_id(number_value=2.0))),
        ("jsonrpc_id string_value", "response", response(jsonrpc_id=json_id(string_value=""))),
        (
            "jsonrpc_id big_integer_value",
            "response",
            response(jsonrpc_id=json_id(big_integer_value="-123456789012345678901234567890")),
        ),
        ("jsonrpc_id big_integer_value in 64 bits", "envelope", envelope(jsonrpc_id=json_id(big_integer_value="5"))),
        ("unset provenance is the default", "response", response(status="succeeded", body='{"a":1}')),
        (
            "auth headers in order",
            "envelope",
            envelope(
                auth=e2a_pb2.E2AAuth(
                    extra_headers=[e2a_pb2.HttpHeader(name="b", value="1"), e2a_pb2.HttpHeader(name="A", value="2")],
                    meta='{"z":0,"a":1}',
                )
            ),
        ),
        ("optional strings set to empty", "envelope", envelope(request_id="", protocol_version="", channel="")),
        ("params not JSON", "envelope", envelope(params="{")),
        ("params an array", "envelope", envelope(params="[1]")),
        ("params holding NaN", "envelope", envelope(params='{"x":NaN}')),
        ("params too deep", "envelope", envelope(params='{"d":' + _nested(599) + "}")),
        ("body a string", "response", response(body='"x"')),
        ("agent_ref an array", "response", response(agent_ref="[]")),
        ("provenance.details a number", "envelope", envelope(provenance=e2a_pb2.E2AProvenance(details="1"))),
        ("auth._meta not JSON", "envelope", envelope(auth=e2a_pb2.E2AAuth(meta="x"))),
        ("identity_origin out of range", "envelope", envelope(identity_origin=9)),  # type: ignore[arg-type]  # an unknown enum number on purpose
        ("jsonrpc_id number_value NaN", "response", response(jsonrpc_id=json_id(number_value=float("nan")))),
        ("jsonrpc_id big_integer_value not digits", "envelope", envelope(jsonrpc_id=json_id(big_integer_value="12x"))),
    ]


# Raw protobuf bytes: (name, message, bytes).
RAW_PROTO_CASES: list[tuple[str, str, bytes]] = [
    ("empty message", "envelope", b""),
    ("empty response message", "response", b""),
    ("unknown field ignored", "envelope", e2a_pb2.E2AEnvelope(request_id="r").SerializeToString() + b"\xf8\x06\x01"),
    ("truncated bytes", "envelope", b"\x1a\x05ab"),
    ("invalid UTF-8 in a string field", "response", b"\x1a\x01\xff"),
]


def _vector_sources() -> Iterator[Source]:
    seen: set[tuple[str, str]] = set()
    for file_name, message in VECTOR_FILES.items():
        path = ROOT / "testdata" / "vectors" / f"{file_name}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            vector = jsontext.loads(line, "$")
            text = jsontext.dumps(vector["input"]["data"], parsed=True)
            if (message, text) not in seen:  # the roundtrip file shares inputs with from_dict
                seen.add((message, text))
                yield Source(
                    f"vector {file_name} #{vector['i']}", message, wire_json=text, expected=_vector_output(vector)
                )


def _vector_output(vector: dict[str, Any]) -> Expected | None:
    """The record a vector says its input reads as (a vector that raises names no field)."""
    output = vector["output"]
    if "ok" not in output:
        return None
    document = output["ok"]["once"] if vector["fn"] == "E2AEnvelope.roundtrip" else output["ok"]
    return Expected("vectors", document)


def _hand(name: str, message: str, text: str | None = None) -> Expected | None:
    """The hand-written expectation of a table's case (``HAND_FIELDS``, ``HAND_RECORDS``,
    ``READ_AS_WRITTEN``: its wire JSON ``text``; None for a protobuf input), if it has one."""
    if name in HAND_FIELDS:
        return Expected("hand", field=HAND_FIELDS[name])
    if name in HAND_RECORDS:
        fields = HAND_RECORDS[name]
    elif name in READ_AS_WRITTEN and text is not None:
        fields = text
    else:
        return None
    record_type = RECORD_TYPES[message]
    # An unset field of a protobuf message is null where the wire JSON default is a value (protocol_version).
    empty = record_type.from_json("{}") if text is not None else record_type.from_bytes(b"")
    return Expected("hand", jsontext.loads(fields, name), match="fields", defaults=empty.to_dict())


def _check_hand_tables() -> None:
    """Every hand-written expectation names a case of the tables."""
    names = {name for name, _, _ in EDGE_CASES + LEGACY_CASES + REJECTED_CASES + RAW_PROTO_CASES}
    names.update(name for name, _, _ in _proto_cases())
    stale = (HAND_FIELDS.keys() | HAND_RECORDS.keys() | READ_AS_WRITTEN) - names
    if stale:
        raise SystemExit(f"hand-written expectations for cases that do not exist: {sorted(stale)}")


def _spec_sources() -> Iterator[Source]:
    for path in sorted((ROOT / "testdata" / "spec").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        document = json.loads(text)
        if "jsonrpc" in document:  # 11.4 is an ACP call, not an E2A record
            continue
        message = "response" if "response_kind" in document else "envelope"
        # An example in a legacy shape (11.2) shows an input; the document does not show what it reads as.
        fields = RECORD_TYPES[message].from_json("{}").to_dict()
        expected = Expected("spec", document, match="example") if document.keys() <= fields.keys() else None
        yield Source(f"spec example {path.stem}", message, wire_json=text, identity=True, expected=expected)


def sources() -> Iterator[Source]:
    yield from _vector_sources()
    yield from _spec_sources()
    for name, message, text in EDGE_CASES + LEGACY_CASES:
        yield Source(name, message, wire_json=text, identity=True, expected=_hand(name, message, text))
    for name, message, text in REJECTED_CASES:
        yield Source(name, message, wire_json=text, expected=_hand(name, message, text))
    for name, message, proto in _proto_cases():
        yield Source(
            f"protobuf: {name}",
            message,
            protobuf=proto.SerializeToString(),
            identity=True,
            expected=_hand(name, message),
        )
    for name, message, data in RAW_PROTO_CASES:
        yield Source(f"protobuf: {name}", message, protobuf=data, identity=True, expected=_hand(name, message))


def _reference_bytes(source: Source) -> bytes | None:
    """The protobuf encoding of a wire JSON input, or None if the reference rejects it."""
    assert source.wire_json is not None
    try:
        return RECORD_TYPES[source.message].from_json(source.wire_json).to_bytes()
    except E2AFieldError:
        return None


def requests() -> list[tuple[dict[str, Any], Expected | None]]:
    """Every case as a request of the testee protocol (with its name), numbered from 1, and what
    vouches for its answer."""
    # name, message, from, to, payload, expected
    conversions: list[tuple[str, str, str, str, str, Expected | None]] = []
    for source in sources():
        expected = source.expected
        if source.protobuf is not None:
            payload = base64.b64encode(source.protobuf).decode("ascii")
            conversions.append((source.name, source.message, "protobuf", "wire_json", payload, expected))
            conversions.append((source.name, source.message, "protobuf", "protobuf", payload, expected))
            continue
        assert source.wire_json is not None
        conversions.append((source.name, source.message, "wire_json", "wire_json", source.wire_json, expected))
        conversions.append((source.name, source.message, "wire_json", "protobuf", source.wire_json, expected))
        data = _reference_bytes(source)
        if data is not None:  # the message the reference reads the text as, as an input of its own
            payload = base64.b64encode(data).decode("ascii")
            name = f"{source.name} (as protobuf)"
            conversions.append((name, source.message, "protobuf", "wire_json", payload, expected))
            if source.identity:
                conversions.append((name, source.message, "protobuf", "protobuf", payload, expected))
    return [
        (
            {"id": number, "name": name, "message": message, "from": source_format, "to": target, "payload": payload},
            expected,
        )
        for number, (name, message, source_format, target, payload, expected) in enumerate(conversions, start=1)
    ]


def _read_back(message: str, target: str, payload: str) -> dict[str, Any]:
    """The record an answer's payload holds, as its wire JSON document."""
    if target == "wire_json":
        document: dict[str, Any] = jsontext.loads(payload, "payload")
        return document
    return RECORD_TYPES[message].from_bytes(base64.b64decode(payload)).to_dict()


def _same(first: Any, second: Any) -> bool:
    """Equal as E2A wire JSON: the same canonical text (key order, number kinds and -0.0 count)."""
    return jsontext.dumps(first) == jsontext.dumps(second)


def _holds(actual: Any, example: Any) -> bool:
    """``actual`` has every value ``example`` shows, at any depth."""
    if isinstance(actual, dict) and isinstance(example, dict):
        return all(key in actual and _holds(actual[key], value) for key, value in example.items())
    return _same(actual, example)


def _matches(record: dict[str, Any], expected: Expected) -> bool:
    assert expected.document is not None
    if expected.match == "example":
        return _holds(record, expected.document)
    if expected.match == "fields":
        assert expected.defaults is not None
        return _same(record, {**expected.defaults, **expected.document})
    return _same(record, expected.document)


def origin(case: dict[str, Any], answer: dict[str, Any], expected: Expected | None) -> str:
    """Where the reference's ``answer`` to ``case`` is vouched for (``ORIGINS``). Raises if a spec
    example or a hand-written expectation disagrees with it; a vector that disagrees is one this
    implementation departs from on purpose (tests/unit/test_vectors.py), so its case is Python's."""
    if expected is None:
        return "python"
    if expected.document is None:
        agrees = "error" in answer and expected.field in (None, answer["error"]["field"])
    elif "payload" not in answer:
        agrees = False
    else:
        agrees = _matches(_read_back(case["message"], case["to"], answer["payload"]), expected)
    if agrees:
        return expected.origin
    if expected.origin == "vectors":
        return "python"
    raise SystemExit(f"case {case['id']} ({case['name']}): the reference answers {answer}, not {expected}")


def _reference_answers(cases: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    lines = "".join(json.dumps({key: value for key, value in case.items() if key != "name"}) + "\n" for case in cases)
    result = subprocess.run(
        [sys.executable, str(REFERENCE_TESTEE)], input=lines.encode(), capture_output=True, check=True, cwd=ROOT
    )
    answers = [json.loads(line) for line in result.stdout.decode().splitlines()]
    return {answer["id"]: answer for answer in answers}


def build() -> str:
    """The text of cases.jsonl."""
    _check_hand_tables()
    cases = requests()
    answers = _reference_answers([case for case, _ in cases])
    out = []
    for case, expected in cases:
        answer = answers[case["id"]]
        if "error" in answer:
            case["expect"] = {"error": {"field": answer["error"]["field"]}}
        else:
            case["expect"] = {"payload": answer["payload"]}
        case["origin"] = origin(case, answer, expected)
        # ASCII lines with escapes: the file carries lone surrogates and reads the same in any editor.
        out.append(json.dumps(case, ensure_ascii=True, separators=(",", ":")) + "\n")
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=CASES_FILE, help="where to write (default: %(default)s)")
    arguments = parser.parse_args()
    text = build()
    arguments.output.write_text(text, encoding="utf-8")
    print(f"{arguments.output}: {text.count(chr(10))} cases")


if __name__ == "__main__":
    main()
