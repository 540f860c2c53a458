// The E2A wire JSON of e2a.v1.E2AEnvelope and e2a.v1.E2AResponse, read into and written from the
// protobuf-es messages generated into gen/ts. Same results as the Python reference
// (E2AEnvelope.from_json(text).to_proto() and E2AEnvelope.from_proto(msg).to_json()), legacy keys
// and error paths included.
//
// Documents do not go through JSON.parse: it rounds integers beyond 2^53 and forgets whether a
// number was written 1 or 1.0. A small scanner validates the text instead and keeps each free-form
// value (params, body, the *_meta slots ...) as normalized JSON text: insignificant whitespace
// removed, string escapes rewritten canonically, number text verbatim (JSON.parse only ever decodes
// single long string tokens, for speed). Only standard ECMAScript is used, so the module runs in
// browsers as well as in Node (where resolve_hooks.mjs lets the generated code find its runtime).
import { create } from "@bufbuild/protobuf";

import {
  E2AAuthSchema,
  E2AEnvelopeSchema,
  E2AProvenanceSchema,
  E2AResponseSchema,
  HttpHeaderSchema,
  JsonRpcIdSchema,
} from "../../gen/ts/e2a/v1/e2a_pb.js";
import { ENUM_VALUES, ENVELOPE_FIELDS, RESPONSE_FIELDS } from "../../gen/ts/e2a/v1/e2a_fields.js";

/**
 * Deepest nesting of arrays/objects in one JSON text (docs/wire-json.md section 6): a wire JSON
 * document, whose own object counts, or a free-form text of a message. `[]` is 1 level.
 */
export const MAX_DEPTH = 512;
/** Most digits of an integer (Python's default int <-> str conversion limit). */
export const MAX_INTEGER_DIGITS = 4300;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
// datetime.fromtimestamp accepts years 1 to 9999.
const EPOCH_SECONDS_MIN = -62135596800;
const EPOCH_SECONDS_MAX = 253402300799;

/** An error about one field of an E2A document; `field` is the dotted path Python names. */
export class E2AFieldError extends Error {
  constructor(field, problem) {
    super(`${field}: ${problem}`);
    this.name = "E2AFieldError";
    this.field = field;
    this.problem = problem;
  }
}

// --- writing JSON strings --------------------------------------------------------------------

const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const SHORT_ESCAPES = { 0x22: '\\"', 0x5c: "\\\\", 0x08: "\\b", 0x0c: "\\f", 0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t" };

const hex4 = (code) => `\\u${code.toString(16).padStart(4, "0")}`;

/**
 * A string as JSON text the way Python writes it: raw UTF-8 except `"`, `\`, control characters
 * (short escapes or \u00XX) and lone surrogates (\uXXXX, lowercase), which UTF-8 cannot hold.
 */
export function quote(value) {
  if (!NEEDS_ESCAPE.test(value)) {
    return `"${value}"`;
  }
  let out = '"';
  let chunk = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    let escaped;
    if (code < 0x20 || code === 0x22 || code === 0x5c) {
      escaped = SHORT_ESCAPES[code] ?? hex4(code);
    } else if (code >= 0xd800 && code <= 0xdfff) {
      const next = value.charCodeAt(i + 1);
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++; // a valid pair is one character, written as is
        continue;
      }
      escaped = hex4(code);
    } else {
      continue;
    }
    out += value.slice(chunk, i) + escaped;
    chunk = i + 1;
  }
  return `${out}${value.slice(chunk)}"`;
}

// --- the scanner -----------------------------------------------------------------------------

const isDigit = (code) => code >= 0x30 && code <= 0x39;

