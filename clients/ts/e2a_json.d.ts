// Types of e2a_json.mjs: E2A wire JSON <-> the protobuf-es messages generated into gen/ts.
import type { E2AEnvelope, E2AResponse } from "../../gen/ts/e2a/v1/e2a_pb.js";

/** Deepest nesting accepted in a free-form value (params, body, ...), the value itself at depth 0. */
export declare const MAX_DEPTH: 512;

/** An error about one field of an E2A document. */
export declare class E2AFieldError extends Error {
  constructor(field: string, problem: string);
  readonly name: "E2AFieldError";
  /** Dotted path of the field at fault, as Python names it ("params", "auth.extra_headers.x", "$" for the text). */
  readonly field: string;
  /** What is wrong, without the field path (`message` is `${field}: ${problem}`). */
  readonly problem: string;
}

/** Reads E2A wire JSON (legacy keys of spec sections 9-11 included) into an e2a.v1.E2AEnvelope. */
export declare function envelopeFromJson(json: string): E2AEnvelope;

/** Writes the E2A wire JSON of an e2a.v1.E2AEnvelope: every field, in field order, compact. */
export declare function envelopeToJson(message: E2AEnvelope): string;

/** Reads E2A wire JSON into an e2a.v1.E2AResponse. */
export declare function responseFromJson(json: string): E2AResponse;

/** Writes the E2A wire JSON of an e2a.v1.E2AResponse. */
export declare function responseToJson(message: E2AResponse): string;

/**
 * JSON text in canonical form (no insignificant whitespace, canonical escapes, last value of a repeated
 * key, numbers as Python writes the values it reads): equal canonical forms mean equal documents,
 * key order and integer-vs-number included. Throws E2AFieldError (field "$") for text that is not JSON.
 */
export declare function canonicalJson(text: string): string;

/** The members of JSON text holding an object: key -> normalized value text, in order (no JSON.parse rounding). */
export declare function jsonObjectMembers(text: string): Map<string, string>;

/** A string as JSON text, the way the wire JSON writes strings (lone surrogates as \uXXXX escapes). */
export declare function quote(value: string): string;

/** Python's repr() of a float, which the wire JSON uses for epoch and binding conversions. */
export declare function pythonFloatRepr(value: number): string;
