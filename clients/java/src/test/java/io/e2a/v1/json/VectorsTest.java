package io.e2a.v1.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.e2a.v1.E2AEnvelope;
import io.e2a.v1.E2AResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The codec on the conformance vectors of the Python reference (testdata/vectors): every {@code
 * E2AEnvelope.from_dict} / {@code E2AResponse.from_dict} case whose output is a record must read
 * into a message whose wire JSON is that record, also after a protobuf round trip.
 */
class VectorsTest {
  /**
   * The vector inputs the Python reference's wire JSON reader rejects (ill-typed values, which
   * testdata/README.md allows an implementation to reject), with the field it names: vector number
   * to field. Found with {@code from_json(json.dumps(input["data"])).to_proto()} in Python, as the
   * Go codec's tests list them.
   */
  private static final Map<Integer, String> ENVELOPE_REJECTS =
      Map.ofEntries(
          Map.entry(12, "provenance.source_protocol"),
          Map.entry(15, "is_stream"),
          Map.entry(18, "expected_output_modes"),
          Map.entry(24, "protocol_version"),
          Map.entry(33, "provenance"),
          Map.entry(36, "protocol_version"),
          Map.entry(39, "params"),
          Map.entry(42, "is_stream"),
          Map.entry(48, "expected_output_modes"),
          Map.entry(54, "agent_ref"),
          Map.entry(60, "agent_ref"),
          Map.entry(63, "provenance"),
          Map.entry(66, "agent_ref"),
          Map.entry(69, "provenance.source_protocol"),
          Map.entry(72, "identity_origin"),
          Map.entry(75, "is_stream"),
          Map.entry(81, "identity_origin"),
          Map.entry(84, "agent_ref"),
          Map.entry(87, "timestamp"),
          Map.entry(99, "is_stream"),
          Map.entry(102, "identity_origin"),
          Map.entry(111, "params"),
          Map.entry(114, "timestamp"),
          Map.entry(129, "provenance.source_protocol"),
          Map.entry(150, "params"),
          Map.entry(168, "protocol_version"),
          Map.entry(171, "identity_origin"),
          Map.entry(186, "is_stream"),
          Map.entry(192, "binding"),
          Map.entry(195, "is_stream"),
          Map.entry(198, "protocol_version"),
          Map.entry(204, "agent_ref"),
          Map.entry(210, "agent_ref"),
          Map.entry(222, "timestamp"),
          Map.entry(225, "identity_origin"),
          Map.entry(231, "timestamp"),
          Map.entry(234, "provenance.source_protocol"),
          Map.entry(243, "identity_origin"),
          Map.entry(246, "timestamp"),
          Map.entry(255, "is_stream"),
          Map.entry(261, "identity_origin"),
          Map.entry(264, "identity_origin"),
          Map.entry(267, "source_agent_id"),
          Map.entry(270, "identity_origin"),
          Map.entry(291, "identity_origin"),
          Map.entry(294, "identity_origin"));

  private static final Map<Integer, String> RESPONSE_REJECTS =
      Map.ofEntries(
          Map.entry(0, "sequence"),
          Map.entry(18, "provenance"),
          Map.entry(27, "provenance"),
          Map.entry(30, "is_final"),
          Map.entry(33, "provenance"),
          Map.entry(42, "sequence"),
          Map.entry(48, "provenance"),
          Map.entry(51, "provenance"),
          Map.entry(54, "provenance"),
          Map.entry(63, "sequence"),
          Map.entry(69, "is_final"),
          Map.entry(81, "sequence"),
          Map.entry(87, "sequence"),
          Map.entry(105, "sequence"),
          Map.entry(108, "identity_origin"),
          Map.entry(111, "timestamp"),
          Map.entry(114, "is_final"),
          Map.entry(117, "is_final"),
          Map.entry(126, "is_final"),
          Map.entry(132, "provenance"),
          Map.entry(147, "sequence"),
          Map.entry(153, "sequence"),
          Map.entry(177, "provenance"),
          Map.entry(201, "sequence"),
          Map.entry(210, "sequence"),
          Map.entry(216, "provenance"),
          Map.entry(219, "body"),
          Map.entry(228, "sequence"),
          Map.entry(231, "provenance"),
          Map.entry(243, "sequence"),
          Map.entry(258, "provenance"),
          Map.entry(261, "is_final"),
          Map.entry(279, "provenance"),
          Map.entry(288, "sequence"),
          Map.entry(291, "sequence"),
          Map.entry(294, "sequence"),
          Map.entry(297, "body"));