function hexValue(code) {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

/**
 * A JSON value as seen by the record readers: its JSON type (named as Python's type_name names it),
 * its normalized text and, for a string, the decoded value.
 */
class Value {
  constructor(type, text, str) {
    this.type = type;
    this.text = text;
    this.str = str;
  }
}

/**
 * Validates JSON text and returns values as normalized text. Errors name `field`: "$" for a whole
 * document, the field holding the text for a free-form text of a message. After each value, `type`
 * is its JSON type, `str` the decoded string (for strings) and `clean` says whether the normalized
 * text is the raw text unchanged, so that clean values are returned as slices of the input.
 */
class Scanner {
  constructor(text, field, canonicalNumbers = false) {
    this.text = text;
    this.field = field;
    // Rewrite numbers as the wire JSON writes the values they hold (canonicalJson); else keep their text.
    this.canonicalNumbers = canonicalNumbers;
    this.pos = 0;
    this.type = "";
    this.str = "";
    this.clean = true;
  }

  fail(problem) {
    throw new E2AFieldError(this.field, `invalid JSON text: ${problem} (char ${this.pos})`);
  }

  /** Skips JSON whitespace; true if there was any. */
  ws() {
    const text = this.text;
    let pos = this.pos;
    let code = text.charCodeAt(pos);
    while (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) {
      code = text.charCodeAt(++pos);
    }
    const skipped = pos !== this.pos;
    this.pos = pos;
    return skipped;
  }

  /** The whole text as one value, surrounded by optional whitespace. */
  document() {
    this.ws();
    const text = this.value(0);
    this.ws();
    if (this.pos !== this.text.length) {
      this.fail("extra data after the JSON value");
    }
    return text;
  }

  /** The value at `pos` as normalized text; `depth` arrays/objects enclose it. */
  value(depth) {
    const text = this.text;
    const code = text.charCodeAt(this.pos);
    if (code === 0x22) {
      const start = this.pos;
      const str = this.string();
      this.type = "string";
      this.str = str;
      return this.clean ? text.slice(start, this.pos) : quote(str);
    }
    if (code === 0x7b) return this.object(depth);
    if (code === 0x5b) return this.array(depth);
    if (code === 0x2d || isDigit(code)) return this.number();
    const literal = code === 0x74 ? "true" : code === 0x66 ? "false" : "null";
    if (!text.startsWith(literal, this.pos)) {
      this.fail(Number.isNaN(code) ? "expected a value, got the end" : "expected a value");
    }
    this.pos += literal.length;
    this.type = code === 0x6e ? "null" : "boolean";
    this.clean = true;
    return literal;
  }

  /** The string starting at `pos` (a quote), decoded; `clean` when it has no escapes to rewrite. */
  string() {
    const text = this.text;
    const start = this.pos + 1;
    const end = text.indexOf('"', start);
    // A long string whose closing quote is plain (not after a backslash) is checked and decoded by
    // the built-in parser, as one string token (no number ever goes through it): several times
    // faster than any scan in JavaScript. Escapes always shorten the text, so an unchanged length
    // means there were none; a lone surrogate still needs an escape when written.
    if (end - start > LONG_STRING && text.charCodeAt(end - 1) !== 0x5c) {
      let decoded;
      try {
        decoded = JSON.parse(text.slice(start - 1, end + 1));
      } catch {
        return this.stringRest(start, start); // names the control character or bad escape
      }
      this.pos = end + 1;
      this.clean = decoded.length === end - start && isWellFormed(decoded);
      return decoded;
    }
    // A short string: a loop up to that quote finds whether anything needs attention.
    let pos = start;
    if (end >= 0) {
      while (pos < end) {
        const code = text.charCodeAt(pos);
        if (code === 0x5c || code < 0x20 || (code >= 0xd800 && code <= 0xdfff)) break;
        pos++;
      }
      if (pos === end) {
        this.pos = end + 1;
        this.clean = true;
        return text.slice(start, end);
      }
    }
    return this.stringRest(start, pos);
  }

  stringRest(start, pos) {
    const text = this.text;
    let out = "";
    let chunk = start;
    let clean = true;
    for (;;) {
      const code = text.charCodeAt(pos);
      if (code === 0x22) {
        this.pos = pos + 1;
        this.clean = clean;
        return out + text.slice(chunk, pos);
      }
      if (Number.isNaN(code)) {
        this.pos = pos;
        this.fail("unterminated string");
      }
      if (code < 0x20) {
        this.pos = pos;
        this.fail("invalid control character in a string");
      }
      if (code >= 0xd800 && code <= 0xdfff) {
        const next = text.charCodeAt(pos + 1);
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          pos += 2;
        } else {
          clean = false; // a lone surrogate is written as an escape
          pos++;
        }
        continue;
      }
      if (code !== 0x5c) {
        pos++;
        continue;
      }
      clean = false;
      out += text.slice(chunk, pos);
      const escape = text.charCodeAt(pos + 1);
      if (escape === 0x75) {
        let unit = this.hexEscape(pos);
        pos += 6;
        // An escaped high surrogate followed by an escaped low one is one character.
        if (unit >= 0xd800 && unit <= 0xdbff && text.charCodeAt(pos) === 0x5c && text.charCodeAt(pos + 1) === 0x75) {
          const low = this.hexEscape(pos);
          if (low >= 0xdc00 && low <= 0xdfff) {
            out += String.fromCharCode(unit);
            unit = low;
            pos += 6;
          }
        }
        out += String.fromCharCode(unit);
      } else {
        const decoded = SIMPLE_ESCAPES[escape];
        if (decoded === undefined) {
          this.pos = pos;
          this.fail("invalid escape in a string");
        }
        out += decoded;
        pos += 2;
      }
      chunk = pos;
    }
  }

  /** The code unit of the \uXXXX escape at `pos`. */
  hexEscape(pos) {
    let unit = 0;
    for (let i = pos + 2; i < pos + 6; i++) {
      const digit = hexValue(this.text.charCodeAt(i));
      if (digit < 0) {
        this.pos = pos;
        this.fail("invalid \\u escape in a string");
      }
      unit = unit * 16 + digit;
    }
    return unit;
  }

  /** A number, its text verbatim; `type` is "integer" without fraction and exponent, else "number". */
  number() {
    const text = this.text;
    const start = this.pos;
    let pos = start;
    let fractional = false;
    if (text.charCodeAt(pos) === 0x2d) pos++;
    let code = text.charCodeAt(pos);
    if (code === 0x30) {
      pos++;
    } else if (isDigit(code)) {
      while (isDigit(text.charCodeAt(++pos)));
    } else {
      this.pos = pos;
      this.fail("expected a digit");
    }
    if (text.charCodeAt(pos) === 0x2e) {
      fractional = true;
      if (!isDigit(text.charCodeAt(++pos))) {
        this.pos = pos;
        this.fail("expected a digit after the decimal point");
      }
      while (isDigit(text.charCodeAt(++pos)));
    }
    code = text.charCodeAt(pos);
    if (code === 0x65 || code === 0x45) {
      fractional = true;
      code = text.charCodeAt(++pos);
      if (code === 0x2b || code === 0x2d) pos++;
      if (!isDigit(text.charCodeAt(pos))) {
        this.pos = pos;
        this.fail("expected a digit in the exponent");
      }
      while (isDigit(text.charCodeAt(++pos)));
    }
    this.pos = pos;
    const number = text.slice(start, pos);
    // Python reads such numbers as doubles and rejects those no double holds (1e400).
    if (fractional && !Number.isFinite(Number(number))) {
      throw new E2AFieldError(this.field, `invalid JSON text: number ${number} is out of range`);
    }
    if (!fractional && pos - start > MAX_INTEGER_DIGITS && number.replace("-", "").length > MAX_INTEGER_DIGITS) {
      throw new E2AFieldError(this.field, `invalid JSON text: an integer of more than ${MAX_INTEGER_DIGITS} digits`);
    }
    this.type = fractional ? "number" : "integer";
    if (!this.canonicalNumbers) {
      this.clean = true;
      return number;
    }
    const canonical = fractional ? wireFloat(Number(number)) : BigInt(number).toString();
    this.clean = canonical === number;
    return canonical;
  }

  /** Skips whitespace; if there was any, the normalized text starts differing from the raw text. */
  gap(start, out) {
    const pos = this.pos;
    return this.ws() && out === null ? this.text.slice(start, pos) : out;
  }

  /** Rejects a container nested deeper than MAX_DEPTH; `depth` containers enclose it. */
  nest(depth) {
    if (depth >= MAX_DEPTH) {
      throw new E2AFieldError(this.field, `JSON nesting deeper than ${MAX_DEPTH} levels`);
    }
  }

  object(depth) {
    this.nest(depth);
    const text = this.text;
    const start = this.pos++;
    // The normalized text so far, once it differs from the raw text (null until then).
    let out = this.gap(start, null);
    // Keys seen, to find a repeated one: a list while short (cheaper than a Set), then a Set.
    const keys = [];
    let keySet = null;
    if (text.charCodeAt(this.pos) !== 0x7d) {
      for (;;) {
        if (text.charCodeAt(this.pos) !== 0x22) {
          this.fail("expected a property name in double quotes");
        }
        const keyStart = this.pos;
        const key = this.string();
        if (keySet === null ? keys.includes(key) : keySet.has(key)) {
          // A repeated key: the last value wins, at the first key's place (as a Python dict).
          this.pos = start;
          const merged = objectText(this.members(depth));
          this.type = "object";
          this.clean = false;
          return merged;
        }
        if (keySet !== null) keySet.add(key);
        else if (keys.push(key) > SHORT_KEY_LIST) keySet = new Set(keys);
        if (!this.clean && out === null) out = text.slice(start, keyStart);
        if (out !== null) out += this.clean ? text.slice(keyStart, this.pos) : quote(key);
        out = this.gap(start, out);
        if (text.charCodeAt(this.pos) !== 0x3a) this.fail("expected ':'");
        this.pos++;
        if (out !== null) out += ":";
        out = this.gap(start, out);
        const valueStart = this.pos;
        const value = this.value(depth + 1);
        if (!this.clean && out === null) out = text.slice(start, valueStart);
        if (out !== null) out += value;
        out = this.gap(start, out);
        const code = text.charCodeAt(this.pos);
        if (code === 0x7d) break;
        if (code !== 0x2c) this.fail("expected ',' or '}'");
        this.pos++;
        if (out !== null) out += ",";
        out = this.gap(start, out);
      }
    }
    this.pos++;
    this.type = "object";
    this.clean = out === null;
    return out === null ? text.slice(start, this.pos) : `${out}}`;
  }

  array(depth) {
    this.nest(depth);
    const text = this.text;
    const start = this.pos++;
    let out = this.gap(start, null);
    if (text.charCodeAt(this.pos) !== 0x5d) {
      for (;;) {
        const valueStart = this.pos;
        const value = this.value(depth + 1);
        if (!this.clean && out === null) out = text.slice(start, valueStart);
        if (out !== null) out += value;
        out = this.gap(start, out);
        const code = text.charCodeAt(this.pos);
        if (code === 0x5d) break;
        if (code !== 0x2c) this.fail("expected ',' or ']'");
        this.pos++;
        if (out !== null) out += ",";
        out = this.gap(start, out);
      }
    }
    this.pos++;
    this.type = "array";
    this.clean = out === null;
    return out === null ? text.slice(start, this.pos) : `${out}]`;
  }

  /**
   * The object at `pos` as a Map of decoded key -> Value, keys in first-seen order and the last
   * value of a repeated key (a Python dict).
   */
  members(depth) {
    this.nest(depth);
    const text = this.text;
    const members = new Map();
    this.pos++;
    this.ws();
    if (text.charCodeAt(this.pos) !== 0x7d) {
      for (;;) {
        if (text.charCodeAt(this.pos) !== 0x22) this.fail("expected a property name in double quotes");
        const key = this.string();
        this.ws();
        if (text.charCodeAt(this.pos) !== 0x3a) this.fail("expected ':'");
        this.pos++;
        this.ws();
        const value = this.value(depth + 1);
        members.set(key, new Value(this.type, value, this.type === "string" ? this.str : undefined));
        this.ws();
        const code = text.charCodeAt(this.pos);
        if (code === 0x7d) break;
        if (code !== 0x2c) this.fail("expected ',' or '}'");
        this.pos++;
        this.ws();
      }
    }
    this.pos++;
    return members;
  }

  /** The array at `pos` (normalized text) as a list of Values. */
  elements() {
    const items = [];
    this.pos++;
    if (this.text.charCodeAt(this.pos) !== 0x5d) {
      for (;;) {
        const value = this.value(-Infinity);
        items.push(new Value(this.type, value, this.type === "string" ? this.str : undefined));
        if (this.text.charCodeAt(this.pos) === 0x5d) break;
        this.pos++;
      }
    }
    return items;
  }
}

