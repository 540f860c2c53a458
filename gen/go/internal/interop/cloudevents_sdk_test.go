package interop

// The CloudEvents protobuf format against the official Go SDK (github.com/cloudevents/sdk-go/v2 and
// its protobuf format module), in the same test binary as the generated e2a/v1 code: e2a/v1 uses
// the SDK's own io.cloudevents.v1 types, so the two link together without a registration conflict
// (no GOLANG_PROTOBUF_REGISTRATION_CONFLICT needed).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	protobufformat "github.com/cloudevents/sdk-go/binding/format/protobuf/v2"
	"github.com/cloudevents/sdk-go/binding/format/protobuf/v2/pb"
	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

const typePrefix = "org.apache.eventmesh.a2a"

// record is one E2A record of the conformance suite: its kind and its wire JSON.
type record struct {
	response bool
	wire     string
	fields   map[string]any
}

func checkoutRoot(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// conformanceRecords are the records whose expected answer is wire JSON (as the Python tests take them).
func conformanceRecords(t *testing.T, root string) []record {
	t.Helper()
	file, err := os.Open(filepath.Join(root, "conformance", "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var records []record
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for scanner.Scan() {
		var c struct {
			Message string `json:"message"`
			To      string `json:"to"`
			Expect  struct {
				Payload *string `json:"payload"`
			} `json:"expect"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.To != "wire_json" || c.Expect.Payload == nil {
			continue
		}
		decoder := json.NewDecoder(strings.NewReader(*c.Expect.Payload))
		decoder.UseNumber()
		fields := map[string]any{}
		if err := decoder.Decode(&fields); err != nil {
			t.Fatal(err)
		}
		records = append(records, record{response: c.Message == "response", wire: *c.Expect.Payload, fields: fields})
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if len(records) < 400 {
		t.Fatalf("only %d conformance records", len(records))
	}
	return records
}

// e2aGrpc runs `.venv/bin/python -m e2a_grpc args...` with stdin; it returns stdout, stderr and the exit code.
func e2aGrpc(t *testing.T, root string, stdin []byte, args ...string) ([]byte, string, int) {
	t.Helper()
	_, interpreter, err := python()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pythonToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, append([]string{"-m", "e2a_grpc"}, args...)...)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("e2a-grpc %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes(), stderr.String(), cmd.ProcessState.ExitCode()
}

// splitBatch reads the bytes of an io.cloudevents.v1.CloudEventBatch as e2a.v1.CloudEventBatch (the
// same bytes), whose events are the SDK's own pb.CloudEvent.
func splitBatch(t *testing.T, data []byte) []*pb.CloudEvent {
	t.Helper()
	var batch e2av1.CloudEventBatch
	if err := proto.Unmarshal(data, &batch); err != nil {
		t.Fatalf("not a CloudEventBatch: %v", err)
	}
	return batch.GetEvents()
}

func joinBatch(t *testing.T, events []*pb.CloudEvent) []byte {
	t.Helper()
	data, err := proto.Marshal(&e2av1.CloudEventBatch{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func str(fields map[string]any, name string) string {
	value, _ := fields[name].(string)
	return value
}

// eventID is the id the mapping gives a record: request_id (else message_id) of an envelope,
// response_id of a response; "" when the record has none (or only whitespace) and the event got a
// fresh one. The SDK trims ids, so the id it reports is this one trimmed.
func eventID(r record) string {
	id := str(r.fields, "response_id")
	if !r.response {
		if id = str(r.fields, "request_id"); id == "" {
			id = str(r.fields, "message_id")
		}
	}
	return strings.TrimSpace(id)
}

func TestTheGoSDKReadsOurProtobufEvents(t *testing.T) {
	root := checkoutRoot(t)
	records := conformanceRecords(t, root)
	documents := make([]string, len(records))
	for i, r := range records {
		documents[i] = r.wire
	}
	input := []byte("[" + strings.Join(documents, ",") + "]")
	out, stderr, code := e2aGrpc(t, root, input,
		"convert", "to-cloudevents", "--format", "protobuf-batch", "--cloudevents-type-prefix", typePrefix)
	if code != 0 {
		t.Fatalf("to-cloudevents exited %d: %s", code, stderr)
	}
	events := splitBatch(t, out)
	if len(events) != len(records) {
		t.Fatalf("%d events for %d records", len(events), len(records))
	}
	for i, message := range events {
		checkSDKReads(t, i, records[i], message)
	}
}

// checkSDKReads: the SDK's protobuf format reads the event, from its bytes and as the SDK's own
// pb.CloudEvent, and finds the record's attributes and its wire JSON as data.
func checkSDKReads(t *testing.T, i int, r record, message *pb.CloudEvent) {
	t.Helper()
	data, err := proto.Marshal(message)
	if err != nil {
		t.Fatal(err)
	}
	e := event.New()
	if err := protobufformat.Protobuf.Unmarshal(data, &e); err != nil {
		t.Fatalf("record %d: the SDK cannot read our event: %v", i, err)
	}
	direct, err := protobufformat.FromProto(message)
	if err != nil {
		t.Fatalf("record %d: the SDK cannot convert our pb.CloudEvent: %v", i, err)
	}
	if direct.String() != e.String() {
		t.Fatalf("record %d: FromProto and Unmarshal differ:\n%s\n%s", i, direct, e)
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("record %d: the SDK finds our event invalid: %v", i, err)
	}
	if !strings.HasPrefix(e.Type(), typePrefix+".") {
		t.Fatalf("record %d: type %q", i, e.Type())
	}
	wantSuffix, wantMcp := ".req", "request"
	if r.response {
		wantSuffix, wantMcp = ".resp", "response"
		if stream, _ := r.fields["is_stream"].(bool); stream {
			wantSuffix = ".stream"
		}
	}
	if !strings.HasSuffix(e.Type(), wantSuffix) || e.Extensions()["mcptype"] != wantMcp {
		t.Fatalf("record %d: type %q, mcptype %v", i, e.Type(), e.Extensions()["mcptype"])
	}
	if id := eventID(r); id != "" && e.ID() != id {
		t.Fatalf("record %d: id %q, want %q", i, e.ID(), id)
	}
	if r.response {
		if seq, ok := r.fields["sequence"].(json.Number); ok {
			if n, err := seq.Int64(); err == nil && n >= -1<<31 && n < 1<<31 && e.Extensions()["seq"] != int32(n) {
				t.Fatalf("record %d: seq %v, want %d", i, e.Extensions()["seq"], n)
			}
		}
	}
	if e.DataContentType() != "application/json" {
		t.Fatalf("record %d: datacontenttype %q", i, e.DataContentType())
	}
	// The data is the record's wire JSON, byte for byte.
	if string(e.Data()) != r.wire {
		t.Fatalf("record %d: data differs from the wire JSON:\n%s\n%s", i, e.Data(), r.wire)
	}
}

// sdkEvent is the event a Go peer builds with the SDK for a record, following the documented mapping.
func sdkEvent(t *testing.T, r record) *pb.CloudEvent {
	t.Helper()
	e := event.New()
	id := eventID(r)
	if id == "" {
		id = "go-peer"
	}
	e.SetID(id)
	e.SetSource("https://peer.example/go")
	e.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	kind, suffix := "request", "req"
	if r.response {
		kind, suffix = "response", "resp"
		if seq, ok := r.fields["sequence"].(json.Number); ok {
			if n, err := seq.Int64(); err == nil && n >= 0 && n < 1<<31 {
				e.SetExtension("seq", int32(n))
			}
		}
	}
	e.SetType(fmt.Sprintf("%s.peer.%s", typePrefix, suffix))
	e.SetExtension("mcptype", kind)
	if err := e.SetData(event.ApplicationJSON, []byte(r.wire)); err != nil {
		t.Fatal(err)
	}
	data, err := protobufformat.Protobuf.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	message := &pb.CloudEvent{}
	if err := proto.Unmarshal(data, message); err != nil {
		t.Fatal(err)
	}
	return message
}

func TestWeReadTheGoSDKsProtobufEvents(t *testing.T) {
	root := checkoutRoot(t)
	records := conformanceRecords(t, root)
	events := make([]*pb.CloudEvent, len(records))
	documents := make([]string, len(records))
	for i, r := range records {
		events[i] = sdkEvent(t, r)
		documents[i] = r.wire
	}
	out, stderr, code := e2aGrpc(t, root, joinBatch(t, events), "convert", "from-cloudevents", "--format", "protobuf-batch")
	if code != 0 {
		t.Fatalf("from-cloudevents exited %d: %s", code, stderr)
	}
	// Every record read back is its wire JSON, byte for byte.
	if want := "[" + strings.Join(documents, ",") + "]\n"; string(out) != want {
		t.Fatalf("the records read back differ from the originals (%d bytes, want %d)", len(out), len(want))
	}
}

func TestAnSDKEventThatContradictsItsRecordIsRefusedNamingTheAttribute(t *testing.T) {
	root := checkoutRoot(t)
	frame := `{"response_id":"f-1","request_id":"r-1","sequence":4,"response_kind":"e2a.chunk"}`
	e := event.New()
	e.SetID("f-1")
	e.SetSource("/go")
	e.SetType(typePrefix + ".chat.send.resp")
	e.SetExtension("seq", int32(5))
	if err := e.SetData(event.ApplicationJSON, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	data, err := protobufformat.Protobuf.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := e2aGrpc(t, root, data, "convert", "from-cloudevents", "--format", "protobuf")
	if code != 2 || !strings.Contains(stderr, "seq:") {
		t.Fatalf("exit %d, stderr %q: want 2 naming seq", code, stderr)
	}
}

// The io.cloudevents.v1 types of e2a/v1 are the SDK's: one descriptor, registered once, in a
// binary that links both (this one) without GOLANG_PROTOBUF_REGISTRATION_CONFLICT.
func TestConversionServiceUsesTheGoSDKsCloudEventType(t *testing.T) {
	if mode := os.Getenv("GOLANG_PROTOBUF_REGISTRATION_CONFLICT"); mode != "" {
		t.Fatalf("GOLANG_PROTOBUF_REGISTRATION_CONFLICT=%s would hide a registration conflict", mode)
	}
	field := (&e2av1.CloudEventBatch{}).ProtoReflect().Descriptor().Fields().ByName("events")
	sdk := (&pb.CloudEvent{}).ProtoReflect().Descriptor()
	if field.Message() != sdk {
		t.Fatalf("e2a.v1.CloudEventBatch.events is %v, not the SDK's %v", field.Message().FullName(), sdk.FullName())
	}
	registered, err := protoregistry.GlobalTypes.FindMessageByName("io.cloudevents.v1.CloudEvent")
	if err != nil {
		t.Fatal(err)
	}
	if registered.Descriptor() != protoreflect.MessageDescriptor(sdk) {
		t.Fatalf("io.cloudevents.v1.CloudEvent is registered from %s", registered.Descriptor().ParentFile().Path())
	}
}

// ToCloudEvents over gRPC: the batch's events are pb.CloudEvent values the SDK reads as they are;
// FromCloudEvents reads a batch of events the SDK made, giving the same records as from our own.
func TestConversionServiceBatchesRoundTripThroughTheGoSDK(t *testing.T) {
	root := checkoutRoot(t)
	records := conformanceRecords(t, root)
	client := e2av1.NewConversionServiceClient(dial(t, serverAddress(t)))
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()

	sources := make([]*e2av1.CloudEventsRecordSource, len(records))
	for i, r := range records {
		if r.response {
			sources[i] = &e2av1.CloudEventsRecordSource{Record: &e2av1.CloudEventsRecordSource_ResponseJson{ResponseJson: r.wire}}
		} else {
			sources[i] = &e2av1.CloudEventsRecordSource{Record: &e2av1.CloudEventsRecordSource_EnvelopeJson{EnvelopeJson: r.wire}}
		}
	}
	reply, err := client.ToCloudEvents(ctx, &e2av1.ToCloudEventsRequest{Records: sources, TypePrefix: proto.String(typePrefix)})
	if err != nil {
		t.Fatal(err)
	}
	ours := reply.GetBatch().GetEvents()
	if len(ours) != len(records) {
		t.Fatalf("%d events for %d records", len(ours), len(records))
	}
	sdks := make([]*pb.CloudEvent, len(records))
	for i, message := range ours {
		checkSDKReads(t, i, records[i], message)
		sdks[i] = sdkEvent(t, records[i])
	}

	fromOurs, err := client.FromCloudEvents(ctx, &e2av1.FromCloudEventsRequest{
		Events: &e2av1.FromCloudEventsRequest_Batch{Batch: reply.GetBatch()},
	})
	if err != nil {
		t.Fatal(err)
	}
	fromSDKs, err := client.FromCloudEvents(ctx, &e2av1.FromCloudEventsRequest{
		Events: &e2av1.FromCloudEventsRequest_Batch{Batch: &e2av1.CloudEventBatch{Events: sdks}},
	})
	if err != nil {
		t.Fatalf("FromCloudEvents refuses the SDK's events: %v", err)
	}
	if len(fromOurs.GetRecords()) != len(records) || len(fromSDKs.GetRecords()) != len(records) {
		t.Fatalf("%d and %d records for %d events", len(fromOurs.GetRecords()), len(fromSDKs.GetRecords()), len(records))
	}
	for i, record := range fromSDKs.GetRecords() {
		if (record.GetResponse() != nil) != records[i].response {
			t.Fatalf("record %d: read back as the other kind", i)
		}
		if !proto.Equal(record, fromOurs.GetRecords()[i]) {
			t.Fatalf("record %d: from the SDK's event\n%v\nfrom ours\n%v", i, record, fromOurs.GetRecords()[i])
		}
	}
}
