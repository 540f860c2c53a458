// TypeScript looks for the types of a .mjs module in a .d.mts file: they are in e2a_json.d.ts.
export * from "./e2a_json.js";
