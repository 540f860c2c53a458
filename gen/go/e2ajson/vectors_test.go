package e2ajson

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// testdata is the repository's testdata directory, from this package's directory.
const testdata = "../../../testdata"

// pythonRejects lists the vector inputs the Python reference rejects (ill-typed inputs, which the
// vectors' README allows an implementation to reject), with the field it names: vector number ->
// field. Found once with E2AEnvelope/E2AResponse.from_json(json.dumps(input["data"])).to_proto().
var pythonRejects = map[string]map[int]string{
	"E2AEnvelope.from_dict": {
		12: "provenance.source_protocol", 15: "is_stream", 18: "expected_output_modes",
		24: "protocol_version", 33: "provenance", 36: "protocol_version", 39: "params", 42: "is_stream",
		48: "expected_output_modes", 54: "agent_ref", 60: "agent_ref", 63: "provenance", 66: "agent_ref",
		69: "provenance.source_protocol", 72: "identity_origin", 75: "is_stream", 81: "identity_origin",
		84: "agent_ref", 87: "timestamp", 99: "is_stream", 102: "identity_origin", 111: "params",
		114: "timestamp", 129: "provenance.source_protocol", 150: "params", 168: "protocol_version",
		171: "identity_origin", 186: "is_stream", 192: "binding", 195: "is_stream",
		198: "protocol_version", 204: "agent_ref", 210: "agent_ref", 222: "timestamp",
		225: "identity_origin", 231: "timestamp", 234: "provenance.source_protocol",
		243: "identity_origin", 246: "timestamp", 255: "is_stream", 261: "identity_origin",
		264: "identity_origin", 267: "source_agent_id", 270: "identity_origin", 291: "identity_origin",
		294: "identity_origin",
	},
	"E2AEnvelope.roundtrip": {
		0: "provenance", 6: "agent_ref", 9: "expected_output_modes", 18: "agent_ref", 24: "agent_ref",
		30: "agent_ref", 33: "is_stream", 36: "timestamp", 45: "provenance",
		57: "identity_origin", 63: "source_agent_id", 66: "provenance", 81: "identity_origin",
		84: "provenance", 90: "protocol_version", 93: "timestamp", 96: "agent_ref", 105: "timestamp",
		111: "source_agent_id", 114: "protocol_version", 117: "params", 120: "agent_ref", 123: "binding",
		135: "timestamp", 138: "agent_ref", 141: "agent_ref", 144: "provenance.source_protocol",
		150: "identity_origin", 174: "expected_output_modes", 177: "identity_origin", 180: "is_stream",
		183: "identity_origin", 192: "is_stream", 201: "identity_origin", 210: "identity_origin",
		213: "is_stream", 216: "provenance", 222: "source_agent_id", 231: "is_stream",
		234: "provenance.source_protocol", 240: "is_stream", 249: "is_stream", 255: "params",
		267: "timestamp", 273: "identity_origin", 282: "source_agent_id", 288: "is_stream",
		291: "is_stream",
	},
	"E2AResponse.from_dict": {
		0: "sequence", 18: "provenance", 27: "provenance", 30: "is_final", 33: "provenance",
		42: "sequence", 48: "provenance", 51: "provenance", 54: "provenance", 63: "sequence",
		69: "is_final", 81: "sequence", 87: "sequence", 105: "sequence",
		108: "identity_origin", 111: "timestamp", 114: "is_final", 117: "is_final", 126: "is_final",
		132: "provenance", 147: "sequence", 153: "sequence", 177: "provenance",
		201: "sequence", 210: "sequence", 216: "provenance", 219: "body", 228: "sequence",
		231: "provenance", 243: "sequence", 258: "provenance", 261: "is_final",
		279: "provenance", 288: "sequence", 291: "sequence", 294: "sequence", 297: "body",
	},
}

// nullDefaults is where the codec departs from the vectors' reference on purpose: a null for a
// field that is never null (identity_origin, status) reads as the field's default, as protobuf's JSON
// mapping reads null (issue 10), where the reference copies the null (or its text) through. The
// defaults, by vector file.
var nullDefaults = map[string]map[string]string{
	"E2AEnvelope.from_dict": {"identity_origin": "user"},
	"E2AEnvelope.roundtrip": {"identity_origin": "user"},
	"E2AResponse.from_dict": {"identity_origin": "agent", "status": "in_progress"},
}

// nullsAsDefaults is the keys of nullDefaults[file] that a vector's input sets to null, with their
// defaults.
func nullsAsDefaults(file string, data json.RawMessage) map[string]string {
	var input map[string]json.RawMessage
	if json.Unmarshal(data, &input) != nil {
		return nil
	}
	nulls := map[string]string{}
	for key, def := range nullDefaults[file] {
		if value, ok := input[key]; ok && string(value) == "null" {
			nulls[key] = def
		}
	}
	return nulls
}

