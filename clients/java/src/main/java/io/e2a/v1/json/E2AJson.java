package io.e2a.v1.json;

import io.e2a.v1.E2AEnvelope;
import io.e2a.v1.E2AResponse;

/**
 * Reads and writes the E2A wire JSON of whole records ({@code docs/wire-json.md}), as the Python
 * reference does: {@code E2AEnvelope.from_json(text).to_proto()} and {@code
 * E2AEnvelope.from_proto(msg).to_json()}.
 *
 * <p>Reading takes the legacy keys of the protocol document (sections 9-11), any key order and any
 * whitespace; writing gives every field in field order, compact, with the wire JSON's escaping.
 * Free-form values ({@code params}, {@code body}, {@code channel_context}, ...) never go through
 * Java maps of decoded numbers: they are checked and carried as JSON text, so integers of any size,
 * {@code 1.0} versus {@code 1}, key order and lone surrogates (as escapes) survive. A bad input
 * gives an {@link E2AJsonException} naming the field the Python reference names.
 *
 * <pre>{@code
 * E2AEnvelope envelope = E2AJson.envelopeFromJson("{\"method\":\"session/prompt\",\"params\":{\"n\":1}}");
 * String wire = E2AJson.envelopeToJson(envelope);
 * }</pre>
 */
public final class E2AJson {
  private E2AJson() {}

  /**
   * Reads the E2A wire JSON of a request (an {@code E2AEnvelope}).
   *
   * @param json the JSON text of one envelope
   * @return the protobuf message it reads as
   * @throws E2AJsonException if the text is not a valid envelope; {@link E2AJsonException#field()}
   *     names the field
   */
  public static E2AEnvelope envelopeFromJson(String json) {
    return WireReader.envelope(json);
  }

  /**
   * Writes the E2A wire JSON of a request message.
   *
   * @param envelope the message
   * @return its wire JSON: every field in field order, compact, no trailing newline
   * @throws E2AJsonException if a free-form field does not hold the JSON text of an object, or
   *     another field holds a value wire JSON cannot carry
   */
  public static String envelopeToJson(E2AEnvelope envelope) {
    return WireWriter.envelope(envelope);
  }

  /**
   * Reads the E2A wire JSON of a response record or stream frame (an {@code E2AResponse}).
   *
   * @param json the JSON text of one response
   * @return the protobuf message it reads as
   * @throws E2AJsonException if the text is not a valid response; {@link E2AJsonException#field()}
   *     names the field
   */
  public static E2AResponse responseFromJson(String json) {
    return WireReader.response(json);
  }

  /**
   * Writes the E2A wire JSON of a response message.
   *
   * @param response the message
   * @return its wire JSON: every field in field order, compact, no trailing newline
   * @throws E2AJsonException if a free-form field does not hold the JSON text of an object, or
   *     another field holds a value wire JSON cannot carry
   */
  public static String responseToJson(E2AResponse response) {
    return WireWriter.response(response);
  }

  /**
   * Checks the JSON text of a free-form field ({@code params}, {@code body}, ...) and returns it in
   * the canonical form the wire JSON embeds: compact, keys in their order, numbers as written.
   * Empty text is {@code {}}, as in the messages.
   *
   * @param field the field name, for errors
   * @param json the JSON text of an object, or {@code ""}
   * @return the canonical text
   * @throws E2AJsonException if the text is not the JSON text of an object
   */
  public static String canonicalObject(String field, String json) {
    if (json.isEmpty()) {
      return "{}";
    }
    JsonValue value = JsonValue.parse(json, field, 1);
    if (!(value instanceof JsonValue.Obj)) {
      throw WireReader.typeError(field, "JSON text of an object", value);
    }
    return JsonValue.text(value);
  }
}
