// Conformance testee of the TypeScript codec (e2a_json.mjs), run from the repository root as
//   node clients/ts/conformance_testee.mjs
// It reads one request per line on stdin:
//   {"id": <int>, "message": "envelope"|"response", "from": "wire_json"|"protobuf",
//    "to": "wire_json"|"protobuf", "payload": <JSON text, or base64 of the protobuf bytes>}
// and writes one line per request, in order:
//   {"id": <same>, "payload": <string>} or {"id": <same>, "error": {"field": <dotted path or "">, "message": <text>}}
// protobuf -> protobuf decodes, checks and re-encodes. Errors about the payload name the field as Python
// does ("$" for text or bytes that do not parse); a malformed request line gets field "".
import { register } from "node:module";
import { createInterface } from "node:readline";

import { fromBinary, toBinary } from "@bufbuild/protobuf";

// The generated modules are imported only after the hook is registered (see resolve_hooks.mjs).
register("./resolve_hooks.mjs", import.meta.url);
const { E2AEnvelopeSchema, E2AResponseSchema } = await import("../../gen/ts/e2a/v1/e2a_pb.js");
const codec = await import("./e2a_json.mjs");
const { E2AFieldError } = codec;

const MESSAGES = {
  envelope: { schema: E2AEnvelopeSchema, fromJson: codec.envelopeFromJson, toJson: codec.envelopeToJson },
  response: { schema: E2AResponseSchema, fromJson: codec.responseFromJson, toJson: codec.responseToJson },
};
const FORMATS = new Set(["wire_json", "protobuf"]);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A request the testee cannot act on (not a problem of the payload): reported with field "". */
class RequestError extends Error {}

function decode(kind, format, payload) {
  if (format === "wire_json") {
    return kind.fromJson(payload);
  }
  if (!BASE64.test(payload)) {
    throw new E2AFieldError("$", "payload is not base64");
  }
  try {
    return fromBinary(kind.schema, Buffer.from(payload, "base64"));
  } catch (error) {
    throw new E2AFieldError("$", `not a valid ${kind.schema.typeName} message: ${error.message}`);
  }
}

function encode(kind, format, message) {
  return format === "wire_json"
    ? kind.toJson(message)
    : Buffer.from(toBinary(kind.schema, message)).toString("base64");
}

function answer(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    throw new RequestError(`request line is not JSON: ${error.message}`);
  }
  const kind = MESSAGES[request?.message];
  if (kind === undefined || !FORMATS.has(request.from) || !FORMATS.has(request.to)) {
    throw new RequestError(`unsupported request: message ${request?.message}, from ${request?.from}, to ${request?.to}`);
  }
  if (typeof request.payload !== "string") {
    throw new RequestError("payload must be a string");
  }
  const message = decode(kind, request.from, request.payload);
  if (request.from === "protobuf" && request.to === "protobuf") {
    kind.toJson(message); // checks the free-form texts, identity_origin and jsonrpc_id, as Python's from_proto
  }
  return { id: request.id, payload: encode(kind, request.to, message) };
}

/** The id of a request line, if it can be read, for an error answer. */
function idOf(line) {
  try {
    return JSON.parse(line)?.id ?? null;
  } catch {
    return null;
  }
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  let reply;
  try {
    reply = answer(line);
  } catch (error) {
    if (!(error instanceof E2AFieldError || error instanceof RequestError)) throw error;
    const field = error instanceof E2AFieldError ? error.field : "";
    reply = { id: idOf(line), error: { field, message: error.message } };
  }
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}
