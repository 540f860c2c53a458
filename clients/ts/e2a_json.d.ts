// Types of e2a_json.mjs: E2A wire JSON <-> the protobuf-es messages generated into gen/ts.
import type { E2AEnvelope, E2AResponse } from "../../gen/ts/e2a/v1/e2a_pb.js";

/**
 * Deepest nesting of arrays/objects in one JSON text (docs/wire-json.md section 6): a wire JSON
 * document, its own object included, or a free-form text of a message. `[]` is 1 level.
 */
export declare const MAX_DEPTH: 512;

/** Most digits of an integer, in free-form values and jsonrpc_id (Python's conversion limit). */
export declare const MAX_INTEGER_DIGITS: 4300;

/** An error about one field of an E2A document. */
export declare class E2AFieldError extends Error {
  constructor(field: string, problem: string);
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
 * key, integers exactly and floats as wireFloat): equal canonical forms mean equal documents,
 * key order and integer-vs-number included. Throws E2AFieldError (field "$") for text that is not JSON.
 */
export declare function canonicalJson(text: string): string;

/** The members of JSON text holding an object: key -> normalized value text, in order (no JSON.parse rounding). */
export declare function jsonObjectMembers(text: string): Map<string, string>;

/** A string as JSON text, the way the wire JSON writes strings (lone surrogates as \uXXXX escapes). */
export declare function quote(value: string): string;

/** A double as the wire JSON writes it (docs/wire-json.md section 5): `1.0`, `0.00001`, `1e-6`, `1e+16`. */
export declare function wireFloat(value: number): string;

/** Python's repr() of a float (`1e-05`), which a legacy numeric `binding` becomes as text. */
export declare function pythonFloatRepr(value: number): string;
