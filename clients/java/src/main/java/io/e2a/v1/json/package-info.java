/**
 * The E2A wire JSON of whole records ({@code docs/wire-json.md}): {@link io.e2a.v1.json.E2AJson}
 * reads and writes {@link io.e2a.v1.E2AEnvelope} and {@link io.e2a.v1.E2AResponse} messages as the
 * Python reference does, and {@link io.e2a.v1.json.E2AJsonException} names the field of a bad input.
 */
package io.e2a.v1.json;