  /**
   * Where the codec departs from the vectors on purpose: a null for a field that is never null
   * reads as the field's default, as protobuf's JSON mapping reads null (docs/wire-json.md 2).
   */
  private static final Map<String, String> ENVELOPE_NULL_DEFAULTS = Map.of("identity_origin", "user");

  private static final Map<String, String> RESPONSE_NULL_DEFAULTS =
      Map.of("identity_origin", "agent", "status", "in_progress");

  static Path repoRoot() {
    return Path.of(System.getProperty("e2a.repo.root", "../..")).toAbsolutePath().normalize();
  }

  private static Stream<DynamicTest> vectors(
      String file,
      Map<Integer, String> rejects,
      Map<String, String> nullDefaults,
      Function<String, String> readWrite,
      Function<String, String> viaProtobuf)
      throws IOException {
    List<DynamicTest> tests = new ArrayList<>();
    List<String> lines =
        Files.readAllLines(repoRoot().resolve("testdata/vectors").resolve(file), StandardCharsets.UTF_8);
    for (String line : lines) {
      if (line.isBlank()) {
        continue;
      }
      JsonValue.Obj vector = (JsonValue.Obj) JsonValue.parse(line, "$", 1);
      JsonValue.Obj output = (JsonValue.Obj) vector.members().get("output");
      JsonValue ok = output.members().get("ok");
      if (ok == null) {
        continue; // a Python exception of from_dict, not a wire document
      }
      JsonValue data = ((JsonValue.Obj) vector.members().get("input")).members().get("data");
      String input = JsonValue.text(data);
      int number = Integer.parseInt(JsonValue.text(vector.members().get("i")));
      String name = file + " #" + number;
      String rejected = rejects.get(number);
      if (rejected != null) {
        tests.add(
            DynamicTest.dynamicTest(
                name + " (rejected)",
                () -> {
                  E2AJsonException e =
                      assertThrows(E2AJsonException.class, () -> readWrite.apply(input), input);
                  assertEquals(rejected, e.field(), input);
                }));
        continue;
      }
      LinkedHashMap<String, JsonValue> want = new LinkedHashMap<>(((JsonValue.Obj) ok).members());
      for (Map.Entry<String, String> d : nullDefaults.entrySet()) {
        if (((JsonValue.Obj) data).members().get(d.getKey()) instanceof JsonValue.Null) {
          want.put(d.getKey(), new JsonValue.Str(d.getValue()));
        }
      }
      String expected = JsonValue.text(new JsonValue.Obj(want));
      tests.add(
          DynamicTest.dynamicTest(
              name,
              () -> {
                String wire = readWrite.apply(input);
                assertNull(JsonCompare.difference(expected, wire), () -> name + ": " + wire);
                assertEquals(wire, viaProtobuf.apply(wire), "protobuf round trip");
                assertEquals(wire, readWrite.apply(wire), "wire JSON round trip");
              }));
    }
    assertTrue(tests.size() > 50, "vectors found: " + tests.size());
    return tests.stream();
  }

  @TestFactory
  Stream<DynamicTest> envelopeVectors() throws IOException {
    return vectors(
        "E2AEnvelope.from_dict.jsonl",
        ENVELOPE_REJECTS,
        ENVELOPE_NULL_DEFAULTS,
        text -> E2AJson.envelopeToJson(E2AJson.envelopeFromJson(text)),
        text -> {
          try {
            byte[] bytes = E2AJson.envelopeFromJson(text).toByteArray();
            return E2AJson.envelopeToJson(E2AEnvelope.parseFrom(bytes));
          } catch (IOException e) {
            throw new AssertionError(e);
          }
        });
  }

  @TestFactory
  Stream<DynamicTest> responseVectors() throws IOException {
    return vectors(
        "E2AResponse.from_dict.jsonl",
        RESPONSE_REJECTS,
        RESPONSE_NULL_DEFAULTS,
        text -> E2AJson.responseToJson(E2AJson.responseFromJson(text)),
        text -> {
          try {
            byte[] bytes = E2AJson.responseFromJson(text).toByteArray();
            return E2AJson.responseToJson(E2AResponse.parseFrom(bytes));
          } catch (IOException e) {
            throw new AssertionError(e);
          }
        });
  }

