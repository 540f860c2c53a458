// Type-checked by tests/interop/test_ts_codec.py (tsc -p clients/ts/test): the declarations of
// e2a_json.mjs fit the generated message types and read as a TypeScript user writes.
import { create } from "@bufbuild/protobuf";

import { E2AEnvelopeSchema, type E2AEnvelope, type E2AResponse } from "../../../gen/ts/e2a/v1/e2a_pb.js";
import {
  E2AFieldError,
  MAX_DEPTH,
  MAX_INTEGER_DIGITS,
  canonicalJson,
  envelopeFromJson,
  envelopeToJson,
  jsonObjectMembers,
  responseFromJson,
  responseToJson,
  wireFloat,
} from "../e2a_json.mjs";

export function roundTrip(text: string): string {
  const envelope: E2AEnvelope = envelopeFromJson(text);
  return envelopeToJson(envelope);
}

export function responseRoundTrip(text: string): string {
  const response: E2AResponse = responseFromJson(text);
  return responseToJson(response);
}

export function fieldOf(text: string): string | undefined {
  try {
    envelopeFromJson(text);
    return undefined;
  } catch (error: unknown) {
    if (error instanceof E2AFieldError) {
      const problem: string = error.problem;
      return `${error.field} (${problem})`;
    }
    throw error;
  }
}

export const params: Map<string, string> = jsonObjectMembers(envelopeToJson(create(E2AEnvelopeSchema, { params: '{"a":1}' })));
export const limits: [number, number] = [MAX_DEPTH, MAX_INTEGER_DIGITS];
export const canonical: string = canonicalJson(`{"x":${wireFloat(0.5)}}`);
