// Tests of e2a_json.mjs, the TypeScript codec of the E2A wire JSON: `node --test clients/ts/test/`.
//
// Expected results come from the Python reference: the vectors' documents, Python's output for the
// spec examples (spec_wire.json), the fields Python names for the vector inputs it rejects
// (vector_errors.json; both written by `.venv/bin/python clients/ts/test/python_fixtures.py`), and
// values below that were checked against Python once. Documents are compared by their canonicalJson
// form, which keeps key order, integer-vs-number and big integers (JSON.parse would round them).
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { register } from "node:module";
import { describe, test } from "node:test";

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";

register("../resolve_hooks.mjs", import.meta.url);
const { E2AEnvelopeSchema, E2AResponseSchema, IdentityOrigin } = await import("../../../gen/ts/e2a/v1/e2a_pb.js");
const codec = await import("../e2a_json.mjs");
const {
  E2AFieldError,
  canonicalJson,
  envelopeFromJson,
  envelopeToJson,
  jsonObjectMembers,
  pythonFloatRepr,
  responseFromJson,
  responseToJson,
} = codec;

const ROOT = new URL("../../../", import.meta.url);
const readText = (path) => readFileSync(new URL(path, ROOT), "utf8");
const readJson = (name) => JSON.parse(readFileSync(new URL(name, import.meta.url), "utf8"));

const envelopeRoundTrip = (text) => envelopeToJson(envelopeFromJson(text));
const responseRoundTrip = (text) => responseToJson(responseFromJson(text));

/** A matcher for assert.throws: an E2AFieldError about `field`. */
const fieldError = (field) => (error) => {
  assert.ok(error instanceof E2AFieldError, `expected an E2AFieldError, got ${error}`);
  assert.equal(error.field, field, error.message);
  assert.ok(error.message.startsWith(`${field}: `));
  return true;
};

const assertSameJson = (actual, expected) => assert.equal(canonicalJson(actual), canonicalJson(expected));

/** The wire JSON of `text` read as an envelope, as a Map of top-level key -> value text. */
const envelopeFields = (text) => jsonObjectMembers(envelopeRoundTrip(text));

// --- the conformance vectors -----------------------------------------------------------------

const VECTOR_ERRORS = readJson("./vector_errors.json");
const VECTOR_FILES = [
  ["E2AEnvelope.from_dict", envelopeRoundTrip],
  ["E2AEnvelope.roundtrip", envelopeRoundTrip],
  ["E2AResponse.from_dict", responseRoundTrip],
];

// Where the codec departs from the vectors' reference on purpose: a null for a field that is never
// null (identity_origin, status) reads as the field's default, as protobuf's JSON mapping reads null
// (issue 10), where the reference copies the null (or its text) through. The defaults, by vector file.
const NULL_DEFAULTS = {
  "E2AEnvelope.from_dict": { identity_origin: "user" },
  "E2AEnvelope.roundtrip": { identity_origin: "user" },
  "E2AResponse.from_dict": { identity_origin: "agent", status: "in_progress" },
};

/** The reference's document `expected` with each of those keys that `data` sets to null at its default. */
function withNullDefaults(name, data, expected) {
  let input;
  try {
    input = jsonObjectMembers(data);
  } catch {
    return expected; // not an object: no keys
  }
  const nulls = Object.entries(NULL_DEFAULTS[name]).filter(([key]) => input.get(key) === "null");
  if (nulls.length === 0) return expected;
  const members = jsonObjectMembers(expected);
  for (const [key, value] of nulls) members.set(key, JSON.stringify(value));
  return `{${[...members].map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(",")}}`;
}

for (const [name, roundTrip] of VECTOR_FILES) {
  describe(`vectors ${name}`, () => {
    const lines = readText(`testdata/vectors/${name}.jsonl`).split("\n").filter(Boolean);
    for (const line of lines) {
      const vector = jsonObjectMembers(line);
      const index = vector.get("i");
      const data = jsonObjectMembers(vector.get("input")).get("data");
      const output = jsonObjectMembers(vector.get("output"));
      test(`case ${index}`, () => {
        const field = VECTOR_ERRORS[`${name}:${index}`];
        if (field !== undefined) {
          assert.throws(() => roundTrip(data), fieldError(field));
          return;
        }
        assert.ok(output.has("ok"), "the vector raises, Python reads it");
        if (name.endsWith("roundtrip")) {
          const expected = jsonObjectMembers(output.get("ok"));
          const once = roundTrip(data);
          const twice = roundTrip(once);
          assertSameJson(once, withNullDefaults(name, data, expected.get("once")));
          assertSameJson(twice, withNullDefaults(name, data, expected.get("twice")));
          assert.equal(expected.get("stable"), "true");
          assert.equal(once, twice);
        } else {
          assertSameJson(roundTrip(data), withNullDefaults(name, data, output.get("ok")));
        }
      });
    }
  });
}

