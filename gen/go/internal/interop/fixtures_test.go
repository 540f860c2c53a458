package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	e2av1 "e2agrpc/gen/go/e2a/v1"
	"e2agrpc/gen/go/e2ajson"
)

// A free-form JSON text field and where its value sits in the record's to_dict() JSON.
type jsonTextField struct {
	path          []string
	text          func(proto.Message) string
	nullWhenEmpty bool // agent_ref: empty text means null, for the others it means {}
}

func envelopeField(path []string, get func(*e2av1.E2AEnvelope) string) jsonTextField {
	return jsonTextField{path: path, text: func(m proto.Message) string { return get(m.(*e2av1.E2AEnvelope)) }}
}

func responseField(path []string, get func(*e2av1.E2AResponse) string) jsonTextField {
	return jsonTextField{path: path, text: func(m proto.Message) string { return get(m.(*e2av1.E2AResponse)) }}
}

var jsonTextFields = map[string][]jsonTextField{
	"E2AEnvelope": {
		envelopeField([]string{"params"}, (*e2av1.E2AEnvelope).GetParams),
		envelopeField([]string{"provenance", "details"}, func(m *e2av1.E2AEnvelope) string { return m.GetProvenance().GetDetails() }),
		{path: []string{"agent_ref"}, text: func(m proto.Message) string { return m.(*e2av1.E2AEnvelope).GetAgentRef() }, nullWhenEmpty: true},
		envelopeField([]string{"auth", "_meta"}, func(m *e2av1.E2AEnvelope) string { return m.GetAuth().GetMeta() }),
		envelopeField([]string{"channel_context"}, (*e2av1.E2AEnvelope).GetChannelContext),
		envelopeField([]string{"a2a_metadata"}, (*e2av1.E2AEnvelope).GetA2AMetadata),
		envelopeField([]string{"acp_meta"}, (*e2av1.E2AEnvelope).GetAcpMeta),
	},
	"E2AResponse": {
		responseField([]string{"body"}, (*e2av1.E2AResponse).GetBody),
		responseField([]string{"provenance", "details"}, func(m *e2av1.E2AResponse) string { return m.GetProvenance().GetDetails() }),
		{path: []string{"agent_ref"}, text: func(m proto.Message) string { return m.(*e2av1.E2AResponse).GetAgentRef() }, nullWhenEmpty: true},
		responseField([]string{"projections"}, (*e2av1.E2AResponse).GetProjections),
		responseField([]string{"channel_context"}, (*e2av1.E2AResponse).GetChannelContext),
		responseField([]string{"metadata"}, (*e2av1.E2AResponse).GetMetadata),
		responseField([]string{"a2a_metadata"}, (*e2av1.E2AResponse).GetA2AMetadata),
		responseField([]string{"acp_meta"}, (*e2av1.E2AResponse).GetAcpMeta),
	},
}

func newMessage(typeName string) (proto.Message, error) {
	switch typeName {
	case "E2AEnvelope":
		return &e2av1.E2AEnvelope{}, nil
	case "E2AResponse":
		return &e2av1.E2AResponse{}, nil
	}
	return nil, fmt.Errorf("unknown message type %q", typeName)
}