const SHORT_KEY_LIST = 16;
// Strings longer than this are decoded by JSON.parse (see Scanner.string).
const LONG_STRING = 32;
const LONE_SURROGATE = /\p{Cs}/u;
const isWellFormed = String.prototype.isWellFormed
  ? (value) => value.isWellFormed()
  : (value) => !LONE_SURROGATE.test(value);
const SIMPLE_ESCAPES = { 0x22: '"', 0x5c: "\\", 0x2f: "/", 0x62: "\b", 0x66: "\f", 0x6e: "\n", 0x72: "\r", 0x74: "\t" };

/** The members of an object Value (its text is normalized: no depth checks, no errors). */
const membersOf = (value) => new Scanner(value.text, "").members(-Infinity);

function objectText(members) {
  let out = "";
  for (const [key, value] of members) {
    out += `${out ? "," : ""}${quote(key)}:${value.text}`;
  }
  return `{${out}}`;
}

/** Normalized text of a free-form slot of a message; "" reads as `empty`. */
function slotText(text, field, empty) {
  if (text === "") return empty;
  const scanner = new Scanner(text, field);
  const normalized = scanner.document();
  if (scanner.type !== "object") {
    throw new E2AFieldError(field, `expected JSON text of an object, got ${scanner.type}`);
  }
  return normalized;
}