// --- the protocol document's examples --------------------------------------------------------

describe("spec examples", () => {
  const expected = readJson("./spec_wire.json");
  const files = readdirSync(new URL("testdata/spec/", ROOT)).filter((name) => name !== "11.4-0.json");
  assert.deepEqual(Object.keys(expected).sort(), files.sort());
  for (const name of files) {
    test(name, () => {
      const roundTrip = name.startsWith("12.") ? responseRoundTrip : envelopeRoundTrip;
      const wire = roundTrip(readText(`testdata/spec/${name}`));
      assert.equal(wire, expected[name]);
      assert.equal(roundTrip(wire), wire);
    });
  }
});

// --- lossless free-form values ---------------------------------------------------------------

describe("lossless free-form JSON", () => {
  test("numbers keep value and kind, big integers exactly", () => {
    const params = '{"big":18446744073709551617,"neg":-18446744073709551617,"negzero":-0.0,"one":1.0,"int":1,"huge":1e308,"small":5e-324,"exp":1E2}';
    const wire = envelopeFields(`{"params":${params}}`).get("params");
    assert.equal(wire, params); // number text is copied verbatim
    assert.equal(
      canonicalJson(wire),
      '{"big":18446744073709551617,"neg":-18446744073709551617,"negzero":-0.0,"one":1.0,"int":1,"huge":1e+308,"small":5e-324,"exp":100.0}',
    );
  });

  test("strings: non-ASCII raw, pairs joined, lone surrogates and controls escaped", () => {
    const params = String.raw`{"s":"\u00e9\ud83c\udf0d\uDBFF\uDFFF\ud800x\uDC00\u0001\u001F\b\f\n\r\t\"\\\/\u007f\u2028"}`;
    const wire = envelopeFields(`{"params":${params}}`).get("params");
    assert.equal(wire, '{"s":"é🌍\u{10FFFF}\\ud800x\\udc00\\u0001\\u001f\\b\\f\\n\\r\\t\\"\\\\/\u007f\u2028"}');
  });

  test("long strings (decoded by the built-in parser) follow the same rules", () => {
    const long = "x".repeat(40);
    const cases = [
      [`"${long}"`, `"${long}"`],
      [`"${long}\\u00e9\\n\\u001F"`, `"${long}é\\n\\u001f"`],
      [`"${long}\\ud800"`, `"${long}\\ud800"`],
      [`"${long}\\""`, `"${long}\\""`],
      [`"${long}\\\\"`, `"${long}\\\\"`],
      [`"${long}\\"${long}"`, `"${long}\\"${long}"`],
      [`"${long}\ud83c\udf0d"`, `"${long}🌍"`],
      [`"${long}\udc00"`, `"${long}\\udc00"`],
    ];
    for (const [input, expected] of cases) {
      assert.equal(envelopeFields(`{"params":{"s":${input}}}`).get("params"), `{"s":${expected}}`, input);
    }
    assert.equal(envelopeFromJson(`{"channel":"${long}\\t"}`).channel, `${long}\t`);
    assert.throws(() => envelopeFromJson(`{"params":{"s":"${long}\t${long}"}}`), fieldError("$"));
    assert.throws(() => envelopeFromJson(`{"params":{"s":"${long}\\q"}}`), fieldError("$"));
    assert.throws(() => envelopeFromJson(`{"channel":"${long}\\udc00"}`), fieldError("channel"));
  });

  test("a raw lone surrogate in the text is written as an escape", () => {
    const wire = envelopeFields('{"params":{"\ud800":"\udfff"}}').get("params");
    assert.equal(wire, '{"\\ud800":"\\udfff"}');
  });

  test("key order, empty containers, whitespace removed", () => {
    const wire = envelopeFields('{ "params" : { "b" : 1 , "a" : [ ] , "c" : { } , "d" : [ { } , [ ] , null , true , false ] } }');
    assert.equal(wire.get("params"), '{"b":1,"a":[],"c":{},"d":[{},[],null,true,false]}');
  });

  test("a repeated key keeps its first place and its last value", () => {
    assert.equal(envelopeFields('{"params":{"a":1,"b":{"x":1,"x":[2]},"a":3}}').get("params"), '{"a":3,"b":{"x":[2]}}');
    assert.equal(envelopeFields('{"session_id":"s1","session_id":"s2"}').get("session_id"), '"s2"');
  });

  test("empty slots are {} on the wire and empty in the message", () => {
    const message = envelopeFromJson('{"params":{},"acp_meta":null,"agent_ref":{}}');
    assert.equal(message.params, "");
    assert.equal(message.acpMeta, "");
    assert.equal(message.agentRef, "{}");
    assert.equal(envelopeFromJson("{}").agentRef, "");
    const wire = jsonObjectMembers(envelopeToJson(message));
    assert.equal(wire.get("params"), "{}");
    assert.equal(wire.get("agent_ref"), "{}");
    assert.equal(envelopeFields("{}").get("agent_ref"), "null");
  });

  const nested = (depth, inner = "1") => '{"a":'.repeat(depth) + inner + "}".repeat(depth);

  test("nesting 200 deep is kept", () => {
    const params = nested(200);
    assert.equal(envelopeFields(`{"params":${params}}`).get("params"), params);
  });

  test("a document nests at most 512 levels, its own object included", () => {
    assert.equal(envelopeFields(`{"params":${nested(511)}}`).get("params"), nested(511));
    assert.equal(envelopeFields(`{"params":${nested(510, "[]")}}`).get("params"), nested(510, "[]"));
    assert.throws(() => envelopeFromJson(`{"params":${nested(512)}}`), fieldError("$"));
    assert.throws(() => envelopeFromJson(`{"params":${nested(511, "[]")}}`), fieldError("$"));
    assert.throws(() => envelopeFromJson(`{"x":${"[".repeat(600)}${"]".repeat(600)}}`), fieldError("$"));
    assert.throws(() => envelopeFromJson(`${"[".repeat(600)}${"]".repeat(600)}`), fieldError("$"));
    const details = (depth) => `{"provenance":{"details":${nested(depth)}}}`;
    assert.equal(jsonObjectMembers(envelopeRoundTrip(details(510))).size, 29);
    assert.throws(() => envelopeFromJson(details(511)), fieldError("$"));
    assert.throws(() => responseFromJson(`{"body":${nested(600)}}`), fieldError("$"));
  });

  test("a free-form text of a message nests at most 512 levels", () => {
    const wire = envelopeToJson(create(E2AEnvelopeSchema, { params: nested(512) }));
    assert.ok(wire.includes(`"params":${nested(512)},`)); // a document deeper than a reader takes
    assert.throws(() => envelopeToJson(create(E2AEnvelopeSchema, { params: nested(513) })), fieldError("params"));
    const auth = create(E2AEnvelopeSchema, { auth: { meta: nested(600) } });
    assert.throws(() => envelopeToJson(auth), fieldError("auth._meta"));
  });

  test("integers of up to 4300 digits", () => {
    const digits = (count) => "9".repeat(count);
    assert.equal(envelopeFields(`{"params":{"n":-${digits(4300)}}}`).get("params"), `{"n":-${digits(4300)}}`);
    assert.throws(() => envelopeFromJson(`{"params":{"n":${digits(4301)}}}`), fieldError("$"));
    assert.throws(() => envelopeToJson(create(E2AEnvelopeSchema, { acpMeta: `{"n":${digits(4301)}}` })), fieldError("acp_meta"));
    const bigId = (value) => create(E2AEnvelopeSchema, { jsonrpcId: { kind: { case: "bigIntegerValue", value } } });
    assert.ok(envelopeToJson(bigId(digits(4300))).includes(`"jsonrpc_id":${digits(4300)},`));
    assert.throws(() => envelopeToJson(bigId(digits(4301))), fieldError("jsonrpc_id"));
  });
});

