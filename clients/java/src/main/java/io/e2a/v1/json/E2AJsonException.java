package io.e2a.v1.json;

/**
 * A record that cannot be read or written as E2A wire JSON, with the one field at fault.
 *
 * <p>{@link #field()} is the dotted path the Python reference names for the same input
 * ({@code "params"}, {@code "auth.extra_headers.X"}, {@code "expected_output_modes[1]"}); {@code "$"}
 * stands for the JSON text as a whole (not JSON, nested too deep, protobuf bytes that do not
 * decode), {@code "envelope"} or {@code "response"} for a JSON text that is not an object. See
 * {@code docs/wire-json.md}, section 7.
 */
public class E2AJsonException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /** The longest field path and reason kept, in characters, as in the Python reference. */
  private static final int MAX_FIELD_CHARS = 200;

  private static final int MAX_REASON_CHARS = 400;

  private final String field;
  private final String reason;

  /**
   * Creates an error about one field.
   *
   * @param field the dotted path of the field at fault, {@code "$"} for the whole text
   * @param reason what is wrong with it (free text)
   */
  public E2AJsonException(String field, String reason) {
    super(shortened(field, MAX_FIELD_CHARS) + ": " + shortened(reason, MAX_REASON_CHARS));
    this.field = shortened(field, MAX_FIELD_CHARS);
    this.reason = shortened(reason, MAX_REASON_CHARS);
  }

  /**
   * The dotted path of the field at fault.
   *
   * @return the path, e.g. {@code "params"}, or {@code "$"} for the text as a whole
   */
  public String field() {
    return field;
  }

  /**
   * What is wrong with the field, without the path.
   *
   * @return the reason (free text)
   */
  public String reason() {
    return reason;
  }

  private static String shortened(String text, int limit) {
    int count = text.codePointCount(0, text.length());
    if (count <= limit) {
      return text;
    }
    return text.substring(0, text.offsetByCodePoints(0, limit))
        + "... ("
        + (count - limit)
        + " more characters)";
  }
}
