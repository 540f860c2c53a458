"""Write conformance/cases.jsonl, the cases of the E2A conformance suite, from the Python reference.

The inputs come from the repository's test data (the conformance vectors' envelope and response
inputs, the protocol document's examples) and from the tables below (lossless edge cases, each legacy
key, ill-typed values, protobuf messages written by hand). The expected output of every case is what
the reference testee, conformance/testees/python_testee.py, answers. Run from the repository root:

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

# Ill-typed wire JSON: each must be rejected, naming the field.
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
                yield Source(f"vector {file_name} #{vector['i']}", message, wire_json=text)


def _spec_sources() -> Iterator[Source]:
    for path in sorted((ROOT / "testdata" / "spec").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        document = json.loads(text)
        if "jsonrpc" in document:  # 11.4 is an ACP call, not an E2A record
            continue
        message = "response" if "response_kind" in document else "envelope"
        yield Source(f"spec example {path.stem}", message, wire_json=text, identity=True)


def sources() -> Iterator[Source]:
    yield from _vector_sources()
    yield from _spec_sources()
    for name, message, text in EDGE_CASES + LEGACY_CASES:
        yield Source(name, message, wire_json=text, identity=True)
    for name, message, text in REJECTED_CASES:
        yield Source(name, message, wire_json=text)
    for name, message, proto in _proto_cases():
        yield Source(f"protobuf: {name}", message, protobuf=proto.SerializeToString(), identity=True)
    for name, message, data in RAW_PROTO_CASES:
        yield Source(f"protobuf: {name}", message, protobuf=data, identity=True)


def _reference_bytes(source: Source) -> bytes | None:
    """The protobuf encoding of a wire JSON input, or None if the reference rejects it."""
    assert source.wire_json is not None
    try:
        return RECORD_TYPES[source.message].from_json(source.wire_json).to_bytes()
    except E2AFieldError:
        return None


def requests() -> list[dict[str, Any]]:
    """Every case as a request of the testee protocol (with its name), numbered from 1."""
    conversions: list[tuple[str, str, str, str, str]] = []  # name, message, from, to, payload
    for source in sources():
        if source.protobuf is not None:
            payload = base64.b64encode(source.protobuf).decode("ascii")
            conversions.append((source.name, source.message, "protobuf", "wire_json", payload))
            conversions.append((source.name, source.message, "protobuf", "protobuf", payload))
            continue
        assert source.wire_json is not None
        conversions.append((source.name, source.message, "wire_json", "wire_json", source.wire_json))
        conversions.append((source.name, source.message, "wire_json", "protobuf", source.wire_json))
        data = _reference_bytes(source)
        if data is not None:  # the message the reference reads the text as, as an input of its own
            payload = base64.b64encode(data).decode("ascii")
            name = f"{source.name} (as protobuf)"
            conversions.append((name, source.message, "protobuf", "wire_json", payload))
            if source.identity:
                conversions.append((name, source.message, "protobuf", "protobuf", payload))
    return [
        {"id": number, "name": name, "message": message, "from": source_format, "to": target, "payload": payload}
        for number, (name, message, source_format, target, payload) in enumerate(conversions, start=1)
    ]


def _reference_answers(cases: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    lines = "".join(json.dumps({key: value for key, value in case.items() if key != "name"}) + "\n" for case in cases)
    result = subprocess.run(
        [sys.executable, str(REFERENCE_TESTEE)], input=lines.encode(), capture_output=True, check=True, cwd=ROOT
    )
    answers = [json.loads(line) for line in result.stdout.decode().splitlines()]
    return {answer["id"]: answer for answer in answers}


def build() -> str:
    """The text of cases.jsonl."""
    cases = requests()
    answers = _reference_answers(cases)
    out = []
    for case in cases:
        answer = answers[case["id"]]
        if "error" in answer:
            case["expect"] = {"error": {"field": answer["error"]["field"]}}
        else:
            case["expect"] = {"payload": answer["payload"]}
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
