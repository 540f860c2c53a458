package io.e2a.v1;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.e2a.v1.json.E2AJson;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The generated grpc-java stubs against the Python reference server: every ConversionService RPC
 * and a Chat stream (echo backend).
 */
class ConversionServiceTest {
  private static PythonServer server;

  @BeforeAll
  static void startServer() throws Exception {
    server = PythonServer.start();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  private static ConversionServiceGrpc.ConversionServiceBlockingStub conversion() {
    return ConversionServiceGrpc.newBlockingStub(server.channel())
        .withDeadlineAfter(30, TimeUnit.SECONDS);
  }

  @Test
  void toAcpKeepsEveryValue() {
    E2AEnvelope envelope =
        E2AEnvelope.newBuilder()
            .setMethod("session/prompt")
            .setSessionId("sess-1")
            .setChannel("cli")
            .setIdentityOrigin(IdentityOrigin.IDENTITY_ORIGIN_SERVICE)
            .setJsonrpcId(JsonRpcId.newBuilder().setIntegerValue((1L << 53) + 1))
            .setParams(
                "{\"text\":\"héllo ✓ 🚀\",\"n\":123456789012345678901234567890,\"x\":1.0,\"nested\":{\"b\":1,\"a\":[]}}")
            .build();
    ToACPResponse reply = conversion().toACP(ToACPRequest.newBuilder().setEnvelope(envelope).build());
    assertEquals(ToACPResponse.ResultCase.JSONRPC, reply.getResultCase());
    String call = reply.getJsonrpc();
    assertTrue(call.contains("\"id\":9007199254740993"), call);
    assertTrue(call.contains("\"method\":\"session/prompt\""), call);
    assertTrue(call.contains("\"n\":123456789012345678901234567890"), call);
    assertTrue(call.contains("\"x\":1.0"), call);
    assertTrue(call.contains("héllo ✓ 🚀"), call);
  }

  @Test
  void toAcpFromWireJsonAndNotApplicable() {
    ToACPResponse wire =
        conversion()
            .toACP(
                ToACPRequest.newBuilder()
                    .setEnvelopeJson(
                        "{\"method\":\"chat.send\",\"session_id\":\"s-3\",\"jsonrpc_id\":3,\"params\":{\"text\":\"sum ✓\"}}")
                    .addSessionPromptMethods("chat.send")
                    .setDialect(AcpDialect.ACP_DIALECT_WIRE)
                    .build());
    assertEquals(ToACPResponse.ResultCase.JSONRPC, wire.getResultCase());
    ToACPResponse chunk =
        conversion()
            .toACP(
                ToACPRequest.newBuilder()
                    .setResponse(
                        E2AResponse.newBuilder().setResponseKind("e2a.chunk").setBody("{\"delta\":\"x\"}"))
                    .build());
    assertEquals(ToACPResponse.ResultCase.NOT_APPLICABLE, chunk.getResultCase());
    assertFalse(chunk.getNotApplicable().getReason().isEmpty());
  }

  @Test
  void fromAcpReadsRequestsAndResults() {
    FromACPResponse reply =
        conversion()
            .fromACP(
                FromACPRequest.newBuilder()
                    .setJson(
                        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s-1\","
                            + "\"prompt\":[{\"type\":\"text\",\"text\":\"hi ✓\"}],\"n\":12345678901234567890}},"
                            + "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"result\":{}}]")
                    .setChannel("web")
                    .build());
    assertEquals(2, reply.getRecordsCount());
    E2AEnvelope envelope = reply.getRecords(0).getEnvelope();
    assertEquals("session/prompt", envelope.getMethod());
    assertEquals("web", envelope.getChannel());
    assertEquals(1, envelope.getJsonrpcId().getIntegerValue());
    assertTrue(envelope.getParams().contains("\"n\":12345678901234567890"), envelope.getParams());
    E2AResponse response = reply.getRecords(1).getResponse();
    assertEquals("123456789012345678901234567890", response.getJsonrpcId().getBigIntegerValue());
    // The records are E2A records: the codec writes them as wire JSON.
    assertTrue(E2AJson.envelopeToJson(envelope).contains("\"channel\":\"web\""));
    assertTrue(E2AJson.responseToJson(response).contains("\"jsonrpc_id\":123456789012345678901234567890"));

    StatusRuntimeException error =
        assertThrows(
            StatusRuntimeException.class,
            () -> conversion().fromACP(FromACPRequest.newBuilder().setJson("{not json").build()));
    assertEquals(Status.Code.INVALID_ARGUMENT, error.getStatus().getCode());
  }

  @Test
  void toA2AStreamProjectsResponses() {
    ToA2AStreamResponse event =
        conversion()
            .toA2AStream(
                ToA2AStreamRequest.newBuilder()
                    .setResponse(
                        E2AResponse.newBuilder()
                            .setResponseKind("a2a.stream_event")
                            .setStatus("in_progress")
                            .setTaskId("t-1")
                            .setBody(
                                "{\"branch\":\"status_update\",\"payload\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\","
                                    + "\"status\":{\"state\":\"TASK_STATE_WORKING\"},\"n\":12345678901234567890}}"))
                    .build());
    assertEquals(ToA2AStreamResponse.ResultCase.STREAM_RESPONSE, event.getResultCase());
    assertTrue(event.getStreamResponse().contains("12345678901234567890"), event.getStreamResponse());

    ToA2AStreamResponse nativeChunk =
        conversion()
            .toA2AStream(
                ToA2AStreamRequest.newBuilder()
                    .setResponseJson(
                        "{\"response_kind\":\"e2a.chunk\",\"status\":\"in_progress\",\"task_id\":\"t-1\",\"sequence\":2,"
                            + "\"body\":{\"delta\":\"partial ✓\",\"delta_kind\":\"text\"}}")
                    .setProjectNativeKinds(true)
                    .build());
    assertEquals(ToA2AStreamResponse.ResultCase.STREAM_RESPONSE, nativeChunk.getResultCase());

    ToA2AStreamResponse notApplicable =
        conversion()
            .toA2AStream(
                ToA2AStreamRequest.newBuilder()
                    .setResponseJson("{\"response_kind\":\"e2a.chunk\",\"body\":{\"delta\":\"x\"}}")
                    .build());
    assertEquals(ToA2AStreamResponse.ResultCase.NOT_APPLICABLE, notApplicable.getResultCase());
  }

  @Test
  void fromA2AReadsASendMessage() {
    String send =
        "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"method\":\"SendStreamingMessage\",\"params\":{\"message\":"
            + "{\"messageId\":\"m-1\",\"role\":\"ROLE_USER\",\"taskId\":\"t-1\",\"contextId\":\"c-1\","
            + "\"parts\":[{\"text\":\"hello ✓\"}]}}}";
    FromA2AResponse reply =
        conversion()
            .fromA2A(
                FromA2ARequest.newBuilder()
                    .setJson(send)
                    .setChannel("a2a-web")
                    .setIdentityOrigin(IdentityOrigin.IDENTITY_ORIGIN_AGENT)
                    .build());
    E2AEnvelope envelope = reply.getEnvelope();
    assertEquals("a2a-web", envelope.getChannel());
    assertEquals(IdentityOrigin.IDENTITY_ORIGIN_AGENT, envelope.getIdentityOrigin());
    assertEquals("a2a", envelope.getProvenance().getSourceProtocol());
    assertTrue(envelope.getParams().contains("hello ✓"), envelope.getParams());
  }

  @Test
  void chatStreamsTheEchoInOrderWithOneFinalFrame() {
    E2AEnvelope request =
        E2AEnvelope.newBuilder()
            .setMethod("chat.send")
            .setRequestId("req-java-1")
            .setSessionId("s-1")
            .setCorrelationId("corr-1")
            .setChannel("java")
            .setIsStream(true)
            .setParams("{\"text\":\"hello wörld from Java\"}")
            .build();
    Iterator<ChatResponse> stream =
        AgentServiceGrpc.newBlockingStub(server.channel())
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .chat(ChatRequest.newBuilder().setEnvelope(request).build());
    List<E2AResponse> frames = new ArrayList<>();
    stream.forEachRemaining(reply -> frames.add(reply.getResponse()));

    assertTrue(frames.size() >= 2, "frames: " + frames.size());
    Set<String> responseIds = new HashSet<>();
    StringBuilder echoed = new StringBuilder();
    for (int i = 0; i < frames.size(); i++) {
      E2AResponse frame = frames.get(i);
      boolean last = i == frames.size() - 1;
      assertEquals(i, frame.getSequence(), "sequence");
      assertEquals("req-java-1", frame.getRequestId());
      assertEquals("corr-1", frame.getCorrelationId());
      assertTrue(responseIds.add(frame.getResponseId()), "response_id repeated");
      assertEquals(last, frame.getIsFinal(), "exactly one final frame, the last");
      if (last) {
        assertEquals("e2a.complete", frame.getResponseKind());
        assertEquals("succeeded", frame.getStatus());
      } else {
        assertEquals("e2a.chunk", frame.getResponseKind());
        assertEquals("in_progress", frame.getStatus());
        String wire = E2AJson.responseToJson(frame);
        assertTrue(wire.contains("\"response_kind\":\"e2a.chunk\""), wire);
        echoed.append(frame.getBody());
      }
    }
    for (String word : new String[] {"hello", "wörld", "from", "Java"}) {
      assertTrue(echoed.toString().contains(word), echoed.toString());
    }
  }
}