// --- jsonrpc_id ------------------------------------------------------------------------------

describe("jsonrpc_id keeps its JSON type", () => {
  const cases = [
    ['"req-1"', { case: "stringValue", value: "req-1" }, '"req-1"'],
    ["7", { case: "integerValue", value: 7n }, "7"],
    ["-0", { case: "integerValue", value: 0n }, "0"],
    ["9223372036854775807", { case: "integerValue", value: 9223372036854775807n }, "9223372036854775807"],
    ["-9223372036854775808", { case: "integerValue", value: -9223372036854775808n }, "-9223372036854775808"],
    ["9223372036854775808", { case: "bigIntegerValue", value: "9223372036854775808" }, "9223372036854775808"],
    ["-18446744073709551617", { case: "bigIntegerValue", value: "-18446744073709551617" }, "-18446744073709551617"],
    ["1.0", { case: "numberValue", value: 1 }, "1.0"],
    ["-0.0", { case: "numberValue", value: -0 }, "-0.0"],
    ["1E2", { case: "numberValue", value: 100 }, "100.0"],
    ["2.5e-7", { case: "numberValue", value: 2.5e-7 }, "2.5e-7"],
    ["1e-5", { case: "numberValue", value: 1e-5 }, "0.00001"],
    ["1e16", { case: "numberValue", value: 1e16 }, "1e+16"],
  ];
  for (const [json, kind, wire] of cases) {
    test(json, () => {
      const message = envelopeFromJson(`{"jsonrpc_id":${json}}`);
      assert.deepEqual(message.jsonrpcId.kind, kind);
      assert.equal(jsonObjectMembers(envelopeToJson(message)).get("jsonrpc_id"), wire);
    });
  }

  test("null and absent are no JsonRpcId", () => {
    assert.equal(envelopeFromJson('{"jsonrpc_id":null}').jsonrpcId, undefined);
    assert.equal(envelopeFields("{}").get("jsonrpc_id"), "null");
  });

  test("ids from messages: big_integer_value normalized, bad values named", () => {
    const withId = (kind) => create(E2AEnvelopeSchema, { jsonrpcId: { kind } });
    const wireId = (kind) => jsonObjectMembers(envelopeToJson(withId(kind))).get("jsonrpc_id");
    assert.equal(wireId({ case: "bigIntegerValue", value: "007" }), "7");
    assert.equal(wireId({ case: "bigIntegerValue", value: "-36893488147419103232" }), "-36893488147419103232");
    assert.throws(() => wireId({ case: "bigIntegerValue", value: "12x" }), fieldError("jsonrpc_id"));
    assert.throws(() => wireId({ case: "bigIntegerValue", value: "" }), fieldError("jsonrpc_id"));
    assert.throws(() => wireId({ case: "numberValue", value: Number.NaN }), fieldError("jsonrpc_id"));
    assert.throws(() => wireId({ case: "numberValue", value: Number.POSITIVE_INFINITY }), fieldError("jsonrpc_id"));
  });
});

