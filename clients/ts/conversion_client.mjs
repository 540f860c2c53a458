// A Node.js client of e2a.v1.ConversionService built on the protobuf-es code generated into gen/ts,
// calling over gRPC (HTTP/2 without TLS). tests/interop/test_node_client.py runs it and checks that
// its results equal the Python client's.
//
// Usage: node clients/ts/conversion_client.mjs HOST:PORT CASES.json
//
// CASES.json is an array of {"name", "rpc", "request", "envelope"?}: "rpc" is ToACP, FromACP or
// ToA2AStream, "request" the request message in the protobuf JSON mapping, and "envelope" (ToACP)
// the fields of an E2AEnvelope built with create() and sent as the request's envelope source.
// Prints one JSON line per case, in order:
//   {"name", "request": base64 of the request as sent, and one of
//    "case" + "value": the reply's oneof case and value (ToACP, ToA2AStream),
//    "records": [{"case", "value"}, ...] (FromACP),
//    "error": {"code", "message", "details": [{"type", "value"}]} (a failed call)}
// JSON text results are printed exactly as received, messages in the protobuf JSON mapping, bytes
// (request, error detail values) in base64, status codes by their gRPC names (INVALID_ARGUMENT).
import { readFile } from "node:fs/promises";
import { register } from "node:module";

import { create, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

// The generated modules are imported only after the hook is registered: it lets their imports of
// @bufbuild/protobuf resolve to this package's node_modules (see resolve_hooks.mjs).
register("./resolve_hooks.mjs", import.meta.url);
const { ConversionService, FromACPRecordSchema } = await import("../../gen/ts/e2a/v1/conversion_service_pb.js");
const { E2AEnvelopeSchema, IdentityOrigin } = await import("../../gen/ts/e2a/v1/e2a_pb.js");

const CALL_TIMEOUT_MS = 30_000;

const [address, casesPath] = process.argv.slice(2);
if (!address || !casesPath) {
  console.error("usage: node conversion_client.mjs HOST:PORT CASES.json");
  process.exit(2);
}

/**
 * An E2AEnvelope from plain case fields, through the generated types. jsonrpc_id is an integer
 * given as a decimal string, because it may exceed 2^53 (a sint64 is a bigint in protobuf-es).
 */
function envelopeFromFields(fields) {
  return create(E2AEnvelopeSchema, {
    method: fields.method,
    sessionId: fields.session_id,
    channel: fields.channel,
    identityOrigin: IdentityOrigin[fields.identity_origin],
    jsonrpcId: { kind: { case: "integerValue", value: BigInt(fields.jsonrpc_id) } },
    params: fields.params,
    acpMeta: fields.acp_meta,
  });
}

/**
 * A oneof value as printed: the case by its protobuf field name (protobuf-es names cases by their
 * camelCase local name) and a message value in the protobuf JSON mapping.
 */
function describeOneof(schema, { case: localName, value }) {
  const field = schema.field[localName];
  return { case: field.name, value: field.fieldKind === "message" ? toJson(field.message, value) : value };
}

function describeReply(method, reply) {
  if (method.name === "FromACP") {
    return { records: reply.records.map(({ record }) => describeOneof(FromACPRecordSchema, record)) };
  }
  return describeOneof(method.output, reply.result);
}

/** The gRPC name of a status code: Code.InvalidArgument -> "INVALID_ARGUMENT". */
function grpcCodeName(code) {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

const base64 = (bytes) => Buffer.from(bytes).toString("base64");

const client = createClient(ConversionService, createGrpcTransport({ baseUrl: `http://${address}` }));
const cases = JSON.parse(await readFile(casesPath, "utf8"));

for (const { name, rpc, request: requestJson, envelope } of cases) {
  const method = ConversionService.methods.find((m) => m.name === rpc);
  if (method === undefined) {
    throw new Error(`case ${name}: unknown ConversionService method ${rpc}`);
  }
  const request = fromJson(method.input, requestJson);
  if (envelope !== undefined) {
    request.source = { case: "envelope", value: envelopeFromFields(envelope) };
  }
  const line = { name, request: base64(toBinary(method.input, request)) };
  try {
    const reply = await client[method.localName](request, { timeoutMs: CALL_TIMEOUT_MS });
    Object.assign(line, describeReply(method, reply));
  } catch (error) {
    if (!(error instanceof ConnectError)) {
      throw error;
    }
    line.error = {
      code: grpcCodeName(error.code),
      message: error.rawMessage,
      details: error.details.map(({ type, value }) => ({ type, value: base64(value) })),
    };
  }
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
