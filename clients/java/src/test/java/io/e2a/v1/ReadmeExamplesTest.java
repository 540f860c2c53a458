package io.e2a.v1;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.e2a.v1.json.E2AJson;
import io.e2a.v1.json.E2AJsonException;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The examples of README.md, section "Using the schema from Java", as they are quoted there. */
class ReadmeExamplesTest {

  // README: reading and writing E2A wire JSON
  static void readAndWriteWireJson() throws Exception {
    E2AEnvelope envelope =
        E2AJson.envelopeFromJson(
            "{\"method\": \"session/prompt\", \"channel_id\": \"web\", \"jsonrpc_id\": 18446744073709551617,"
                + " \"params\": {\"prompt\": \"hi\", \"n\": 123456789012345678901234567890, \"x\": 1.0}}");
    assertEquals("web", envelope.getChannel()); // the legacy key channel_id, read as Python reads it
    assertEquals("18446744073709551617", envelope.getJsonrpcId().getBigIntegerValue());
    assertEquals( // free-form values stay JSON text, exactly as written
        "{\"prompt\":\"hi\",\"n\":123456789012345678901234567890,\"x\":1.0}", envelope.getParams());

    // Protobuf for the gRPC services, and back to the wire JSON: every field, in field order.
    E2AEnvelope decoded = E2AEnvelope.parseFrom(envelope.toByteArray());
    String wire = E2AJson.envelopeToJson(decoded.toBuilder().setSessionId("sess_1").build());
    assertTrue(wire.startsWith("{\"protocol_version\":\"1.0\",\"provenance\":{\"source_protocol\":\"e2a\","));
    assertTrue(wire.contains("\"jsonrpc_id\":18446744073709551617,"));
    assertTrue(wire.contains("\"session_id\":\"sess_1\","));

    // Bad input: an E2AJsonException naming the field as Python does ("$": not JSON at all).
    E2AJsonException error =
        assertThrows(
            E2AJsonException.class,
            () -> E2AJson.envelopeFromJson("{\"auth\": {\"extra_headers\": {\"X-Trace\": 7}}}"));
    assertEquals("auth.extra_headers.X-Trace", error.field());
    assertEquals("$", assertThrows(E2AJsonException.class, () -> E2AJson.envelopeFromJson("{")).field());
  }

  // README: calling the service (target is "host:port" of a running `e2a-grpc serve`)
  static void callTheService(String target) throws Exception {
    ManagedChannel channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create()).build();
    try {
      // E2A wire JSON -> ACP JSON-RPC.
      ToACPResponse acp =
          ConversionServiceGrpc.newBlockingStub(channel)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .toACP(
                  ToACPRequest.newBuilder()
                      .setEnvelope(
                          E2AJson.envelopeFromJson(
                              "{\"method\":\"session/prompt\",\"session_id\":\"s1\",\"jsonrpc_id\":1,"
                                  + "\"params\":{\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}}"))
                      .build());
      assertTrue(acp.getJsonrpc().contains("\"method\":\"session/prompt\""), acp.getJsonrpc());

      // Chat: one envelope in, a stream of E2AResponse frames out; the last one is final.
      Iterator<ChatResponse> frames =
          AgentServiceGrpc.newBlockingStub(channel)
              .withDeadlineAfter(30, TimeUnit.SECONDS)
              .chat(
                  ChatRequest.newBuilder()
                      .setEnvelope(
                          E2AJson.envelopeFromJson(
                              "{\"method\":\"chat.send\",\"params\":{\"text\":\"Hello there\"}}"))
                      .build());
      List<String> kinds = new ArrayList<>();
      while (frames.hasNext()) {
        E2AResponse frame = frames.next().getResponse();
        kinds.add(frame.getResponseKind());
        String wire = E2AJson.responseToJson(frame); // each frame as E2A wire JSON
        assertTrue(wire.startsWith("{\"protocol_version\":\"1.0\",\"response_id\":"), wire);
      }
      assertEquals(List.of("e2a.chunk", "e2a.chunk", "e2a.complete"), kinds);
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void readmeWireJsonExample() throws Exception {
    readAndWriteWireJson();
  }

  @Test
  void readmeServiceExample() throws Exception {
    try (PythonServer server = PythonServer.start()) {
      callTheService(server.target());
    }
  }
}
