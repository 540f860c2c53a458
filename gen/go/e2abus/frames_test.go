package e2abus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
	"e2agrpc/gen/go/e2ajson"
)

func testBuilder(envelope *e2av1.E2AEnvelope) *FrameBuilder {
	b := NewFrameBuilder(envelope, "r-1", "e2a", "test")
	n := 0
	b.NewID = func() string { n++; return fmt.Sprintf("id-%d", n) }
	b.Now = func() time.Time { return time.Date(2026, 12, 2, 7, 0, 0, 123456000, time.FixedZone("CET", 3600)) }
	return b
}

func TestFramesKeepTheStreamInvariants(t *testing.T) {
	session, method, channel := "s-1", "message/stream", "web"
	envelope := &e2av1.E2AEnvelope{SessionId: &session, Method: &method, Channel: &channel, IsStream: true, AgentRef: `{"a":1}`}
	b := testBuilder(envelope)
	first, err := b.TextChunk("hello ")
	if err != nil {
		t.Fatal(err)
	}
	final, err := b.Complete(map[string]any{"content": "hello "})
	if err != nil {
		t.Fatal(err)
	}
	if first.Sequence != 0 || final.Sequence != 1 || first.GetResponseId() == final.GetResponseId() {
		t.Errorf("sequences %d, %d and ids %q, %q", first.Sequence, final.Sequence, first.GetResponseId(), final.GetResponseId())
	}
	if first.IsFinal || first.Status != StatusInProgress || first.ResponseKind != KindChunk {
		t.Errorf("first frame %v", first)
	}
	if !final.IsFinal || final.Status != StatusSucceeded || final.ResponseKind != KindComplete {
		t.Errorf("final frame %v", final)
	}
	if got := first.GetTimestamp(); got != "2026-12-02T06:00:00.123456Z" {
		t.Errorf("timestamp %q, want RFC 3339 in UTC", got)
	}
	if first.Body != `{"delta_kind":"text","delta":"hello "}` || final.Body != `{"result":{"content":"hello "}}` {
		t.Errorf("bodies %s, %s", first.Body, final.Body)
	}
	for _, frame := range []*e2av1.E2AResponse{first, final} {
		if frame.GetSessionId() != session || frame.GetMethod() != method || frame.GetChannel() != channel || !frame.IsStream ||
			frame.AgentRef != envelope.AgentRef || frame.GetRequestId() != "r-1" || frame.GetProvenance().GetSourceProtocol() != "e2a" {
			t.Errorf("frame %d does not echo the request: %v", frame.Sequence, frame)
		}
	}
	if _, err := b.TextChunk("late"); err == nil {
		t.Error("a frame after the final frame was built")
	}
}

func TestErrorFrameAfterAnotherWorkersFrame(t *testing.T) {
	task, request := "task-9", "r-1"
	last := &e2av1.E2AResponse{RequestId: &request, TaskId: &task, Sequence: 3, ResponseKind: KindChunk, Status: StatusInProgress, Body: `{"delta":"x"}`}
	b := FrameBuilderAfter(last)
	b.NewID = func() string { return "r-1:lost" }
	frame, err := b.Error(CodeAgentUnavailable, "gone", nil)
	if err != nil {
		t.Fatal(err)
	}
	if frame.Sequence != 4 || !frame.IsFinal || frame.Status != StatusFailed || frame.ResponseKind != KindError ||
		frame.GetTaskId() != task || frame.GetRequestId() != request || frame.GetResponseId() != "r-1:lost" {
		t.Errorf("frame %v", frame)
	}
	if frame.Body != `{"code":"agent_unavailable","message":"gone","details":{}}` {
		t.Errorf("body %s", frame.Body)
	}
	if last.Sequence != 3 || last.IsFinal {
		t.Error("the stored frame was changed")
	}
}

func TestFrameMessage(t *testing.T) {
	method, channel := "message/stream", "web chat"
	b := testBuilder(&e2av1.E2AEnvelope{Method: &method, Channel: &channel, IsStream: true})
	frame, err := b.TextChunk("hi")
	if err != nil {
		t.Fatal(err)
	}
	message, err := FrameMessage(context.Background(), frame, DefaultFramePrefix, DefaultTypePrefix)
	if err != nil {
		t.Fatal(err)
	}
	if message.Subject != "e2a.frames._.r-1" {
		t.Errorf("subject %q", message.Subject)
	}
	want := map[string]string{
		"Nats-Msg-Id":        "id-1",
		"ce-id":              "id-1",
		"ce-source":          "/e2a/channels/web%2520chat", // the source percent-encoded again, as a header value
		"ce-type":            "io.e2a.message.stream.stream",
		"ce-mcptype":         "response",
		"ce-a2amethod":       "message/stream",
		"ce-collaborationid": "r-1",
		"ce-seq":             "0",
		"content-type":       "application/json",
	}
	for name, value := range want {
		if got := message.Header[name]; len(got) != 1 || got[0] != value {
			t.Errorf("header %s = %v, want %q", name, got, value)
		}
	}
	back, err := e2ajson.UnmarshalResponse(message.Data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, frame) {
		t.Errorf("payload reads back as %v, want %v", back, frame)
	}
}

func TestResponseTypeAndSource(t *testing.T) {
	empty := ""
	frame := &e2av1.E2AResponse{ResponseKind: KindComplete, Method: &empty}
	if got := responseType("p", frame); got != "p.e2a.complete.resp" {
		t.Errorf("type %q", got)
	}
	// What Python's cloudevents.default_source gives.
	channel := "web chat/é~._-"
	if got := EventSource(&channel); got != "/e2a/channels/web%20chat%2F%C3%A9~._-" {
		t.Errorf("source %q", got)
	}
	if got := EventSource(nil); got != "/e2a" {
		t.Errorf("source %q", got)
	}
	if strings.Contains(EventSource(&channel), " ") {
		t.Error("a source with a space")
	}
}

func TestProtocolVersionIsTheSchemasDefault(t *testing.T) {
	frame, err := testBuilder(&e2av1.E2AEnvelope{}).TextChunk("x")
	if err != nil {
		t.Fatal(err)
	}
	// What e2ajson reads for an envelope without one (the same schema option).
	envelope, err := e2ajson.UnmarshalEnvelope([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if frame.GetProtocolVersion() == "" || frame.GetProtocolVersion() != envelope.GetProtocolVersion() {
		t.Errorf("protocol version %q, want %q", frame.GetProtocolVersion(), envelope.GetProtocolVersion())
	}
}
