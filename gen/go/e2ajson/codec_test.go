package e2ajson

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

func codecFor(t *testing.T, record string) codec {
	t.Helper()
	switch record {
	case "envelope":
		return envelopeCodec
	case "response":
		return responseCodec
	}
	t.Fatalf("unknown record %q", record)
	return codec{}
}

func TestWireJSON(t *testing.T) {
	for _, c := range okCases {
		got, err := codecFor(t, c.record).wireRoundTrip(t, []byte(c.input))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d := jsonDiff(got, []byte(c.want)); d != "" {
			t.Errorf("%s: %s\ngot  %s\nwant %s", c.name, d, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, c := range errorCases {
		_, err := codecFor(t, c.record).unmarshal([]byte(c.input))
		var fieldErr *FieldError
		if !errors.As(err, &fieldErr) {
			t.Errorf("%s: error %v, want a *FieldError", c.name, err)
			continue
		}
		if fieldErr.Field != c.field {
			t.Errorf("%s: field %q (%v), want %q", c.name, fieldErr.Field, err, c.field)
		}
		if c.field == "$" && !strings.HasPrefix(fieldErr.Message, c.message) || c.field != "$" && fieldErr.Message != c.message {
			t.Errorf("%s: message %q, want %q", c.name, fieldErr.Message, c.message)
		}
		if err.Error() != fieldErr.Field+": "+fieldErr.Message {
			t.Errorf("%s: Error() = %q", c.name, err)
		}
	}
}

func TestSpecExamples(t *testing.T) {
	for name, want := range specWant {
		data, err := os.ReadFile(filepath.Join(testdata, "spec", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		record := "envelope"
		if strings.HasPrefix(name, "12.") {
			record = "response"
		}
		got, err := codecFor(t, record).wireRoundTrip(t, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if d := jsonDiff(got, []byte(want)); d != "" {
			t.Errorf("%s: %s\ngot  %s\nwant %s", name, d, got, want)
		}
	}
}

// The text itself, not only its value: compact, strings escaped as the wire JSON escapes them,
// free-form numbers as written.
func TestExactText(t *testing.T) {
	input := ` {"params" : {"s":"\u00e9\/\"\\\b\f\n\r\t\u0001\u001f\u007f\u2028<>&\ud83d\ude80\ud800x\uDC00",` +
		`"n":[18446744073709551617,-0.0,1.0,1E+2,1e308],"e":{},"a":[ ]}, "request_id":"r"}`
	m, err := UnmarshalEnvelope([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	params := `{"s":"é/\"\\\b\f\n\r\t\u0001\u001f` + "\x7f\u2028" + `<>&🚀\ud800x\udc00","n":[18446744073709551617,-0.0,1.0,1E+2,1e308],"e":{},"a":[]}`
	if m.GetParams() != params {
		t.Errorf("params text\ngot  %s\nwant %s", m.GetParams(), params)
	}
	got, err := MarshalEnvelope(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"protocol_version":"1.0","provenance":{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{}},` +
		`"request_id":"r","jsonrpc_id":null,"correlation_id":null,"task_id":null,"context_id":null,"session_id":null,` +
		`"message_id":null,"timestamp":null,"identity_origin":"user","channel":null,"user_id":null,"agent_ref":null,` +
		`"chat_id":null,"source_agent_id":null,"agent_id":null,"service_id":null,"workspace_key":null,"method":null,` +
		`"params":` + params + `,"ext_method":null,"session_update_kind":null,"is_stream":false,"expected_output_modes":[],` +
		`"auth":null,"channel_context":{},"a2a_metadata":{},"acp_meta":{}}`
	if string(got) != want {
		t.Errorf("wire JSON\ngot  %s\nwant %s", got, want)
	}
}

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// The wire JSON document nests at most MaxDepth levels, its own object included: a record field
// 511, provenance.details and auth._meta 510.
func TestDepth(t *testing.T) {
	for _, depth := range []int{1, 200, MaxDepth - 2} {
		input := `{"params":` + nested(depth+1) + `,"provenance":{"details":` + nested(depth) + `}}`
		got, err := envelopeCodec.wireRoundTrip(t, []byte(input))
		if err != nil {
			t.Errorf("depth %d: %v", depth, err)
		} else if !bytes.Contains(got, []byte(`"params":`+nested(depth+1))) {
			t.Errorf("depth %d: params lost", depth)
		}
	}
	for _, input := range []string{
		`{"params":` + nested(MaxDepth) + `}`,
		`{"provenance":{"details":` + nested(MaxDepth-1) + `}}`,
		`{"auth":{"_meta":` + nested(MaxDepth-1) + `}}`,
		`{"x":` + nested(600) + `}`,
		`{"params":{"a":` + strings.Repeat("[", 100000) + `}}`,
		strings.Repeat("[", 600) + strings.Repeat("]", 600),
	} {
		if _, err := UnmarshalEnvelope([]byte(input)); fieldOf(err) != "$" || !strings.Contains(err.Error(), "deeper than 512") {
			t.Errorf("%.40s...: error %v, want one naming $", input, err)
		}
	}
	for _, c := range []struct {
		m     *e2av1.E2AEnvelope
		field string // "" if it is valid
	}{
		{&e2av1.E2AEnvelope{Params: nested(MaxDepth - 1), AcpMeta: nested(MaxDepth - 1)}, ""},
		{&e2av1.E2AEnvelope{Params: nested(MaxDepth)}, "params"},
		{&e2av1.E2AEnvelope{Params: nested(600)}, "params"},
		{&e2av1.E2AEnvelope{Provenance: &e2av1.E2AProvenance{Details: nested(MaxDepth - 2)}}, ""},
		{&e2av1.E2AEnvelope{Provenance: &e2av1.E2AProvenance{Details: nested(MaxDepth - 1)}}, "provenance.details"},
		{&e2av1.E2AEnvelope{Auth: &e2av1.E2AAuth{Meta: nested(MaxDepth - 1)}}, "auth._meta"},
	} {
		wire, err := MarshalEnvelope(c.m)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("MarshalEnvelope: %v", err)
		case c.field == "":
			if _, err := UnmarshalEnvelope(wire); err != nil {
				t.Errorf("UnmarshalEnvelope of MarshalEnvelope's output: %v", err)
			}
		case fieldOf(err) != c.field:
			t.Errorf("MarshalEnvelope: error %v, want one naming %s", err, c.field)
		}
	}
	if _, err := MarshalResponse(&e2av1.E2AResponse{Body: nested(600)}); fieldOf(err) != "body" {
		t.Errorf("MarshalResponse of a body 600 deep: error %v, want one naming body", err)
	}
}

// Marshal checks the JSON text and strings of the message it is given.
func TestMarshalRejects(t *testing.T) {
	for _, c := range []struct {
		name  string
		m     proto.Message
		field string
	}{
		{"invalid params", &e2av1.E2AEnvelope{Params: `{"a":}`}, "params"},
		{"params not an object", &e2av1.E2AEnvelope{Params: `[1]`}, "params"},
		{"params with data after it", &e2av1.E2AEnvelope{Params: `{} {}`}, "params"},
		{"agent_ref null text", &e2av1.E2AEnvelope{AgentRef: `null`}, "agent_ref"},
		{"details NaN", &e2av1.E2AEnvelope{Provenance: &e2av1.E2AProvenance{Details: `{"a":NaN}`}}, "provenance.details"},
		{"auth _meta", &e2av1.E2AEnvelope{Auth: &e2av1.E2AAuth{Meta: `"x"`}}, "auth._meta"},
		{"string not UTF-8", &e2av1.E2AEnvelope{RequestId: proto.String("\xff")}, "request_id"},
		{"free-form not UTF-8", &e2av1.E2AEnvelope{AcpMeta: "{\"a\":\"\xff\"}"}, "acp_meta"},
		{"unknown origin", &e2av1.E2AEnvelope{IdentityOrigin: 9}, "identity_origin"},
		{"infinite id", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: posInf()}}}, "jsonrpc_id"},
		{"bad big id", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_BigIntegerValue{BigIntegerValue: "12a"}}}, "jsonrpc_id"},
		{"long big id", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_BigIntegerValue{BigIntegerValue: strings.Repeat("9", 4301)}}}, "jsonrpc_id"},
		{"response body", &e2av1.E2AResponse{Body: `{"a":1e400}`}, "body"},
		{"response metadata", &e2av1.E2AResponse{Metadata: `1`}, "metadata"},
	} {
		var err error
		switch m := c.m.(type) {
		case *e2av1.E2AEnvelope:
			_, err = MarshalEnvelope(m)
		case *e2av1.E2AResponse:
			_, err = MarshalResponse(m)
		}
		if fieldOf(err) != c.field {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.field)
		}
	}
}

func posInf() float64 { return math.Inf(1) }

func negativeZero() float64 { return math.Copysign(0, -1) }

// What a message holds beyond what Unmarshal writes reads back as the Python reference reads it.
func TestMarshalMessages(t *testing.T) {
	for _, c := range []struct {
		name string
		m    proto.Message
		want string // a fragment of the wire JSON
	}{
		{"unset provenance", &e2av1.E2AEnvelope{}, `"provenance":{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{}}`},
		{"empty provenance", &e2av1.E2AEnvelope{Provenance: &e2av1.E2AProvenance{}}, `"provenance":{"source_protocol":"","converter":null`},
		{"unset protocol_version", &e2av1.E2AEnvelope{}, `{"protocol_version":null,`},
		{"float id", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: 1}}}, `"jsonrpc_id":1.0,`},
		{"float id exponent", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: 1e22}}}, `"jsonrpc_id":1e+22,`},
		{"float id small", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: 1e-6}}}, `"jsonrpc_id":1e-6,`},
		{"float id positional", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: 1.5e-5}}}, `"jsonrpc_id":0.000015,`},
		{"float id large", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: 9999999999999998}}}, `"jsonrpc_id":9999999999999998.0,`},
		{"float id negative zero", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: negativeZero()}}}, `"jsonrpc_id":-0.0,`},
		{"big id", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_BigIntegerValue{BigIntegerValue: "-00018446744073709551617"}}}, `"jsonrpc_id":-18446744073709551617,`},
		{"empty id", &e2av1.E2AEnvelope{JsonrpcId: &e2av1.JsonRpcId{}}, `"jsonrpc_id":null,`},
		{"empty agent_ref", &e2av1.E2AEnvelope{}, `"agent_ref":null,`},
		{"repeated header", &e2av1.E2AEnvelope{Auth: &e2av1.E2AAuth{ExtraHeaders: []*e2av1.HttpHeader{
			{Name: "b", Value: "1"}, {Name: "a", Value: "2"}, {Name: "b", Value: "3"},
		}}}, `"extra_headers":{"b":"3","a":"2"},`},
		{"response origin", &e2av1.E2AResponse{}, `"identity_origin":"agent",`},
		{"response status", &e2av1.E2AResponse{}, `"status":"","response_kind":"",`},
	} {
		var got []byte
		var err error
		switch m := c.m.(type) {
		case *e2av1.E2AEnvelope:
			got, err = MarshalEnvelope(m)
		case *e2av1.E2AResponse:
			got, err = MarshalResponse(m)
		}
		if err != nil || !bytes.Contains(got, []byte(c.want)) {
			t.Errorf("%s: got %s, %v; want it to contain %s", c.name, got, err, c.want)
		}
	}
}

// Unmarshal writes what Python's to_proto writes: the protobuf bytes decode to the same message.
func TestProtobufRoundTrip(t *testing.T) {
	input := `{"jsonrpc_id":18446744073709551617,"params":{"x":1.0},"agent_ref":{},"auth":{"extra_headers":{"a":"1"}},` +
		`"identity_origin":"service","expected_output_modes":["text"],"is_stream":true}`
	m, err := UnmarshalEnvelope([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	if m.GetJsonrpcId().GetBigIntegerValue() != "18446744073709551617" || m.GetAgentRef() != "{}" ||
		m.GetChannelContext() != "" || m.GetProvenance().GetSourceProtocol() != "e2a" || m.GetProtocolVersion() != "1.0" {
		t.Errorf("unexpected message %v", m)
	}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back := &e2av1.E2AEnvelope{}
	if err := proto.Unmarshal(data, back); err != nil {
		t.Fatal(err)
	}
	first, err := MarshalEnvelope(m)
	if err != nil {
		t.Fatal(err)
	}
	second, err := MarshalEnvelope(back)
	if err != nil || !bytes.Equal(first, second) {
		t.Errorf("protobuf round trip: %s, %v; want %s", second, err, first)
	}
	again, err := UnmarshalEnvelope(first)
	if err != nil || !proto.Equal(again, m) {
		t.Errorf("Unmarshal(Marshal(m)) = %v, %v; want %v", again, err, m)
	}
}

// Long paths and messages are cut as Python cuts them (200 and 400 characters).
func TestLongErrorsAreShortened(t *testing.T) {
	name := strings.Repeat("h", 300)
	_, err := UnmarshalEnvelope([]byte(`{"auth":{"extra_headers":{"` + name + `":1}}}`))
	want := "auth.extra_headers." + name[:181] + "... (119 more characters)"
	if fieldOf(err) != want {
		t.Errorf("field %q, want %q", fieldOf(err), want)
	}
	origin := strings.Repeat("é", 500)
	_, err = UnmarshalEnvelope([]byte(`{"identity_origin":"` + origin + `"}`))
	var fieldErr *FieldError
	if !errors.As(err, &fieldErr) || fieldErr.Message != "'"+origin[:2*399]+"... (145 more characters)" {
		t.Errorf("error %v, want its message cut at 400 characters", err)
	}
}

// A null for a field that is never null (identity_origin, status) reads as the field's default, as
// an absent key does and as protobuf's JSON mapping reads null; the other fields keep their own
// null rules (response_kind: null is "", provenance.source_protocol: null is an error).
func TestNullReadsAsDefault(t *testing.T) {
	envelope, err := UnmarshalEnvelope([]byte(`{"identity_origin":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := envelope.GetIdentityOrigin(); got != e2av1.IdentityOrigin_IDENTITY_ORIGIN_USER {
		t.Errorf("envelope identity_origin null: %v, want USER", got)
	}
	absent, err := UnmarshalEnvelope([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(envelope, absent) {
		t.Errorf("envelope: null identity_origin reads %v, absent %v", envelope, absent)
	}

	response, err := UnmarshalResponse([]byte(`{"identity_origin":null,"status":null,"response_kind":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if response.GetIdentityOrigin() != e2av1.IdentityOrigin_IDENTITY_ORIGIN_AGENT ||
		response.GetStatus() != "in_progress" || response.GetResponseKind() != "" {
		t.Errorf("response nulls: identity_origin %v, status %q, response_kind %q; want AGENT, in_progress, \"\"",
			response.GetIdentityOrigin(), response.GetStatus(), response.GetResponseKind())
	}
	text, err := MarshalResponse(response)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte(`"status":"in_progress"`)) || !bytes.Contains(text, []byte(`"identity_origin":"agent"`)) {
		t.Errorf("response nulls written as %s", text)
	}

	// The null is read like any other value: a later field's error is still the one reported.
	if _, err := UnmarshalResponse([]byte(`{"status":null,"identity_origin":null,"agent_ref":[]}`)); fieldOf(err) != "agent_ref" {
		t.Errorf("status and identity_origin null, agent_ref []: %v, want an error naming agent_ref", err)
	}
	for _, c := range []struct{ record, input, field string }{
		{"envelope", `{"provenance":{"source_protocol":null}}`, "provenance.source_protocol"},
		{"response", `{"provenance":{"source_protocol":null}}`, "provenance.source_protocol"},
		{"response", `{"status":false}`, "status"},
		{"envelope", `{"identity_origin":""}`, "identity_origin"},
	} {
		if _, err := codecFor(t, c.record).unmarshal([]byte(c.input)); err == nil || fieldOf(err) != c.field {
			t.Errorf("%s %s: %v, want an error naming %s", c.record, c.input, err, c.field)
		}
	}
}
