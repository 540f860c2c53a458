package cloudeventsinterop

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
	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/protobuf/encoding/protowire"
)

const (
	typePrefix    = "org.apache.eventmesh.a2a"
	pythonTimeout = 5 * time.Minute
)

// record is one E2A record of the conformance suite: its kind and its wire JSON.
type record struct {
	response bool
	wire     string
	fields   map[string]any
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "conformance", "cases.jsonl")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no parent directory of the test holds conformance/cases.jsonl")
		}
		dir = parent
	}
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
	interpreter := filepath.Join(root, ".venv", "bin", "python")
	ctx, cancel := context.WithTimeout(context.Background(), pythonTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, append([]string{"-m", "e2a_grpc"}, args...)...)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("e2a-grpc %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes(), stderr.String(), cmd.ProcessState.ExitCode()
}

// splitBatch reads an io.cloudevents.v1.CloudEventBatch (field 1: repeated CloudEvent): the SDK
// has no batch type, so its frames are read with protowire.
func splitBatch(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var events [][]byte
	for len(data) > 0 {
		number, kind, n := protowire.ConsumeTag(data)
		if n < 0 || number != 1 || kind != protowire.BytesType {
			t.Fatalf("not a CloudEventBatch: tag %d/%d (%d)", number, kind, n)
		}
		data = data[n:]
		value, m := protowire.ConsumeBytes(data)
		if m < 0 {
			t.Fatal("not a CloudEventBatch: truncated event")
		}
		events = append(events, value)
		data = data[m:]
	}
	return events
}

func joinBatch(events [][]byte) []byte {
	var batch []byte
	for _, e := range events {
		batch = protowire.AppendTag(batch, 1, protowire.BytesType)
		batch = protowire.AppendBytes(batch, e)
	}
	return batch
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
	root := repoRoot(t)
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
	for i, data := range events {
		r := records[i]
		e := event.New()
		if err := protobufformat.Protobuf.Unmarshal(data, &e); err != nil {
			t.Fatalf("record %d: the SDK cannot read our event: %v", i, err)
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
}

// sdkEvent is the event a Go peer builds with the SDK for a record, following the documented mapping.
func sdkEvent(t *testing.T, r record) []byte {
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
	return data
}

func TestWeReadTheGoSDKsProtobufEvents(t *testing.T) {
	root := repoRoot(t)
	records := conformanceRecords(t, root)
	events := make([][]byte, len(records))
	documents := make([]string, len(records))
	for i, r := range records {
		events[i] = sdkEvent(t, r)
		documents[i] = r.wire
	}
	out, stderr, code := e2aGrpc(t, root, joinBatch(events), "convert", "from-cloudevents", "--format", "protobuf-batch")
	if code != 0 {
		t.Fatalf("from-cloudevents exited %d: %s", code, stderr)
	}
	// Every record read back is its wire JSON, byte for byte.
	if want := "[" + strings.Join(documents, ",") + "]\n"; string(out) != want {
		t.Fatalf("the records read back differ from the originals (%d bytes, want %d)", len(out), len(want))
	}
}

func TestAnSDKEventThatContradictsItsRecordIsRefusedNamingTheAttribute(t *testing.T) {
	root := repoRoot(t)
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