// --- legacy keys (spec sections 9-11), as Python reads them ---------------------------------

describe("legacy keys", () => {
  // [input, {wire key: expected value text}], each checked against Python's to_json once.
  const cases = [
    ['{"channel_id":"tui"}', { channel: '"tui"' }],
    ['{"channel":"web","channel_id":"tui"}', { channel: '"web"' }],
    ['{"channel":null,"channel_id":"tui"}', { channel: '"tui"' }],
    ['{"req_method":"chat.send"}', { method: '"chat.send"' }],
    ['{"method":"x","req_method":"chat.send"}', { method: '"x"' }],
    ['{"req_method":5}', { method: "null" }],
    ['{"payload":{"a":1,"b":null,"c":[],"d":{},"e":0,"f":""},"params":{"a":2}}', { params: '{"a":2,"e":0,"f":""}' }],
    ['{"payload":"x"}', { params: "{}" }],
    ['{"binding":"acp"}', { provenance: '{"source_protocol":"acp","converter":null,"converted_at":null,"details":{"migrated_from_binding":"acp"}}' }],
    ['{"binding":{"value":"a2a"}}', { provenance: '{"source_protocol":"a2a","converter":null,"converted_at":null,"details":{"migrated_from_binding":"a2a"}}' }],
    ['{"binding":{"value":null}}', { provenance: '{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{"migrated_from_binding":""}}' }],
    ['{"binding":true}', { provenance: '{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{"migrated_from_binding":"True"}}' }],
    ['{"binding":1E2}', { provenance: '{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{"migrated_from_binding":"100.0"}}' }],
    ['{"binding":-0}', { provenance: '{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{"migrated_from_binding":"0"}}' }],
    ['{"binding":"acp","provenance":{"source_protocol":"a2a","details":{"k":1,"migrated_from_binding":null}}}', { provenance: '{"source_protocol":"a2a","converter":null,"converted_at":null,"details":{"k":1,"migrated_from_binding":"acp"}}' }],
    ['{"binding":"acp","provenance":{"details":{"migrated_from_binding":"q"}}}', { provenance: '{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{"migrated_from_binding":"q"}}' }],
    ['{"app_id":"x"}', { channel_context: '{"app_id":"x"}' }],
    ['{"app_id":0}', { channel_context: "{}" }],
    ['{"app_id":""}', { channel_context: "{}" }],
    ['{"app_id":[1]}', { channel_context: '{"app_id":[1]}' }],
    ['{"app_id":"q","channel_context":{"app_id":1}}', { channel_context: '{"app_id":1}' }],
    ['{"metadata":{"a":1,"_jiuwenswarm_server_push":1,"c":2},"channel_context":{"c":0},"app_id":"z"}', { channel_context: '{"c":0,"a":1,"app_id":"z"}' }],
    ['{"workspace_dir":" /d "}', { workspace_key: '"/d"' }],
    ['{"workspace_key":"  ","workspace_dir":"\\u3000w\\u0085"}', { workspace_key: '"w"' }],
    ['{"agent_id":" ","source_agent_id":" s "}', { agent_id: '"s"', source_agent_id: '" s "' }],
    ['{"agent_id":5,"service_id":" a\\ufeff "}', { agent_id: "null", service_id: '"a\ufeff"' }],
    ['{"timestamp":0}', { timestamp: '"1970-01-01T00:00:00+00:00"' }],
    ['{"timestamp":1700000000.5}', { timestamp: '"2023-11-14T22:13:20.500000+00:00"' }],
    ['{"timestamp":-0.5}', { timestamp: '"1969-12-31T23:59:59.500000+00:00"' }],
    ['{"timestamp":1.0000005}', { timestamp: '"1970-01-01T00:00:01.000001+00:00"' }],
    ['{"timestamp":0.0000025}', { timestamp: '"1970-01-01T00:00:00.000002+00:00"' }],
    ['{"timestamp":-62135596800}', { timestamp: '"0001-01-01T00:00:00+00:00"' }],
    ['{"is_stream":2}', { is_stream: "true" }],
    ['{"is_stream":0}', { is_stream: "false" }],
    ['{"expected_output_modes":null}', { expected_output_modes: "[]" }],
  ];
  for (const [input, expected] of cases) {
    test(input, () => {
      const wire = envelopeFields(input);
      for (const [key, value] of Object.entries(expected)) assert.equal(wire.get(key), value, key);
    });
  }

  test("a null identity_origin or status reads as the field's default, as an absent key does", () => {
    const envelope = envelopeFromJson('{"identity_origin":null}');
    assert.equal(envelope.identityOrigin, IdentityOrigin.USER);
    assert.equal(envelopeToJson(envelope), envelopeRoundTrip("{}"));
    const response = responseFromJson('{"identity_origin":null,"status":null,"response_kind":null}');
    assert.equal(response.identityOrigin, IdentityOrigin.AGENT);
    assert.equal(response.status, "in_progress");
    assert.equal(response.responseKind, "");
    assert.equal(responseToJson(response), responseRoundTrip("{}"));
    const wire = jsonObjectMembers(responseToJson(response));
    assert.equal(wire.get("status"), '"in_progress"');
    assert.equal(wire.get("identity_origin"), '"agent"');
    // The other fields keep their own null rules: a null provenance.source_protocol is still an error.
    assert.throws(() => envelopeFromJson('{"provenance":{"source_protocol":null}}'), fieldError("provenance.source_protocol"));
    assert.throws(() => responseFromJson('{"provenance":{"source_protocol":null}}'), fieldError("provenance.source_protocol"));
  });

  test("response: response_kind null is empty, channel_id read, metadata kept as is", () => {
    const wire = jsonObjectMembers(responseRoundTrip('{"response_kind":null,"channel_id":"c","metadata":{"_jiuwenswarm_server_push":1}}'));
    assert.equal(wire.get("response_kind"), '""');
    assert.equal(wire.get("channel"), '"c"');
    assert.equal(wire.get("metadata"), '{"_jiuwenswarm_server_push":1}');
    assert.equal(wire.get("status"), '"in_progress"');
    assert.equal(wire.get("identity_origin"), '"agent"');
  });
});