// Python writes binary E2AEnvelope / E2AResponse messages for the conformance vectors (and a few
// records full of big integers, 1.0, -0.0, key order and Unicode); Go decodes each one, knowing
// every field, reads its JSON text fields to the same values as Python's to_dict(), and re-encodes
// it; Python decodes the Go bytes to the same to_dict() JSON, byte for byte.
func TestPythonBytesRoundTripThroughGo(t *testing.T) {
	dir := t.TempDir()
	runPython(t, "-m", "tests.support.tools.go_fixtures", "write", dir)

	var cases []struct{ Name, Type string }
	readJSON(t, filepath.Join(dir, "cases.json"), &cases)
	counts := map[string]int{}
	identical := 0
	for _, c := range cases {
		pyBytes := readFile(t, filepath.Join(dir, c.Name+".bin"))
		msg, err := newMessage(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(pyBytes, msg); err != nil {
			t.Fatalf("%s: Go cannot decode the Python bytes: %v", c.Name, err)
		}
		if unknown := unknownFields(msg.ProtoReflect(), c.Type); len(unknown) > 0 {
			t.Errorf("%s: fields unknown to the Go code at %v", c.Name, unknown)
		}
		var expected any
		readJSON(t, filepath.Join(dir, c.Name+".json"), &expected)
		for _, field := range jsonTextFields[c.Type] {
			checkJSONText(t, c.Name, msg, field, expected)
		}

		goBytes, err := proto.Marshal(msg)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		again, _ := newMessage(c.Type)
		if err := proto.Unmarshal(goBytes, again); err != nil || !proto.Equal(again, msg) {
			t.Errorf("%s: Go's own encoding does not decode to the same message (%v)", c.Name, err)
		}
		if bytes.Equal(goBytes, pyBytes) {
			identical++
		}
		writeFile(t, filepath.Join(dir, c.Name+".go.bin"), goBytes)
		if strings.HasPrefix(c.Name, c.Type+".from_dict.") {
			counts[c.Type]++
		} else {
			counts["extra"]++
		}
	}
	for _, kind := range []string{"E2AEnvelope", "E2AResponse"} {
		if counts[kind] < 10 {
			t.Errorf("only %d %s.from_dict vectors made fixtures; is testdata/vectors there?", counts[kind], kind)
		}
	}
	if counts["extra"] < 5 {
		t.Errorf("only %d hand-made lossless cases, want 5", counts["extra"])
	}
	t.Logf("%d cases (%v); Go's encoding is byte-identical to Python's for %d", len(cases), counts, identical)

	runPython(t, "-m", "tests.support.tools.go_fixtures", "decode", dir)
	for _, c := range cases {
		want := readFile(t, filepath.Join(dir, c.Name+".json"))
		got := readFile(t, filepath.Join(dir, c.Name+".go.json"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: Python reads the Go bytes as\n%s\nwant\n%s", c.Name, got, want)
		}
	}
}

// The hand-made records reach Go with their values exact (checked here on the Go side alone).
func TestLosslessValuesInGo(t *testing.T) {
	dir := t.TempDir()
	runPython(t, "-m", "tests.support.tools.go_fixtures", "write", dir)
	var env e2av1.E2AEnvelope
	if err := proto.Unmarshal(readFile(t, filepath.Join(dir, "extra_envelope_lossless.bin")), &env); err != nil {
		t.Fatal(err)
	}
	if got := env.GetJsonrpcId().GetBigIntegerValue(); got != "1180591620717411303424" {
		t.Errorf("jsonrpc_id 2**70 reads as big_integer_value %q", got)
	}
	params, err := e2ajson.DecodeObject(env.GetParams())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"big": "123456789012345678901234567890", "u64_plus_one": "18446744073709551616",
		"minus_big": "-1180591620717411303424", "beyond_double": "9007199254740993",
		"one_point_zero": "1.0", "negative_zero": "-0.0",
	}
	for key, digits := range want {
		if got, ok := params[key].(json.Number); !ok || got.String() != digits {
			t.Errorf("params[%q] = %#v, want json.Number(%q)", key, params[key], digits)
		}
	}
	if text := params["text"]; text != "héllo ✓ 🚀 ゼロ \u2028 \u0000 \"quoted\" \\ </script>" {
		t.Errorf("params.text = %q", text)
	}
	// Key order is in the text: z_first before a_second, nested.b before nested.a.
	raw := env.GetParams()
	if !(strings.Index(raw, `"z_first"`) < strings.Index(raw, `"a_second"`) && strings.Index(raw, `"b":[`) < strings.Index(raw, `"a":{`)) {
		t.Errorf("params text lost its key order: %s", raw)
	}
	if got := env.GetAuth().GetExtraHeaders(); len(got) != 2 || got[0].GetName() != "X-B" || got[1].GetName() != "X-A" {
		t.Errorf("auth.extra_headers = %v, want X-B then X-A", got)
	}

	var resp e2av1.E2AResponse
	if err := proto.Unmarshal(readFile(t, filepath.Join(dir, "extra_response_big_id.bin")), &resp); err != nil {
		t.Fatal(err)
	}
	if got := resp.GetJsonrpcId().GetBigIntegerValue(); got != "-1208925819614629174706176" {
		t.Errorf("jsonrpc_id -2**80 reads as big_integer_value %q", got)
	}
	var float e2av1.E2AEnvelope
	if err := proto.Unmarshal(readFile(t, filepath.Join(dir, "extra_envelope_float_id.bin")), &float); err != nil {
		t.Fatal(err)
	}
	if id, ok := float.GetJsonrpcId().GetKind().(*e2av1.JsonRpcId_NumberValue); !ok || id.NumberValue != 1.0 {
		t.Errorf("jsonrpc_id 1.0 reads as %v, want number_value 1", float.GetJsonrpcId())
	}
}

// checkJSONText decodes a JSON text field with e2ajson and compares it with the value at the same
// place in Python's to_dict() JSON.
func checkJSONText(t *testing.T, name string, msg proto.Message, field jsonTextField, expected any) {
	t.Helper()
	want, present := lookup(expected, field.path)
	text := field.text(msg)
	if !present { // e.g. auth._meta when auth is null
		if text != "" {
			t.Errorf("%s: %v is %q but absent from to_dict()", name, field.path, text)
		}
		return
	}
	var got any
	var err error
	if text == "" && field.nullWhenEmpty {
		got = nil
	} else {
		got, err = e2ajson.Decode(text)
	}
	if err != nil {
		t.Errorf("%s: %v: %v", name, field.path, err)
		return
	}
	if !sameJSON(got, want) {
		t.Errorf("%s: %v reads in Go as %#v, Python's to_dict() has %#v", name, field.path, got, want)
	}
}

func lookup(document any, path []string) (any, bool) {
	for _, key := range path {
		object, ok := document.(map[string]any)
		if !ok {
			return nil, false
		}
		if document, ok = object[key]; !ok {
			return nil, false
		}
	}
	return document, true
}

// sameJSON compares decoded JSON values; numbers are equal when they are the same number of the
// same kind (integer or not), whatever their spelling (Python writes 1e+100 where orjson wrote 1e100).
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for key, value := range a {
			other, ok := b[key]
			if !ok || !sameJSON(value, other) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && sameNumber(a, b)
	default:
		return a == b
	}
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	isInt := func(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }
	x, okX := new(big.Rat).SetString(string(a))
	y, okY := new(big.Rat).SetString(string(b))
	return isInt(a) == isInt(b) && okX && okY && x.Cmp(y) == 0
}

// unknownFields lists where a message holds fields the Go code does not know.
func unknownFields(m protoreflect.Message, path string) []string {
	var found []string
	if len(m.GetUnknown()) > 0 {
		found = append(found, path)
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				found = append(found, unknownFields(v.List().Get(i).Message(), fmt.Sprintf("%s.%s[%d]", path, fd.Name(), i))...)
			}
		case fd.Message() != nil && !fd.IsMap():
			found = append(found, unknownFields(v.Message(), path+"."+string(fd.Name()))...)
		}
		return true
	})
	return found
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readJSON decodes a JSON file with numbers as json.Number.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(readFile(t, path)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
