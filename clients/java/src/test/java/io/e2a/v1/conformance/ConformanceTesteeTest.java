package io.e2a.v1.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The testee's line protocol (conformance/README.md), one request at a time. */
class ConformanceTesteeTest {
  @Test
  void answersWithThePayload() {
    String answer =
        ConformanceTestee.answer(
            "{\"id\": 7, \"message\": \"envelope\", \"from\": \"wire_json\", \"to\": \"wire_json\","
                + " \"payload\": \"{\\\"params\\\":{\\\"t\\\":\\\"h\\u00e9\\\"}}\", \"expect\": {\"x\": [1]}}");
    assertTrue(answer.startsWith("{\"id\":7,\"payload\":\"{\\\"protocol_version\\\":\\\"1.0\\\","), answer);
    assertTrue(answer.contains("\\\"params\\\":{\\\"t\\\":\\\"h\\u00e9\\\"}"), answer);
  }

  @Test
  void answersWithTheField() {
    assertEquals(
        "{\"id\":\"a\",\"error\":{\"field\":\"params\",\"message\":\"expected an object, got string\"}}",
        ConformanceTestee.answer(
            "{\"id\":\"a\",\"message\":\"envelope\",\"from\":\"wire_json\",\"to\":\"protobuf\","
                + "\"payload\":\"{\\\"params\\\":\\\"{}\\\"}\"}"));
    assertTrue(
        ConformanceTestee.answer(
                "{\"id\":1,\"message\":\"response\",\"from\":\"protobuf\",\"to\":\"wire_json\",\"payload\":\"/w==\"}")
            .contains("\"field\":\"$\""));
    assertTrue(
        ConformanceTestee.answer("{\"id\":2,\"message\":\"nope\",\"from\":\"wire_json\",\"to\":\"wire_json\",\"payload\":\"{}\"}")
            .contains("\"field\":\"\""));
  }
}