// --- ill-typed input: the field Python names --------------------------------------------------

describe("ill-typed input names the field", () => {
  const envelopeCases = [
    ["", "$"],
    ["[]", "envelope"],
    ['"x"', "envelope"],
    ['{"a":1}x', "$"],
    ['{"params":{"a":1},}', "$"],
    ['{"params":{"n":01}}', "$"],
    ['{"params":{"n":1.}}', "$"],
    ['{"params":{"n":NaN}}', "$"],
    ['{"params":{"n":1e400}}', "$"],
    ['{"params":{"s":"\t"}}', "$"],
    ['{"params":{"s":"\\x"}}', "$"],
    ['{"params":{"s":"\\u12G4"}}', "$"],
    ['\ufeff{}', "$"],
    ['{"params":"x"}', "params"],
    ['{"params":[1]}', "params"],
    ['{"jsonrpc_id":true}', "jsonrpc_id"],
    ['{"jsonrpc_id":{}}', "jsonrpc_id"],
    ['{"identity_origin":"bad"}', "identity_origin"],
    ['{"identity_origin":null,"agent_ref":1}', "agent_ref"],
    ['{"is_stream":1.0}', "is_stream"],
    ['{"is_stream":"true"}', "is_stream"],
    ['{"expected_output_modes":"ab"}', "expected_output_modes"],
    ['{"expected_output_modes":["a",1]}', "expected_output_modes[1]"],
    ['{"auth":[]}', "auth"],
    ['{"auth":{"method_id":5}}', "auth.method_id"],
    ['{"auth":{"extra_headers":[]}}', "auth.extra_headers"],
    ['{"auth":{"extra_headers":{"a":"1","b":2},"method_id":5}}', "auth.extra_headers.b"],
    ['{"auth":{"_meta":1}}', "auth._meta"],
    ['{"provenance":"x"}', "provenance"],
    ['{"provenance":{"source_protocol":null}}', "provenance.source_protocol"],
    ['{"provenance":{"converter":1,"details":[]}}', "provenance.converter"],
    ['{"provenance":{"details":[]}}', "provenance.details"],
    ['{"binding":[1]}', "binding"],
    ['{"binding":{"x":1}}', "binding"],
    ['{"timestamp":true}', "timestamp"],
    ['{"timestamp":1e20}', "timestamp"],
    ['{"timestamp":-62135596801}', "timestamp"],
    ['{"timestamp":253402300800}', "timestamp"],
    ['{"channel":null,"channel_id":5}', "channel_id"],
    ['{"agent_ref":[]}', "agent_ref"],
    ['{"protocol_version":5}', "protocol_version"],
    ['{"source_agent_id":5}', "source_agent_id"],
    // Read errors come first, in field order; then what protobuf cannot carry (lone surrogates).
    ['{"session_id":5,"request_id":6}', "request_id"],
    ['{"session_id":"\\ud800","channel":5}', "channel"],
    ['{"session_id":5,"jsonrpc_id":"\\ud800"}', "jsonrpc_id"],
    ['{"channel":"\\ud800"}', "channel"],
    ['{"provenance":{"converter":"\\ud800"}}', "provenance"],
    ['{"auth":{"extra_headers":{"k":"\\ud800"}},"channel":"\\ud800"}', "auth.extra_headers.k.value"],
    ['{"auth":{"extra_headers":{"\\udc00":"v"}}}', "auth.extra_headers.\udc00.name"],
    ['{"auth":{"bearer_token":"\\ud800"}}', "auth.bearer_token"],
    ['{"expected_output_modes":["a","\\udc00"]}', "expected_output_modes"],
  ];
  for (const [input, field] of envelopeCases) {
    test(`envelope ${JSON.stringify(input)}`, () => assert.throws(() => envelopeFromJson(input), fieldError(field)));
  }

  const responseCases = [
    ['{"sequence":9223372036854775808}', "sequence"],
    ['{"sequence":-9223372036854775809}', "sequence"],
    ['{"sequence":1.0}', "sequence"],
    ['{"sequence":true}', "sequence"],
    ['{"status":1}', "status"],
    ['{"status":null,"identity_origin":null,"agent_ref":[]}', "agent_ref"],
    ['{"response_kind":5}', "response_kind"],
    ['{"is_final":"yes"}', "is_final"],
    ['{"body":[]}', "body"],
    ['{"method":5}', "method"],
    ['{"identity_origin":3}', "identity_origin"],
    ["[1]", "response"],
  ];
  for (const [input, field] of responseCases) {
    test(`response ${JSON.stringify(input)}`, () => assert.throws(() => responseFromJson(input), fieldError(field)));
  }

  test("free-form text of a message that is not a JSON object", () => {
    const cases = [
      [{ params: "not json" }, "params"],
      [{ params: "[1]" }, "params"],
      [{ params: '{"a":1} x' }, "params"],
      [{ provenance: { details: "{" } }, "provenance.details"],
      [{ auth: { meta: "1" } }, "auth._meta"],
      [{ agentRef: "null" }, "agent_ref"],
      [{ identityOrigin: 9 }, "identity_origin"],
    ];
    for (const [fields, field] of cases) {
      assert.throws(() => envelopeToJson(create(E2AEnvelopeSchema, fields)), fieldError(field));
    }
    assert.throws(() => responseToJson(create(E2AResponseSchema, { body: "{]" })), fieldError("body"));
  });
});