// vectorDiff is jsonDiff(got, want) with the top-level keys of nulls in want set to their strings.
func vectorDiff(got, want []byte, nulls map[string]string) string {
	if len(nulls) == 0 {
		return jsonDiff(got, want)
	}
	a, err := parseOrdered(got)
	if err != nil {
		return fmt.Sprintf("got invalid JSON %s: %v", got, err)
	}
	b, err := parseOrdered(want)
	if err != nil {
		return fmt.Sprintf("want invalid JSON %s: %v", want, err)
	}
	for i, key := range b.keys {
		if value, ok := nulls[key]; ok {
			b.items[i] = jsonNode{kind: "string", text: value}
		}
	}
	return a.diff(b, "$")
}

type vectorCase struct {
	I     int `json:"i"`
	Input struct {
		Data json.RawMessage `json:"data"`
	} `json:"input"`
	Output struct {
		OK json.RawMessage `json:"ok"`
	} `json:"output"`
}

func readVectors(t *testing.T, name string) []vectorCase {
	t.Helper()
	file, err := os.Open(filepath.Join(testdata, "vectors", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var cases []vectorCase
	scanner := bufio.NewScanner(file)
	scanner.Buffer(nil, 1<<24)
	for scanner.Scan() {
		var c vectorCase
		if err := json.Unmarshal(scanner.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// codec is one record type's four functions, for tests that run on both.
type codec struct {
	unmarshal  func([]byte) (proto.Message, error)
	marshal    func(proto.Message) ([]byte, error)
	newMessage func() proto.Message
}

var envelopeCodec = codec{
	unmarshal:  func(data []byte) (proto.Message, error) { return UnmarshalEnvelope(data) },
	marshal:    func(m proto.Message) ([]byte, error) { return MarshalEnvelope(m.(*e2av1.E2AEnvelope)) },
	newMessage: func() proto.Message { return &e2av1.E2AEnvelope{} },
}

var responseCodec = codec{
	unmarshal:  func(data []byte) (proto.Message, error) { return UnmarshalResponse(data) },
	marshal:    func(m proto.Message) ([]byte, error) { return MarshalResponse(m.(*e2av1.E2AResponse)) },
	newMessage: func() proto.Message { return &e2av1.E2AResponse{} },
}

// wireRoundTrip is Unmarshal then Marshal, checking on the way that the message survives binary
// protobuf.
func (c codec) wireRoundTrip(t *testing.T, data []byte) ([]byte, error) {
	t.Helper()
	m, err := c.unmarshal(data)
	if err != nil {
		return nil, err
	}
	encoded, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("proto.Marshal: %v", err)
	}
	decoded := c.newMessage()
	if err := proto.Unmarshal(encoded, decoded); err != nil {
		t.Fatalf("proto.Unmarshal: %v", err)
	}
	if !proto.Equal(m, decoded) {
		t.Fatalf("protobuf round trip changed the message")
	}
	return c.marshal(decoded)
}

func fieldOf(err error) string {
	var fieldErr *FieldError
	if errors.As(err, &fieldErr) {
		return fieldErr.Field
	}
	return "(not a *FieldError: " + err.Error() + ")"
}

func TestVectors(t *testing.T) {
	for _, file := range []struct {
		name  string
		codec codec
	}{
		{"E2AEnvelope.from_dict", envelopeCodec},
		{"E2AEnvelope.roundtrip", envelopeCodec},
		{"E2AResponse.from_dict", responseCodec},
	} {
		t.Run(file.name, func(t *testing.T) {
			cases := readVectors(t, file.name)
			if len(cases) == 0 {
				t.Fatal("no vectors")
			}
			compared := 0
			for _, c := range cases {
				got, err := file.codec.wireRoundTrip(t, c.Input.Data)
				if field, rejected := pythonRejects[file.name][c.I]; rejected {
					if err == nil || fieldOf(err) != field {
						t.Errorf("vector %d: got %s, %v; want an error naming %s", c.I, got, err, field)
					}
					continue
				}
				if err != nil {
					t.Errorf("vector %d: %v", c.I, err)
					continue
				}
				want := c.Output.OK
				nulls := nullsAsDefaults(file.name, c.Input.Data)
				if file.name == "E2AEnvelope.roundtrip" {
					var outputs struct{ Once, Twice json.RawMessage }
					if err := json.Unmarshal(want, &outputs); err != nil {
						t.Fatal(err)
					}
					want = outputs.Once
					twice, err := file.codec.wireRoundTrip(t, got)
					if err != nil {
						t.Errorf("vector %d, second pass: %v", c.I, err)
					} else if d := vectorDiff(twice, outputs.Twice, nulls); d != "" {
						t.Errorf("vector %d, second pass: %s\ngot  %s", c.I, d, twice)
					}
				}
				if d := vectorDiff(got, want, nulls); d != "" {
					t.Errorf("vector %d: %s\ngot  %s\nwant %s", c.I, d, got, want)
				}
				compared++
			}
			if compared+len(pythonRejects[file.name]) != len(cases) || compared < 50 {
				t.Errorf("compared %d of %d vectors", compared, len(cases))
			}
		})
	}
}