/**
 * JSON text in a canonical form: no insignificant whitespace, canonical string escapes, the last
 * value of a repeated key, and numbers as the wire JSON writes the values Python reads from them
 * (integers exactly, others as wireFloat). Two texts have the same canonical form exactly when
 * Python reads them as equal values of the same types with keys in the same order, so comparing
 * canonical forms compares documents. Throws E2AFieldError("$") for text that is not JSON.
 */
export function canonicalJson(text) {
  return new Scanner(text, "$", true).document();
}

/**
 * The members of JSON text holding an object, as a Map of key -> normalized value text, in order
 * (a repeated key keeps its first place and its last value). For picking parts of a document
 * without JSON.parse, which rounds large integers.
 */
export function jsonObjectMembers(text) {
  const scanner = new Scanner(text, "$");
  scanner.ws();
  if (text.charCodeAt(scanner.pos) !== 0x7b) {
    scanner.document();
    throw new E2AFieldError("$", `expected an object, got ${scanner.type}`);
  }
  const members = scanner.members(0);
  scanner.ws();
  if (scanner.pos !== text.length) scanner.fail("extra data after the JSON value");
  return new Map([...members].map(([key, value]) => [key, value.text]));
}

// --- Python's conversions that legacy keys rely on -------------------------------------------

/** repr() of a Python float: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
export function pythonFloatRepr(number) {
  if (number === 0) return Object.is(number, -0) ? "-0.0" : "0.0";
  const [mantissa, exponentText] = Math.abs(number).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const point = Number(exponentText) + 1; // digits before the decimal point
  const sign = number < 0 ? "-" : "";
  if (point <= -4 || point > 16) {
    const exponent = point - 1;
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : "";
    const magnitude = String(Math.abs(exponent)).padStart(2, "0");
    return `${sign}${digits[0]}${fraction}e${exponent < 0 ? "-" : "+"}${magnitude}`;
  }
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}.0`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * A double as the wire JSON writes it (docs/wire-json.md section 5): shortest round-trip digits,
 * positional for exponents -5 to 15 with at least one digit after the point, else d.ddde±x.
 */
