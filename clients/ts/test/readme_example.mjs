// clients/ts/test/readme_example.mjs: run by `node --test clients/ts/test/` (make test).
import assert from "node:assert/strict";
import { register } from "node:module";

import { fromBinary, toBinary } from "@bufbuild/protobuf";

// In Node, let gen/ts resolve @bufbuild/protobuf from clients/ts/node_modules (bundlers need nothing).
register("../resolve_hooks.mjs", import.meta.url);
const { E2AEnvelopeSchema } = await import("../../../gen/ts/e2a/v1/e2a_pb.js");
const { E2AFieldError, envelopeFromJson, envelopeToJson } = await import("../e2a_json.mjs");

const envelope = envelopeFromJson(
  '{"method": "session/prompt", "channel_id": "web", "jsonrpc_id": 18446744073709551617,' +
    ' "params": {"prompt": "hi", "n": 123456789012345678901234567890, "x": 1.0}}',
);
assert.equal(envelope.channel, "web"); // the legacy key channel_id, read as Python reads it
assert.deepEqual(envelope.jsonrpcId.kind, { case: "bigIntegerValue", value: "18446744073709551617" });
assert.equal(envelope.params, '{"prompt":"hi","n":123456789012345678901234567890,"x":1.0}'); // exact

// Protobuf for the gRPC services, and back to the wire JSON: every field, in field order.
const decoded = fromBinary(E2AEnvelopeSchema, toBinary(E2AEnvelopeSchema, envelope));
const wire = envelopeToJson(decoded);
assert.ok(wire.startsWith('{"protocol_version":"1.0","provenance":{"source_protocol":"e2a",'));
assert.ok(wire.includes('"jsonrpc_id":18446744073709551617,'));

// Bad input: an E2AFieldError naming the field as Python does.
assert.throws(
  () => envelopeFromJson('{"auth": {"extra_headers": {"X-Trace": 7}}}'),
  (error) => error instanceof E2AFieldError && error.field === "auth.extra_headers.X-Trace",
);
