package io.e2a.v1;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.InvalidProtocolBufferException;
import io.cloudevents.CloudEvent;
import io.cloudevents.core.builder.CloudEventBuilder;
import io.cloudevents.protobuf.ProtobufFormat;
import io.cloudevents.v1.proto.Spec;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ConversionService's CloudEvents batches with the official CloudEvents Java SDK's protobuf
 * format (io.cloudevents:cloudevents-protobuf) on the same classpath: e2a.v1.CloudEventBatch holds
 * that artifact's io.cloudevents.v1.proto.CloudEvent, and no second copy of it is generated.
 */
class CloudEventsSdkTest {
  private static final String PREFIX = "org.apache.eventmesh.a2a";
  private static final String ENVELOPE =
      "{\"method\":\"tools/call\",\"request_id\":\"r-1\",\"agent_id\":\"planner\",\"channel\":\"web\","
          + "\"params\":{\"_topic\":\"orders\",\"n\":123456789012345678901234567890}}";
  private static final String FRAME =
      "{\"response_id\":\"f-1\",\"request_id\":\"r-1\",\"sequence\":3,\"response_kind\":\"e2a.chunk\","
          + "\"body\":{\"text\":\"h\u00e9 \u2713\"}}";

  private static PythonServer server;
  private static final ProtobufFormat FORMAT = new ProtobufFormat();

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

  private static CloudEventBatch toCloudEvents() {
    ToCloudEventsResponse reply =
        conversion()
            .toCloudEvents(
                ToCloudEventsRequest.newBuilder()
                    .addRecords(CloudEventsRecordSource.newBuilder().setEnvelopeJson(ENVELOPE))
                    .addRecords(CloudEventsRecordSource.newBuilder().setResponseJson(FRAME))
                    .setTypePrefix(PREFIX)
                    .build());
    assertEquals(ToCloudEventsResponse.EventsCase.BATCH, reply.getEventsCase());
    return reply.getBatch();
  }

  private static String data(CloudEvent event) {
    assertNotNull(event.getData());
    return new String(event.getData().toBytes(), StandardCharsets.UTF_8);
  }

  @Test
  void theBatchHoldsTheSdksCloudEventClass() {
    assertSame(
        io.cloudevents.v1.proto.CloudEvent.getDescriptor(),
        CloudEventBatch.getDescriptor().findFieldByName("events").getMessageType());
    assertSame(Spec.getDescriptor(), io.cloudevents.v1.proto.CloudEvent.getDescriptor().getFile());
    assertEquals(
        "io.cloudevents.v1.CloudEvent", io.cloudevents.v1.proto.CloudEvent.getDescriptor().getFullName());
  }

  @Test
  void theSdkReadsOurEvents() {
    List<io.cloudevents.v1.proto.CloudEvent> events = toCloudEvents().getEventsList();
    assertEquals(2, events.size());

    CloudEvent request = FORMAT.deserialize(events.get(0).toByteArray());
    assertEquals("r-1", request.getId());
    assertEquals(URI.create("/e2a/channels/web"), request.getSource());
    assertEquals(PREFIX + ".tools.call.req", request.getType());
    assertEquals("orders", request.getSubject());
    assertEquals("application/json", request.getDataContentType());
    assertEquals("tools/call", request.getExtension("a2amethod"));
    assertEquals("request", request.getExtension("mcptype"));
    assertEquals("planner", request.getExtension("targetagent"));
    assertTrue(data(request).contains("\"n\":123456789012345678901234567890"), data(request));

    CloudEvent frame = FORMAT.deserialize(events.get(1).toByteArray());
    assertEquals("f-1", frame.getId());
    assertEquals(PREFIX + ".e2a.chunk.resp", frame.getType());
    assertEquals("response", frame.getExtension("mcptype"));
    assertEquals("r-1", frame.getExtension("collaborationid"));
    assertEquals(3, frame.getExtension("seq"));
    assertTrue(data(frame).contains("\"text\":\"h\u00e9 \u2713\""), data(frame));
  }

  @Test
  void weReadTheSdksEvents() throws InvalidProtocolBufferException {
    CloudEventBatch ours = toCloudEvents();
    CloudEventBatch.Builder sdks = CloudEventBatch.newBuilder();
    List<String> ids = new ArrayList<>();
    for (io.cloudevents.v1.proto.CloudEvent event : ours.getEventsList()) {
      CloudEvent read = FORMAT.deserialize(event.toByteArray());
      // A peer's own event: its own id, source and time, the record's wire JSON as data.
      CloudEvent peer =
          CloudEventBuilder.v1(read)
              .withId("java-" + read.getId())
              .withSource(URI.create("https://peer.example/java"))
              .withTime(java.time.OffsetDateTime.parse("2026-01-02T03:04:05Z"))
              .build();
      ids.add(peer.getId());
      sdks.addEvents(io.cloudevents.v1.proto.CloudEvent.parseFrom(FORMAT.serialize(peer)));
    }
    assertEquals(List.of("java-r-1", "java-f-1"), ids);

    FromCloudEventsResponse fromOurs =
        conversion().fromCloudEvents(FromCloudEventsRequest.newBuilder().setBatch(ours).build());
    FromCloudEventsResponse fromSdks =
        conversion().fromCloudEvents(FromCloudEventsRequest.newBuilder().setBatch(sdks).build());
    assertEquals(fromOurs, fromSdks);
    assertEquals(2, fromSdks.getRecordsCount());
    E2AEnvelope envelope = fromSdks.getRecords(0).getEnvelope();
    assertEquals("tools/call", envelope.getMethod());
    assertEquals("r-1", envelope.getRequestId());
    assertTrue(envelope.getParams().contains("123456789012345678901234567890"), envelope.getParams());
    E2AResponse response = fromSdks.getRecords(1).getResponse();
    assertEquals("f-1", response.getResponseId());
    assertEquals(3, response.getSequence());
  }
}