  @Test
  void emptyEnvelopeIsTheDocumentExample() {
    // docs/wire-json.md, section 1: an envelope built from an empty message.
    assertEquals(
        "{\"protocol_version\":null,\"provenance\":{\"source_protocol\":\"e2a\",\"converter\":null,"
            + "\"converted_at\":null,\"details\":{}},\"request_id\":null,\"jsonrpc_id\":null,"
            + "\"correlation_id\":null,\"task_id\":null,\"context_id\":null,\"session_id\":null,"
            + "\"message_id\":null,\"timestamp\":null,\"identity_origin\":\"user\",\"channel\":null,"
            + "\"user_id\":null,\"agent_ref\":null,\"chat_id\":null,\"source_agent_id\":null,"
            + "\"agent_id\":null,\"service_id\":null,\"workspace_key\":null,\"method\":null,"
            + "\"params\":{},\"ext_method\":null,\"session_update_kind\":null,\"is_stream\":false,"
            + "\"expected_output_modes\":[],\"auth\":null,\"channel_context\":{},"
            + "\"a2a_metadata\":{},\"acp_meta\":{}}",
        E2AJson.envelopeToJson(E2AEnvelope.getDefaultInstance()));
  }

  @Test
  void errorsNameTheField() {
    String[][] cases = {
      {"{\"params\":\"{}\"}", "params"},
      {"{\"auth\":{\"extra_headers\":{\"X\":1}}}", "auth.extra_headers.X"},
      {"{\"expected_output_modes\":[\"text\",1]}", "expected_output_modes[1]"},
      {"{\"provenance\":{\"details\":[]}}", "provenance.details"},
      {"{\"binding\":[\"acp\"]}", "binding"},
      {"{\"identity_origin\":\"robot\"}", "identity_origin"},
      {"{\"jsonrpc_id\":true}", "jsonrpc_id"},
      {"{\"params\":", "$"},
      {"{\"params\":{\"x\":NaN}}", "$"},
      {"[".repeat(600) + "]".repeat(600), "$"},
      {"[]", "envelope"},
    };
    for (String[] c : cases) {
      E2AJsonException e =
          assertThrows(E2AJsonException.class, () -> E2AJson.envelopeFromJson(c[0]), c[0]);
      assertEquals(c[1], e.field(), c[0]);
    }
    assertEquals(
        "sequence",
        assertThrows(
                E2AJsonException.class,
                () -> E2AJson.responseFromJson("{\"sequence\":9223372036854775808}"))
            .field());
    assertEquals(
        "params",
        assertThrows(
                E2AJsonException.class,
                () -> E2AJson.envelopeToJson(E2AEnvelope.newBuilder().setParams("[1]").build()))
            .field());
  }

  @Test
  void freeFormValuesAreExact() {
    String params =
        "{\"big\":18446744073709551616,\"f\":1.0,\"e\":1E+2,\"z\":-0.0,\"s\":\"\\ud800 \\u001f \\u2028 /\","
            + "\"dup\":1,\"o\":{},\"a\":[],\"dup\":2}";
    E2AEnvelope envelope = E2AJson.envelopeFromJson("{\"params\":" + params + "}");
    assertEquals(
        "{\"big\":18446744073709551616,\"f\":1.0,\"e\":1E+2,\"z\":-0.0,\"s\":\"\\ud800 \\u001f \u2028 /\","
            + "\"dup\":2,\"o\":{},\"a\":[]}",
        envelope.getParams());
  }

  @Test
  void floatsAreWrittenShortest() {
    double[] values = {1.0, 0.1, 1e-5, 1.5e-5, 9999999999999998.0, -0.0, 1e-6, 9.999999999999999e-6,
      1e16, 1.5e300, 5e-324, Double.MAX_VALUE, 0.3, 2.0 / 3};
    String[] texts = {"1.0", "0.1", "0.00001", "0.000015", "9999999999999998.0", "-0.0", "1e-6",
      "9.999999999999999e-6", "1e+16", "1.5e+300", "5e-324", "1.7976931348623157e+308", "0.3",
      "0.6666666666666666"};
    for (int i = 0; i < values.length; i++) {
      assertEquals(texts[i], Floats.wire(values[i]));
    }
    assertEquals("1e-05", Floats.pyRepr(1e-5));
  }
}
