// Speed of the TypeScript wire JSON codec: envelopeFromJson + envelopeToJson of one envelope versus
// JSON.parse + JSON.stringify of the same text (the lossy built-in round trip), in the same process.
//
// Usage: node clients/ts/bench/wire_json_bench.mjs [ENVELOPE.json] [--rounds N] [--seconds S]
//
// ENVELOPE.json holds the wire JSON of one envelope (bench/ts_wire_json.py passes the ~3 KB
// multimodal session/prompt of bench/codec_roundtrip.py); without it a built-in ~3 KB envelope of
// the same shape is used. Rounds alternate which side runs first, so both share the machine's
// drift. Prints one JSON object: per side the min/median/max microseconds per round trip, and the
// median over rounds of codec time / baseline time measured back to back.
import { readFile } from "node:fs/promises";
import { register } from "node:module";
import { parseArgs } from "node:util";

register("../resolve_hooks.mjs", import.meta.url);
const { envelopeFromJson, envelopeToJson } = await import("../e2a_json.mjs");

const CALIBRATION_MS = 20;
const WARM_UP_MS = 500;

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: "string", default: "15" }, seconds: { type: "string", default: "0.2" } },
});
const rounds = Number(options.rounds);
const secondsPerRound = Number(options.seconds);
if (!(Number.isInteger(rounds) && rounds > 0 && secondsPerRound > 0)) {
  throw new Error("--rounds must be a positive integer and --seconds a positive number");
}

/** A deterministic stand-in for the multimodal prompt: text, a base64 image and three file refs. */
function builtInEnvelope() {
  const image = Buffer.alloc(1200, 0);
  for (let i = 0; i < image.length; i++) image[i] = (i * 2654435761) >>> 24;
  const file = (uri, name, mime, size, meta) => ({ uri, name, mime_type: mime, size, _meta: meta });
  const envelope = {
    protocol_version: "1.0",
    request_id: "req_mm_0001",
    jsonrpc_id: 42,
    session_id: "sess_mm_7f3a9c",
    timestamp: "2026-03-30T09:15:00+00:00",
    identity_origin: "user",
    channel: "ide",
    user_id: "u_001",
    method: "session/prompt",
    is_stream: true,
    params: {
      sessionId: "sess_mm_7f3a9c",
      prompt: [
        { type: "text", text: "What is wrong in this screenshot? The files below drew it." },
        { type: "image", mimeType: "image/png", data: image.toString("base64") },
      ],
      files: [
        file("file:///workspace/src/app/main.py", "main.py", "text/x-python", 4821, { sha256: "ab".repeat(32), lines: 142 }),
        file("file:///workspace/docs/design.md", "design.md", "text/markdown", 12034, { encoding: "utf-8" }),
        file("https://example.com/assets/screenshot.png", "screenshot.png", "image/png", null, {}),
      ],
    },
    provenance: { source_protocol: "acp", converter: "bench", details: { kind: "acp_jsonrpc" } },
  };
  return envelopeToJson(envelopeFromJson(JSON.stringify(envelope)));
}

const text = positionals[0] === undefined ? builtInEnvelope() : await readFile(positionals[0], "utf8");

const contestants = {
  codec: () => envelopeToJson(envelopeFromJson(text)),
  baseline: () => JSON.stringify(JSON.parse(text)),
};

// The codec must give back the wire JSON it read (the input is in wire JSON form), or it is not
// doing the work being timed.
if (contestants.codec() !== envelopeToJson(envelopeFromJson(contestants.codec()))) {
  throw new Error("the codec's round trip is not stable on the benchmark envelope");
}

/** Milliseconds for `loops` calls of `fn`. */
function time(fn, loops) {
  const start = performance.now();
  for (let i = 0; i < loops; i++) fn();
  return performance.now() - start;
}

/** Calls per round: calibrated (doubling) to about secondsPerRound, after a warm-up of the JIT. */
function loopsFor(fn) {
  const warmUpEnd = performance.now() + WARM_UP_MS;
  while (performance.now() < warmUpEnd) time(fn, 100);
  for (let loops = 1; ; loops *= 2) {
    const elapsed = time(fn, loops);
    if (elapsed >= CALIBRATION_MS) return Math.max(1, Math.ceil((loops * secondsPerRound * 1000) / elapsed));
  }
}

const names = Object.keys(contestants);
const loops = Object.fromEntries(names.map((name) => [name, loopsFor(contestants[name])]));
const samples = Object.fromEntries(names.map((name) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? names : [...names].reverse();
  for (const name of order) {
    samples[name].push((time(contestants[name], loops[name]) * 1000) / loops[name]);
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const summary = (values) => ({ min_us: Math.min(...values), median_us: median(values), max_us: Math.max(...values) });

process.stdout.write(
  `${JSON.stringify({
    node: process.version,
    bytes: new TextEncoder().encode(text).length,
    rounds,
    loops,
    codec: summary(samples.codec),
    baseline: summary(samples.baseline),
    ratio: median(samples.codec.map((value, round) => value / samples.baseline[round])),
  })}\n`,
);