// --- messages and protobuf -------------------------------------------------------------------

describe("messages", () => {
  const envelopeJson =
    '{"protocol_version":"1.0","provenance":{"source_protocol":"acp","converter":"c","converted_at":"2026-03-30T09:15:00+00:00","details":{"k":[1,2.5]}},' +
    '"request_id":"r","jsonrpc_id":-18446744073709551617,"session_id":"s","identity_origin":"service","channel":"ide",' +
    '"agent_ref":{"id":"a"},"method":"session/prompt","params":{"text":"héllo ✓ 🚀","n":123456789012345678901234567890,"x":1.0},' +
    '"is_stream":true,"expected_output_modes":["text","image/png"],' +
    '"auth":{"method_id":"m","bearer_token":"t","api_key_ref":null,"credential_ref":"c","extra_headers":{"X-B":"2","X-A":"1"},"_meta":{"z":null}},' +
    '"channel_context":{"traceparent":"00-a-b-01"},"a2a_metadata":{"m":{}},"acp_meta":{"trace":"t-1"}}';

  test("envelope fields land in the generated message", () => {
    const message = envelopeFromJson(envelopeJson);
    assert.equal(message.identityOrigin, IdentityOrigin.SERVICE);
    assert.equal(message.provenance.details, '{"k":[1,2.5]}');
    assert.deepEqual(
      message.auth.extraHeaders.map(({ name, value }) => [name, value]),
      [["X-B", "2"], ["X-A", "1"]],
    );
    assert.equal(message.auth.apiKeyRef, undefined);
    assert.equal(message.userId, undefined);
    assert.equal(message.agentRef, '{"id":"a"}');
    assert.equal(envelopeFromJson("{}").identityOrigin, IdentityOrigin.USER);
    assert.equal(envelopeFromJson('{"protocol_version":null}').protocolVersion, undefined);
  });

  test("envelope: JSON -> protobuf -> JSON is lossless", () => {
    const message = envelopeFromJson(envelopeJson);
    const decoded = fromBinary(E2AEnvelopeSchema, toBinary(E2AEnvelopeSchema, message));
    const wire = envelopeToJson(decoded);
    assert.equal(wire, envelopeToJson(message));
    const members = jsonObjectMembers(wire);
    for (const key of ["provenance", "jsonrpc_id", "params", "auth", "expected_output_modes", "agent_ref"]) {
      assert.equal(members.get(key), jsonObjectMembers(envelopeJson).get(key), key);
    }
  });

  test("response: JSON -> protobuf -> JSON is lossless", () => {
    const json =
      '{"protocol_version":"1.0","response_id":"r1","request_id":"req_1","sequence":9223372036854775807,"is_final":true,' +
      '"status":"succeeded","response_kind":"e2a.chunk","timestamp":"2026-03-29T12:00:00+00:00",' +
      '"provenance":{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{}},' +
      '"body":{"delta_kind":"text","delta":"Hello","n":-1e-7},"jsonrpc_id":2.5,"correlation_id":null,"task_id":null,' +
      '"context_id":null,"session_id":"s","message_id":null,"is_stream":true,"identity_origin":"agent","channel":null,' +
      '"user_id":null,"agent_ref":null,"source_agent_id":null,"method":null,"projections":{"acp":{"x":1}},' +
      '"channel_context":{},"metadata":{"m":1},"a2a_metadata":{},"acp_meta":{}}';
    const message = responseFromJson(json);
    assert.equal(message.sequence, 9223372036854775807n);
    const decoded = fromBinary(E2AResponseSchema, toBinary(E2AResponseSchema, message));
    assert.equal(responseToJson(decoded), json);
  });

  test("a message made with create() writes every field", () => {
    const wire = envelopeToJson(create(E2AEnvelopeSchema));
    assertSameJson(wire, envelopeRoundTrip('{"protocol_version":null}'));
    assert.ok(wire.startsWith('{"protocol_version":null,"provenance":{"source_protocol":"e2a","converter":null'));
    const response = responseToJson(create(E2AResponseSchema));
    assert.ok(response.includes('"sequence":0,"is_final":false,"status":"","response_kind":""'));
  });

  test("free-form text changed after reading is checked and normalized when written", () => {
    const message = envelopeFromJson('{"params":{"a":1},"provenance":{"details":{"d":1}}}');
    assert.equal(jsonObjectMembers(envelopeToJson(message)).get("params"), '{"a":1}');
    message.params = '{ "b" : [ 2 ] }';
    assert.equal(jsonObjectMembers(envelopeToJson(message)).get("params"), '{"b":[2]}');
    message.params = "{";
    assert.throws(() => envelopeToJson(message), fieldError("params"));
    message.params = "";
    message.provenance.details = "[]";
    assert.throws(() => envelopeToJson(message), fieldError("provenance.details"));
    const response = responseFromJson('{"body":{"x":1}}');
    response.body = "1";
    assert.throws(() => responseToJson(response), fieldError("body"));
  });

  test("repeated header names: first place, last value (a Python dict)", () => {
    const message = create(E2AEnvelopeSchema, {
      auth: { extraHeaders: [{ name: "a", value: "1" }, { name: "b", value: "2" }, { name: "a", value: "3" }] },
    });
    const auth = jsonObjectMembers(jsonObjectMembers(envelopeToJson(message)).get("auth"));
    assert.equal(auth.get("extra_headers"), '{"a":"3","b":"2"}');
    assert.equal(auth.get("_meta"), "{}");
  });
});