export function wireFloat(number) {
  if (number === 0) return Object.is(number, -0) ? "-0.0" : "0.0";
  const [mantissa, exponentText] = Math.abs(number).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exponent = Number(exponentText);
  const sign = number < 0 ? "-" : "";
  if (exponent < -5 || exponent >= 16) return `${sign}${mantissa}e${exponent < 0 ? "-" : "+"}${Math.abs(exponent)}`;
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const point = exponent + 1;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}.0`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** A number as repr() writes the value Python reads from its JSON text. */
function pythonNumberRepr(value) {
  if (value.type === "integer") return value.text === "-0" ? "0" : value.text;
  return pythonFloatRepr(Number(value.text));
}

// The characters str.strip() removes (str.isspace()), which differ from String.prototype.trim's.
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");

/** Python's truthiness of a JSON value (app_id is merged only when truthy). */
function truthy(value) {
  switch (value.type) {
    case "null":
      return false;
    case "boolean":
      return value.text === "true";
    case "integer":
    case "number":
      return Number(value.text) !== 0;
    case "string":
      return value.str !== "";
    default:
      return value.text.length > 2; // not [] or {}
  }
}

/** datetime.fromtimestamp(float(value), tz=UTC).isoformat(), microseconds rounded half to even. */
function epochToIso(value) {
  const seconds = Number(value.text);
  let whole = Math.trunc(seconds);
  const scaled = (seconds - whole) * 1e6;
  let micros = Math.sign(scaled) * Math.round(Math.abs(scaled));
  if (Math.abs(scaled - micros) === 0.5) micros = 2 * Math.sign(scaled) * Math.round(Math.abs(scaled) / 2);
  if (micros >= 1e6) {
    micros -= 1e6;
    whole += 1;
  } else if (micros < 0) {
    micros += 1e6;
    whole -= 1;
  }
  if (!(whole >= EPOCH_SECONDS_MIN && whole <= EPOCH_SECONDS_MAX)) {
    throw new E2AFieldError("timestamp", `epoch seconds ${pythonNumberRepr(value)} out of range`);
  }
  const fraction = micros ? `.${String(micros).padStart(6, "0")}` : "";
  return `${new Date(whole * 1000).toISOString().slice(0, 19)}${fraction}+00:00`;
}

// --- readers of one JSON value (as Python's model/readers.py) --------------------------------

const typeError = (path, expected, value) => new E2AFieldError(path, `expected ${expected}, got ${value.type}`);

function readDocument(text, documentName) {
  const scanner = new Scanner(text, "$");
  scanner.ws();
  let data;
  if (text.charCodeAt(scanner.pos) === 0x7b) {
    data = scanner.members(0);
    scanner.ws();
    if (scanner.pos !== text.length) scanner.fail("extra data after the JSON value");
  } else {
    scanner.document();
    throw new E2AFieldError(documentName, `expected an object, got ${scanner.type}`);
  }
  return data;
}

/** A string or null (undefined). */
function text(value, path) {
  if (value === undefined || value.type === "null") return undefined;
  if (value.type === "string") return value.str;
  throw typeError(path, "a string or null", value);
}

function requiredText(value, path) {
  if (value.type === "string") return value.str;
  throw typeError(path, "a string", value);
}

/**
 * A string field that is never null (a proto3 string): absent or null reads as its default, as
 * protobuf's JSON mapping reads null.
 */
function plainText(value, path, fallback) {
  if (value === undefined || value.type === "null") return fallback;
  return requiredText(value, path);
}

/** A boolean; null reads as false and a legacy integer flag as its truth value. */
function flag(value, path) {
  if (value === undefined || value.type === "null") return false;
  if (value.type === "boolean") return value.text === "true";
  if (value.type === "integer") return !/^-?0$/.test(value.text);
  throw typeError(path, "a boolean", value);
}

function integer(value, path) {
  if (value === undefined || value.type === "null") return 0n;
  if (value.type === "integer") return BigInt(value.text);
  throw typeError(path, "an integer", value);
}

function textList(value, path) {
  if (value === undefined || value.type === "null") return [];
  if (value.type !== "array") throw typeError(path, "an array of strings", value);
  return new Scanner(value.text, "").elements().map((item, index) => {
    if (item.type !== "string") throw typeError(`${path}[${index}]`, "a string", item);
    return item.str;
  });
}

/** A free-form object slot as its normalized text; null reads as {}. */
function jsonObject(value, path) {
  if (value === undefined || value.type === "null") return "{}";
  if (value.type === "object") return value.text;
  throw typeError(path, "an object", value);
}

function optionalJsonObject(value, path) {
  if (value === undefined || value.type === "null") return undefined;
  if (value.type === "object") return value.text;
  throw typeError(path, "an object or null", value);
}

function jsonrpcId(value, path) {
  if (value === undefined || value.type === "null") return undefined;
  let kind;
  if (value.type === "string") {
    checkUnicode(value.str, path);
    kind = { case: "stringValue", value: value.str };
  } else if (value.type === "number") {
    kind = { case: "numberValue", value: Number(value.text) };
  } else if (value.type === "integer") {
    const number = BigInt(value.text);
    kind =
      number >= INT64_MIN && number <= INT64_MAX
        ? { case: "integerValue", value: number }
        : { case: "bigIntegerValue", value: value.text };
  } else {
    throw typeError(path, "a string, number or null", value);
  }
  return create(JsonRpcIdSchema, { kind });
}

/** An enum field by the json_value of its values: absent or null reads as the field's default, as
 * protobuf's JSON mapping reads null. */
function enumValue(value, field) {
  if (value === undefined || value.type === "null") return field.numbers.get(field.default);
  if (value.type !== "string") throw typeError(field.name, "a string", value);
  const number = field.numbers.get(value.str);
  if (number === undefined) {
    throw new E2AFieldError(field.name, `'${value.str}' is not one of ${[...field.numbers.keys()].join(", ")}`);
  }
  return number;
}

/** Message text of a free-form object: "" for {} (the wire default). */
const objectField = (normalized) => (normalized === "{}" ? "" : normalized);

function provenance(value) {
  const fields = { sourceProtocol: "e2a", converter: undefined, convertedAt: undefined, details: "{}" };
  if (value === undefined || value.type === "null") return fields;
  if (value.type !== "object") throw typeError("provenance", "an object", value);
  const members = membersOf(value);
  const source = members.get("source_protocol");
  if (source !== undefined) fields.sourceProtocol = requiredText(source, "provenance.source_protocol");
  fields.converter = text(members.get("converter"), "provenance.converter");
  fields.convertedAt = text(members.get("converted_at"), "provenance.converted_at");
  fields.details = jsonObject(members.get("details"), "provenance.details");
  return fields;
}

/** Provenance, with a legacy `binding` moved to details.migrated_from_binding (spec 4.2). */
function envelopeProvenance(data) {
  const fields = provenance(data.get("provenance"));
  let binding = data.get("binding");
  if (binding === undefined || binding.type === "null") return fields;
  const details = membersOf(new Value("object", fields.details));
  const migrated = details.get("migrated_from_binding");
  if (migrated !== undefined && migrated.type !== "null") return fields;
  if (binding.type === "object") binding = membersOf(binding).get("value") ?? binding;
  let label;
  if (binding.type === "null") label = "";
  else if (binding.type === "string") label = binding.str;
  else if (binding.type === "integer" || binding.type === "number") label = pythonNumberRepr(binding);
  else if (binding.type === "boolean") label = binding.text === "true" ? "True" : "False";
  else throw typeError("binding", "a string", binding);
  if (fields.sourceProtocol === "e2a" && (label === "acp" || label === "a2a")) fields.sourceProtocol = label;
  details.set("migrated_from_binding", new Value("string", quote(label), label));
  fields.details = objectText(details);
  return fields;
}

function timestamp(data) {
  const value = data.get("timestamp");
  if (value === undefined || value.type === "null") return undefined;
  if (value.type === "string") return value.str;
  if (value.type === "integer" || value.type === "number") return epochToIso(value);
  throw typeError("timestamp", "an RFC 3339 string or epoch seconds", value);
}

/** `channel`, or the legacy `channel_id` when it is absent or null. */
function channel(data) {
  return text(data.get("channel"), "channel") ?? text(data.get("channel_id"), "channel_id");
}

/** Tenant routing keys: a non-blank string, stripped; anything else counts as absent. */
function stripped(data, key) {
  const value = data.get(key);
  if (value?.type !== "string") return undefined;
  return value.str.replace(PY_STRIP, "") || undefined;
}

/** `method`, or the legacy `req_method` string when `method` is absent or null. */
function envelopeMethod(data) {
  const method = text(data.get("method"), "method");
  const legacy = data.get("req_method");
  return method === undefined && legacy?.type === "string" ? legacy.str : method;
}

/** `params`, plus keys of a legacy `payload` object it lacks (null and empty containers skipped). */
function params(data) {
  const merged = jsonObject(data.get("params"), "params");
  const payload = data.get("payload");
  if (payload?.type !== "object" || payload.text === "{}") return merged;
  const members = membersOf(new Value("object", merged));
  for (const [key, value] of membersOf(payload)) {
    if (!members.has(key) && value.type !== "null" && value.text !== "[]" && value.text !== "{}") {
      members.set(key, value);
    }
  }
  return objectText(members);
}

/** `channel_context`, plus keys of legacy `metadata` (but its internal keys) and a truthy `app_id` it lacks. */
function envelopeChannelContext(data, field) {
  const context = jsonObject(data.get("channel_context"), "channel_context");
  const metadata = data.get("metadata");
  const appId = data.get("app_id");
  const mergeMetadata = metadata?.type === "object" && metadata.text !== "{}";
  if (!mergeMetadata && (appId === undefined || !truthy(appId))) return context;
  const members = membersOf(new Value("object", context));
  if (mergeMetadata) {
    for (const [key, value] of membersOf(metadata)) {
      if (!field.internalKeys.includes(key) && !members.has(key)) members.set(key, value);
    }
  }
  if (appId !== undefined && truthy(appId) && !members.has("app_id")) members.set("app_id", appId);
  return objectText(members);
}

function auth(value, path) {
  if (value === undefined || value.type === "null") return undefined;
  if (value.type !== "object") throw typeError(path, "an object", value);
  const members = membersOf(value);
  const headers = membersOf(new Value("object", jsonObject(members.get("extra_headers"), "auth.extra_headers")));
  const extraHeaders = [];
  for (const [name, header] of headers) {
    if (header.type !== "string") throw typeError(`auth.extra_headers.${name}`, "a string", header);
    extraHeaders.push({ name, value: header.str });
  }
  return {
    methodId: text(members.get("method_id"), "auth.method_id"),
    bearerToken: text(members.get("bearer_token"), "auth.bearer_token"),
    apiKeyRef: text(members.get("api_key_ref"), "auth.api_key_ref"),
    credentialRef: text(members.get("credential_ref"), "auth.credential_ref"),
    extraHeaders,
    meta: objectField(jsonObject(members.get("_meta"), "auth._meta")),
  };
}


// --- what protobuf cannot carry, checked in the order Python's to_proto meets it ------------

function checkUnicode(value, path) {
  if (value !== undefined && !isWellFormed(value)) {
    throw new E2AFieldError(path, "string is not valid Unicode (lone surrogate); use JSON escapes in a JSON field");
  }
}

/** What protobuf cannot carry, field by field of the record's table. */
function checkEncodable(init, table) {
  if (init.auth !== undefined) {
    for (const { name, value } of init.auth.extraHeaders) {
      checkUnicode(name, `auth.extra_headers.${name}.name`);
      checkUnicode(value, `auth.extra_headers.${name}.value`);
    }
    for (const [wire, local] of AUTH_TEXT_FIELDS) checkUnicode(init.auth[local], `auth.${wire}`);
  }
  for (const field of table) {
    const value = init[field.local];
    if (field.kind === "text" || field.kind === "plain_text") {
      checkUnicode(value, field.name);
    } else if (field.kind === "text_list") {
      for (const item of value) checkUnicode(item, field.name);
    } else if (field.kind === "provenance") {
      checkUnicode(value.sourceProtocol, field.name);
      checkUnicode(value.converter, field.name);
      checkUnicode(value.convertedAt, field.name);
    } else if (field.kind === "integer" && (value < INT64_MIN || value > INT64_MAX)) {
      throw new E2AFieldError(field.name, `integer ${value} is outside the signed 64-bit range`);
    }
  }
}

const AUTH_TEXT_FIELDS = [
  ["method_id", "methodId"],
  ["bearer_token", "bearerToken"],
  ["api_key_ref", "apiKeyRef"],
  ["credential_ref", "credentialRef"],
];

// The free-form texts envelopeFromJson / responseFromJson put into each message they return: those
// are normalized already, so the writer does not check them again while the message holds them.
// Keyed weakly by the message: nothing outlives it, and a changed text is checked as any other.
const READ_TEXTS = new WeakMap();

function remember(message, texts) {
  READ_TEXTS.set(message, texts); // a short list: includes() compares the very same strings at once
  return message;
}

/** Writes the free-form texts of `message` (see slotText), skipping the check of those it was read with. */
function slotWriter(message) {
  const known = READ_TEXTS.get(message);
  if (known === undefined) return slotText;
  return (text, field, empty) => (text !== "" && known.includes(text) ? text : slotText(text, field, empty));
}

function provenanceMessage(fields) {
  return create(E2AProvenanceSchema, { ...fields, details: objectField(fields.details) });
}

// --- reading ---------------------------------------------------------------------------------

// How a present or absent key (`value` undefined) of each JSON kind is read into the init object
// of a message (options.proto's e2a.v1.JsonKind).
const READERS = {
  text: (value, field) => (value === undefined && field.default ? field.default : text(value, field.name)),
  plain_text: (value, field) => plainText(value, field.name, field.default ?? ""),
  flag: (value, field) => flag(value, field.name),
  integer: (value, field) => integer(value, field.name),
  text_list: (value, field) => textList(value, field.name),
  object: (value, field) => objectField(jsonObject(value, field.name)),
  optional_object: (value, field) => optionalJsonObject(value, field.name) ?? "",
  jsonrpc_id: (value, field) => jsonrpcId(value, field.name),
  enum: enumValue,
  provenance: (value) => provenance(value),
  auth: (value, field) => auth(value, field.name),
};

// The legacy readers the schema names ((e2a.v1.json).legacy_reader): each reads its field from the
// whole document (docs/wire-json.md section 3). Each returns the field's init value.
const LEGACY_READERS = {
  provenance: (data) => envelopeProvenance(data),
  timestamp: (data) => timestamp(data),
  channel: (data) => channel(data),
  agent_id: (data) => stripped(data, "agent_id") ?? stripped(data, "source_agent_id"),
  service_id: (data) => stripped(data, "service_id"),
  workspace_key: (data) => stripped(data, "workspace_key") ?? stripped(data, "workspace_dir"),
  method: (data) => envelopeMethod(data),
  params: (data) => objectField(params(data)),
  channel_context: (data, field) => objectField(envelopeChannelContext(data, field)),
  // null reads as "" (no kind), as older writers sent it.
  response_kind: (data, field) => text(data.get(field.name), field.name) ?? "",
};

// The free-form text kinds: their texts are normalized when read (see READ_TEXTS).
const OBJECT_KINDS = new Set(["object", "optional_object"]);

/**
 * A record's table (gen/ts/e2a/v1/e2a_fields.js, generated from the schema) joined with its
 * protobuf-es schema: each field gets its local name, its enum's values and its legacy reader.
 * Throws at load time when the table and the compiled schema differ or a legacy reader is missing.
 */
function bindTable(table, schema) {
  return table.map((entry, index) => {
    const descriptor = schema.fields[index];
    if (descriptor?.number !== entry.number || descriptor.name !== entry.name) {
      throw new Error(`e2a_json: ${schema.typeName} field ${index + 1} is not ${entry.name} = ${entry.number}`);
    }
    const legacy = entry.legacy === undefined ? undefined : LEGACY_READERS[entry.legacy];
    if (entry.legacy !== undefined && legacy === undefined) {
      throw new Error(`e2a_json: no legacy reader ${entry.legacy} for ${schema.typeName}.${entry.name}`);
    }
    if (READERS[entry.kind] === undefined) {
      throw new Error(`e2a_json: ${schema.typeName}.${entry.name} has JSON kind ${entry.kind}, unknown here`);
    }
    const values = entry.enum === undefined ? [] : ENUM_VALUES[entry.enum];
    return {
      ...entry,
      local: descriptor.localName,
      key: `${quote(entry.name)}:`,
      numbers: new Map(values),
      names: new Map(values.map(([name, number]) => [number, name])),
      internalKeys: entry.internalKeys ?? [],
      read: legacy ?? ((data, field) => field.readValue(data.get(field.name), field)),
      readValue: READERS[entry.kind],
    };
  });
}

const ENVELOPE_TABLE = bindTable(ENVELOPE_FIELDS, E2AEnvelopeSchema);
const RESPONSE_TABLE = bindTable(RESPONSE_FIELDS, E2AResponseSchema);

/** A record message from its wire JSON, read field by field in field order, so that the first error
 * is the one Python reports. */
function recordFromJson(json, documentName, table, schema) {
  const data = readDocument(json, documentName);
  const init = {};
  for (const field of table) init[field.local] = field.read(data, field);
  checkEncodable(init, table);
  // The free-form texts, normalized as read: the writer need not check them again.
  const texts = [];
  for (const field of table) {
    const value = init[field.local];
    if (OBJECT_KINDS.has(field.kind)) {
      texts.push(value);
    } else if (field.kind === "provenance") {
      init[field.local] = provenanceMessage(value);
      texts.push(init[field.local].details);
    } else if (field.kind === "auth" && value !== undefined) {
      init[field.local] = create(E2AAuthSchema, {
        ...value,
        extraHeaders: value.extraHeaders.map((header) => create(HttpHeaderSchema, header)),
      });
      texts.push(init[field.local].meta);
    }
  }
  return remember(create(schema, init), texts);
}

/**
 * An e2a.v1.E2AEnvelope from E2A wire JSON, legacy keys of spec sections 9-11 included.
 * Throws E2AFieldError naming the field at fault ("$" for text that is not JSON).
 */
export function envelopeFromJson(json) {
  return recordFromJson(json, "envelope", ENVELOPE_TABLE, E2AEnvelopeSchema);
}

/** An e2a.v1.E2AResponse from E2A wire JSON (see envelopeFromJson). */
export function responseFromJson(json) {
  return recordFromJson(json, "response", RESPONSE_TABLE, E2AResponseSchema);
}

// --- writing ---------------------------------------------------------------------------------

const optionalText = (value) => (value === undefined ? "null" : quote(value));

function provenanceJson(message, slot) {
  if (message === undefined) {
    return '{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{}}';
  }
  return (
    `{"source_protocol":${quote(message.sourceProtocol)},"converter":${optionalText(message.converter)}` +
    `,"converted_at":${optionalText(message.convertedAt)}` +
    `,"details":${slot(message.details, "provenance.details", "{}")}}`
  );
}

function jsonrpcIdJson(message, path) {
  const kind = message?.kind;
  switch (kind?.case) {
    case undefined:
      return "null";
    case "stringValue":
      return quote(kind.value);
    case "integerValue":
      return String(kind.value);
    case "numberValue":
      if (!Number.isFinite(kind.value)) {
        throw new E2AFieldError(path, `number_value ${kind.value} is not a JSON number`);
      }
      return wireFloat(kind.value);
    default:
      if (!/^-?[0-9]+$/.test(kind.value)) {
        throw new E2AFieldError(path, `big_integer_value ${JSON.stringify(kind.value)} is not a decimal integer`);
      }
      if (kind.value.replace("-", "").length > MAX_INTEGER_DIGITS) {
        throw new E2AFieldError(path, `big_integer_value has more than ${MAX_INTEGER_DIGITS} digits`);
      }
      return BigInt(kind.value).toString();
  }
}

/** An enum field as its value's json_value; unspecified (0) is the field's default. */
function enumJson(number, field) {
  if (number === 0) return quote(field.default);
  const name = field.names.get(number);
  if (name === undefined) {
    throw new E2AFieldError(field.name, `unknown ${field.enum.split(".").pop()} value ${number}`);
  }
  return quote(name);
}

function authJson(message, slot) {
  if (message === undefined) return "null";
  // A repeated header name keeps its first place and takes the last value, as Python's dict does.
  const headers = new Map();
  for (const { name, value } of message.extraHeaders) headers.set(name, value);
  let headersJson = "";
  for (const [name, value] of headers) headersJson += `${headersJson ? "," : ""}${quote(name)}:${quote(value)}`;
  return (
    `{"method_id":${optionalText(message.methodId)},"bearer_token":${optionalText(message.bearerToken)}` +
    `,"api_key_ref":${optionalText(message.apiKeyRef)},"credential_ref":${optionalText(message.credentialRef)}` +
    `,"extra_headers":{${headersJson}},"_meta":${slot(message.meta, "auth._meta", "{}")}}`
  );
}

const textListJson = (values) => `[${values.map(quote).join(",")}]`;

// How a message value of each JSON kind is written; `slot` writes free-form texts (see slotWriter).
const WRITERS = {
  text: (value) => optionalText(value),
  plain_text: (value) => quote(value),
  flag: (value) => String(value),
  integer: (value) => String(value),
  text_list: (value) => textListJson(value),
  object: (value, field, slot) => slot(value, field.name, "{}"),
  optional_object: (value, field, slot) => slot(value, field.name, "null"),
  jsonrpc_id: (value, field) => jsonrpcIdJson(value, field.name),
  enum: (value, field) => enumJson(value, field),
  provenance: (value, _field, slot) => provenanceJson(value, slot),
  auth: (value, _field, slot) => authJson(value, slot),
};

function recordToJson(message, table) {
  const slot = slotWriter(message);
  let json = "";
  for (const field of table) {
    json += `${json ? "," : "{"}${field.key}${WRITERS[field.kind](message[field.local], field, slot)}`;
  }
  return `${json}}`;
}

/**
 * The E2A wire JSON of an e2a.v1.E2AEnvelope: every field, in field order. Free-form text in the
 * message is validated (E2AFieldError naming the field) and written normalized.
 */
export function envelopeToJson(message) {
  return recordToJson(message, ENVELOPE_TABLE);
}

/** The E2A wire JSON of an e2a.v1.E2AResponse (see envelopeToJson). */
export function responseToJson(message) {
  return recordToJson(message, RESPONSE_TABLE);
}
