package io.e2a.v1.conformance;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.e2a.v1.E2AEnvelope;
import io.e2a.v1.E2AResponse;
import io.e2a.v1.json.E2AJson;
import io.e2a.v1.json.E2AJsonException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The Java testee of the E2A conformance suite ({@code conformance/README.md}): converts records
 * between wire JSON and binary protobuf, one request line on stdin, one answer line on stdout.
 */
public final class ConformanceTestee {
  private static final JsonFactory JSON =
      JsonFactory.builder()
          .streamReadConstraints(
              StreamReadConstraints.builder()
                  .maxStringLength(Integer.MAX_VALUE)
                  .maxNumberLength(Integer.MAX_VALUE)
                  .maxDocumentLength(-1)
                  .build())
          .build();

  private ConformanceTestee() {}

  /** A request the testee cannot carry out (answered with field ""). */
  private static final class RequestException extends Exception {
    private static final long serialVersionUID = 1L;

    RequestException(String message) {
      super(message);
    }
  }

  /** One request of the protocol. */
  private static final class Request {
    String id = "null"; // the id's JSON text, echoed back
    String message;
    String from;
    String to;
    String payload;
  }

  /**
   * Runs the testee until stdin closes.
   *
   * @param args unused
   * @throws IOException if stdin or stdout fail
   */
  public static void main(String[] args) throws IOException {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Writer out = new OutputStreamWriter(new PrintStream(System.out, false), StandardCharsets.UTF_8);
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.isBlank()) {
        continue;
      }
      out.write(answer(line));
      out.write('\n');
      out.flush();
    }
  }

  /**
   * The answer line (without its newline) to one request line.
   *
   * @param line the request
   * @return the answer
   */
  public static String answer(String line) {
    Request request;
    try {
      request = parseRequest(line);
    } catch (IOException | RuntimeException e) {
      return errorLine("null", "", "request is not a JSON object of the testee protocol: " + e);
    }
    try {
      return payloadLine(request.id, convert(request));
    } catch (E2AJsonException e) {
      return errorLine(request.id, e.field(), e.reason());
    } catch (RequestException e) {
      return errorLine(request.id, "", e.getMessage());
    } catch (RuntimeException e) {
      return errorLine(request.id, "", "unexpected error: " + e);
    }
  }

  private static Request parseRequest(String line) throws IOException {
    Request request = new Request();
    try (JsonParser parser = JSON.createParser(line)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not an object");
      }
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String name = parser.currentName();
        JsonToken token = parser.nextToken();
        switch (name) {
          case "id" -> request.id = token.isScalarValue() ? idText(parser, token) : "null";
          case "message" -> request.message = token == JsonToken.VALUE_STRING ? parser.getText() : null;
          case "from" -> request.from = token == JsonToken.VALUE_STRING ? parser.getText() : null;
          case "to" -> request.to = token == JsonToken.VALUE_STRING ? parser.getText() : null;
          case "payload" -> request.payload = token == JsonToken.VALUE_STRING ? parser.getText() : null;
          default -> {
            // other keys (the runner's "name", "expect", ...) are not needed
          }
        }
        parser.skipChildren(); // a non-scalar value of any key
      }
    }
    return request;
  }

  private static String idText(JsonParser parser, JsonToken token) throws IOException {
    if (token == JsonToken.VALUE_STRING) {
      StringWriter text = new StringWriter();
      try (JsonGenerator generator = JSON.createGenerator(text)) {
        generator.writeString(parser.getText());
      }
      return text.toString();
    }
    return parser.getText();
  }

  private static String convert(Request request) throws RequestException {
    boolean envelope;
    if ("envelope".equals(request.message)) {
      envelope = true;
    } else if ("response".equals(request.message)) {
      envelope = false;
    } else {
      throw new RequestException("unknown message " + request.message + " (want envelope or response)");
    }
    for (String format : new String[] {request.from, request.to}) {
      if (!"wire_json".equals(format) && !"protobuf".equals(format)) {
        throw new RequestException("unknown format " + format + " (want wire_json or protobuf)");
      }
    }
    if (request.payload == null) {
      throw new RequestException("payload is missing or not a string");
    }
    Message message;
    if (request.from.equals("wire_json")) {
      message = envelope ? E2AJson.envelopeFromJson(request.payload) : E2AJson.responseFromJson(request.payload);
    } else {
      byte[] data;
      try {
        data = Base64.getDecoder().decode(request.payload);
      } catch (IllegalArgumentException e) {
        throw new RequestException("payload is not standard base64: " + e.getMessage());
      }
      try {
        message = envelope ? E2AEnvelope.parseFrom(data) : E2AResponse.parseFrom(data);
      } catch (InvalidProtocolBufferException e) {
        throw new E2AJsonException(
            "$",
            "not a valid e2a.v1." + (envelope ? "E2AEnvelope" : "E2AResponse") + " message: " + e.getMessage());
      }
      // Decoding a message checks it: its JSON texts and strings must make a valid record.
      String wire = toJson(message);
      if (request.to.equals("wire_json")) {
        return wire;
      }
      message = envelope ? E2AJson.envelopeFromJson(wire) : E2AJson.responseFromJson(wire);
    }
    if (request.to.equals("wire_json")) {
      return toJson(message);
    }
    return Base64.getEncoder().encodeToString(message.toByteArray());
  }

  private static String toJson(Message message) {
    return message instanceof E2AEnvelope e ? E2AJson.envelopeToJson(e) : E2AJson.responseToJson((E2AResponse) message);
  }

  private static String payloadLine(String id, String payload) {
    return "{\"id\":" + id + ",\"payload\":" + quoted(payload) + "}";
  }

  private static String errorLine(String id, String field, String message) {
    return "{\"id\":" + id + ",\"error\":{\"field\":" + quoted(field) + ",\"message\":" + quoted(message) + "}}";
  }

  /** s as a JSON string, non-ASCII and lone surrogates escaped so the line is always UTF-8. */
  private static String quoted(String s) {
    StringBuilder out = new StringBuilder(s.length() + 2);
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20 || c >= 0x7f) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }
}