// --- helpers ---------------------------------------------------------------------------------

describe("helpers", () => {
  test("pythonFloatRepr matches Python's repr()", () => {
    const cases = [
      [1e16, "1e+16"],
      [1e15, "1000000000000000.0"],
      [0.0001, "0.0001"],
      [0.00001, "1e-05"],
      [-0, "-0.0"],
      [0, "0.0"],
      [100, "100.0"],
      [1.5, "1.5"],
      [-2.5e-7, "-2.5e-07"],
      [1.7976931348623157e308, "1.7976931348623157e+308"],
      [5e-324, "5e-324"],
      [123456789.12345679, "123456789.12345679"],
      [1774524781.15, "1774524781.15"],
    ];
    for (const [value, repr] of cases) assert.equal(pythonFloatRepr(value), repr, String(value));
  });

  test("wireFloat writes floats as docs/wire-json.md section 5 says", () => {
    const cases = [
      [1, "1.0"],
      [0.1, "0.1"],
      [0.00001, "0.00001"],
      [0.000015, "0.000015"],
      [9999999999999998, "9999999999999998.0"],
      [-0, "-0.0"],
      [1e-6, "1e-6"],
      [9.999999999999999e-6, "9.999999999999999e-6"],
      [1e16, "1e+16"],
      [1.5e300, "1.5e+300"],
      [5e-324, "5e-324"],
      [1.7976931348623157e308, "1.7976931348623157e+308"],
      [-123.456, "-123.456"],
    ];
    for (const [value, text] of cases) assert.equal(codec.wireFloat(value), text, String(value));
  });

  test("canonicalJson compares documents by value, kind and key order", () => {
    assert.equal(canonicalJson(' {"a" : 1E2, "b":[-0, 1.50, "\\u00e9"]} '), '{"a":100.0,"b":[0,1.5,"é"]}');
    assert.notEqual(canonicalJson('{"a":1}'), canonicalJson('{"a":1.0}'));
    assert.notEqual(canonicalJson('{"a":1,"b":2}'), canonicalJson('{"b":2,"a":1}'));
    assert.throws(() => canonicalJson("{"), fieldError("$"));
  });

  test("jsonObjectMembers", () => {
    assert.deepEqual([...jsonObjectMembers('{"a": [1, 2], "b": 18446744073709551617}')], [["a", "[1,2]"], ["b", "18446744073709551617"]]);
    assert.throws(() => jsonObjectMembers("[1]"), fieldError("$"));
  });

  test("the codec uses no Node-only API (browsers load it as is)", () => {
    const source = readFileSync(new URL("../e2a_json.mjs", import.meta.url), "utf8");
    const imports = [...source.matchAll(/^(?:import .*|}) from "([^"]+)";$/gm)].map((match) => match[1]);
    assert.deepEqual(imports, ["@bufbuild/protobuf", "../../gen/ts/e2a/v1/e2a_pb.js", "../../gen/ts/e2a/v1/e2a_fields.js"]);
    assert.doesNotMatch(source, /\b(?:Buffer|process|require|globalThis\.process)\b|from "node:/);
  });

  test("README example is the file the tests run", () => {
    const readme = readText("README.md");
    const heading = "Reading and writing E2A wire JSON in TypeScript";
    const start = readme.indexOf(heading);
    assert.ok(start >= 0, `README.md has a "${heading}" section`);
    const block = /```(?:js|javascript)\n([\s\S]*?)```/.exec(readme.slice(start));
    assert.ok(block, "the section has a ```js code block");
    assert.equal(block[1], readFileSync(new URL("./readme_example.mjs", import.meta.url), "utf8"));
  });
});
