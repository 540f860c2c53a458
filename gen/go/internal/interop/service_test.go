package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
	"e2agrpc/gen/go/e2ajson"
)

// One call made by both the generated Go client and the Python client. The JSON text carries what
// a lossy path would break: integers beyond 2^53 and 2^64, 1.0 vs 1, -0.0, key order, non-ASCII.
type rpcCase struct {
	name    string
	rpc     string // ToACP, FromACP, ToA2AStream or Chat
	request proto.Message
	code    codes.Code // the call's status code (codes.OK: it succeeds)
	check   func(t *testing.T, got outcome)
}

var rpcCases = []rpcCase{
	{
		name: "to_acp_envelope", rpc: "ToACP",
		request: &e2av1.ToACPRequest{Source: &e2av1.ToACPRequest_Envelope{Envelope: &e2av1.E2AEnvelope{
			Method:         proto.String("session/prompt"),
			SessionId:      proto.String("sess-1"),
			Channel:        proto.String("cli"),
			IdentityOrigin: e2av1.IdentityOrigin_IDENTITY_ORIGIN_SERVICE,
			JsonrpcId:      &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_IntegerValue{IntegerValue: 1<<53 + 1}},
			Params:         `{"text":"héllo ✓ 🚀","n":123456789012345678901234567890,"x":1.0,"neg":-0.0,"nested":{"b":1,"a":[]}}`,
			AcpMeta:        `{"trace":"t-1"}`,
		}}},
		check: func(t *testing.T, got outcome) {
			call, err := e2ajson.DecodeObject(got.reply.(*e2av1.ToACPResponse).GetJsonrpc())
			if err != nil {
				t.Fatal(err)
			}
			params := call["params"].(map[string]any)
			if call["id"] != json.Number("9007199254740993") || params["n"] != json.Number("123456789012345678901234567890") ||
				params["x"] != json.Number("1.0") || params["text"] != "héllo ✓ 🚀" {
				t.Errorf("ACP call lost a value: %v", call)
			}
		},
	},
	{
		name: "to_acp_envelope_json", rpc: "ToACP",
		request: &e2av1.ToACPRequest{Source: &e2av1.ToACPRequest_EnvelopeJson{
			EnvelopeJson: `{"method":"session/cancel","session_id":"s-2","jsonrpc_id":"req-7","params":{"reason":"user","big":-98765432109876543210,"f":2.50}}`,
		}},
		check: wantOneof("jsonrpc"),
	},
	{
		name: "to_acp_response", rpc: "ToACP",
		request: &e2av1.ToACPRequest{Source: &e2av1.ToACPRequest_Response{Response: &e2av1.E2AResponse{
			ResponseKind: "acp.prompt_result", Status: "succeeded", IsFinal: true, SessionId: proto.String("s-1"),
			JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: 1.5}},
			Body:      `{"stopReason":"end_turn","usage":{"tokens":18446744073709551616}}`,
		}}},
		check: wantOneof("jsonrpc"),
	},
	{
		name: "to_acp_wire_chat_send", rpc: "ToACP",
		request: &e2av1.ToACPRequest{
			Dialect:              e2av1.AcpDialect_ACP_DIALECT_WIRE,
			SessionPromptMethods: []string{"chat.send"},
			Source: &e2av1.ToACPRequest_EnvelopeJson{
				EnvelopeJson: `{"method":"chat.send","session_id":"s-3","jsonrpc_id":3,"params":{"text":"sum ✓","content_blocks":[{"type":"resource_link","uri":"file:///a.txt","mime_type":"text/plain"}]}}`,
			},
		},
		check: wantOneof("jsonrpc"),
	},
	{
		name: "to_acp_not_applicable", rpc: "ToACP",
		request: &e2av1.ToACPRequest{Source: &e2av1.ToACPRequest_Response{Response: &e2av1.E2AResponse{
			ResponseKind: "e2a.chunk", Body: `{"delta":"x"}`,
		}}},
		check: wantOneof("not_applicable"),
	},
	{
		name: "from_acp_request", rpc: "FromACP",
		request: &e2av1.FromACPRequest{
			Json:    `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[{"type":"text","text":"hi ✓"}],"n":12345678901234567890}}`,
			Channel: proto.String("web"),
		},
		check: wantRecords("envelope"),
	},
	{
		name: "from_acp_error", rpc: "FromACP",
		request: &e2av1.FromACPRequest{
			Json:           `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad params","data":{"field":"prompt"}}}`,
			IdentityOrigin: e2av1.IdentityOrigin_IDENTITY_ORIGIN_SYSTEM,
		},
		check: wantRecords("response"),
	},
	{
		name: "from_acp_batch", rpc: "FromACP",
		request: &e2av1.FromACPRequest{Json: `[{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":` +
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"par"}}}},` +
			`{"jsonrpc":"2.0","id":2.0,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}},` +
			`{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}]`},
		check: wantRecords("response", "envelope", "response"),
	},
	{
		name: "to_a2a_stream_event", rpc: "ToA2AStream",
		request: &e2av1.ToA2AStreamRequest{Source: &e2av1.ToA2AStreamRequest_Response{Response: &e2av1.E2AResponse{
			ResponseKind: "a2a.stream_event", Status: "in_progress", TaskId: proto.String("t-1"),
			Body: `{"branch":"status_update","payload":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"n":12345678901234567890}}`,
		}}},
		check: wantOneof("stream_response"),
	},
	{
		name: "to_a2a_native_chunk", rpc: "ToA2AStream",
		request: &e2av1.ToA2AStreamRequest{
			ProjectNativeKinds: true,
			Source: &e2av1.ToA2AStreamRequest_ResponseJson{
				ResponseJson: `{"response_kind":"e2a.chunk","status":"in_progress","task_id":"t-1","sequence":2,"body":{"delta":"partial ✓","delta_kind":"text"}}`,
			},
		},
		check: wantOneof("stream_response"),
	},
	{
		name: "to_a2a_native_error", rpc: "ToA2AStream",
		request: &e2av1.ToA2AStreamRequest{ProjectNativeKinds: true, Source: &e2av1.ToA2AStreamRequest_Response{Response: &e2av1.E2AResponse{
			ResponseKind: "e2a.error", Status: "failed", IsFinal: true,
			ResponseId: proto.String("r-9"), RequestId: proto.String("req-9"), Timestamp: proto.String("2026-01-02T03:04:05Z"),
			Body: `{"code":"backend_down","message":"agent unavailable","details":{"retry_after":30}}`,
		}}},
		check: wantOneof("stream_response"),
	},
	{
		name: "to_a2a_not_applicable", rpc: "ToA2AStream",
		request: &e2av1.ToA2AStreamRequest{Source: &e2av1.ToA2AStreamRequest_ResponseJson{
			ResponseJson: `{"response_kind":"e2a.chunk","body":{"delta":"x"}}`,
		}},
		check: wantOneof("not_applicable"),
	},
	{
		name: "from_acp_invalid_json", rpc: "FromACP",
		request: &e2av1.FromACPRequest{Json: "{not json"},
		code:    codes.InvalidArgument,
	},
	{
		name: "chat_echo", rpc: "Chat",
		request: &e2av1.ChatRequest{Envelope: &e2av1.E2AEnvelope{
			Method:        proto.String("chat.send"),
			RequestId:     proto.String("req-go-1"),
			SessionId:     proto.String("s-1"),
			CorrelationId: proto.String("corr-1"),
			Channel:       proto.String("go"),
			UserId:        proto.String("u-ü"),
			JsonrpcId:     &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_BigIntegerValue{BigIntegerValue: "123456789012345678901234567890"}},
			AgentRef:      `{"name":"echo","n":18446744073709551616}`,
			IsStream:      true,
			Params:        `{"text":"hello wörld ✓ 🚀 from Go","n":1.0}`,
		}},
		check: wantEcho("hello wörld ✓ 🚀 from Go"),
	},
	{
		name: "chat_prompt_blocks_server_request_id", rpc: "Chat",
		request: &e2av1.ChatRequest{Envelope: &e2av1.E2AEnvelope{
			Method:    proto.String("session/prompt"),
			SessionId: proto.String("s-2"),
			JsonrpcId: &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: 2.0}},
			Params:    `{"prompt":[{"type":"text","text":"one "},{"type":"image","data":"AA=="},{"type":"text","text":"two"}]}`,
		}},
		check: wantEcho("one two"),
	},
	{
		name: "chat_wrong_method", rpc: "Chat",
		request: &e2av1.ChatRequest{Envelope: &e2av1.E2AEnvelope{
			Method: proto.String("session/cancel"), Params: `{"text":"x"}`,
		}},
		code: codes.InvalidArgument,
	},
}

// outcome is what a call gave: a reply, the frames of a Chat stream, or an error status.
type outcome struct {
	reply  proto.Message
	frames []*e2av1.E2AResponse
	err    *callError
}

type callError struct {
	code    codes.Code
	message string
	details [][2]string // type URL, base64 value
}

func (o outcome) String() string {
	switch {
	case o.err != nil:
		return fmt.Sprintf("error %v %q %v", o.err.code, o.err.message, o.err.details)
	case o.reply != nil:
		return prototext.Format(o.reply)
	}
	var b bytes.Buffer
	for _, frame := range o.frames {
		b.WriteString(prototext.Format(frame) + "\n")
	}
	return b.String()
}

func goCall(ctx context.Context, conn *grpc.ClientConn, c rpcCase) outcome {
	conversion := e2av1.NewConversionServiceClient(conn)
	var reply proto.Message
	var err error
	switch c.rpc {
	case "ToACP":
		reply, err = conversion.ToACP(ctx, c.request.(*e2av1.ToACPRequest))
	case "FromACP":
		reply, err = conversion.FromACP(ctx, c.request.(*e2av1.FromACPRequest))
	case "ToA2AStream":
		reply, err = conversion.ToA2AStream(ctx, c.request.(*e2av1.ToA2AStreamRequest))
	case "Chat":
		var frames []*e2av1.E2AResponse
		frames, err = chatFrames(ctx, e2av1.NewAgentServiceClient(conn), c.request.(*e2av1.ChatRequest))
		if err == nil {
			return outcome{frames: frames}
		}
	default:
		panic("unknown rpc " + c.rpc)
	}
	if err != nil {
		st := status.Convert(err)
		e := &callError{code: st.Code(), message: st.Message()}
		for _, detail := range st.Proto().GetDetails() {
			e.details = append(e.details, [2]string{detail.GetTypeUrl(), base64.StdEncoding.EncodeToString(detail.GetValue())})
		}
		return outcome{err: e}
	}
	return outcome{reply: reply}
}

func chatFrames(ctx context.Context, client e2av1.AgentServiceClient, request *e2av1.ChatRequest) ([]*e2av1.E2AResponse, error) {
	stream, err := client.Chat(ctx, request)
	if err != nil {
		return nil, err
	}
	var frames []*e2av1.E2AResponse
	for {
		reply, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return frames, nil
		}
		if err != nil {
			return nil, err
		}
		frames = append(frames, reply.GetResponse())
	}
}

// pythonLine is one line printed by tests/support/tools/go_client.py.
type pythonLine struct {
	Name   string   `json:"name"`
	Reply  string   `json:"reply"`
	Frames []string `json:"frames"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Details []struct {
			TypeURL string `json:"type_url"`
			Value   string `json:"value"`
		} `json:"details"`
	} `json:"error"`
	InvariantError *string `json:"invariant_error"`
}

func pythonOutcome(t *testing.T, c rpcCase, line pythonLine) outcome {
	t.Helper()
	decode := func(text string, m proto.Message) {
		data, err := base64.StdEncoding.DecodeString(text)
		if err == nil {
			err = proto.Unmarshal(data, m)
		}
		if err != nil {
			t.Fatalf("%s: Python's reply: %v", c.name, err)
		}
	}
	switch {
	case line.InvariantError != nil:
		t.Fatalf("%s: the Python client saw a broken stream invariant: %s", c.name, *line.InvariantError)
	case line.Error != nil:
		e := &callError{code: codes.Code(line.Error.Code), message: line.Error.Message}
		for _, d := range line.Error.Details {
			e.details = append(e.details, [2]string{d.TypeURL, d.Value})
		}
		return outcome{err: e}
	case c.rpc == "Chat":
		var frames []*e2av1.E2AResponse
		for _, text := range line.Frames {
			frame := &e2av1.E2AResponse{}
			decode(text, frame)
			frames = append(frames, frame)
		}
		return outcome{frames: frames}
	}
	reply := map[string]proto.Message{
		"ToACP": &e2av1.ToACPResponse{}, "FromACP": &e2av1.FromACPResponse{}, "ToA2AStream": &e2av1.ToA2AStreamResponse{},
	}[c.rpc]
	decode(line.Reply, reply)
	return outcome{reply: reply}
}

// The generated Go clients call ToACP, FromACP, ToA2AStream and Chat on the Python server and get
// the same results as the Python client (equal messages, so JSON text results are byte-identical;
// equal status code, message and details for errors). Chat streams obey section 12 as seen from Go.
func TestGoClientGetsThePythonClientsResults(t *testing.T) {
	address := serverAddress(t)
	conn := dial(t, address)

	casesFile := filepath.Join(t.TempDir(), "cases.jsonl")
	var lines bytes.Buffer
	for _, c := range rpcCases {
		data, err := proto.Marshal(c.request)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]string{"name": c.name, "rpc": c.rpc, "request": base64.StdEncoding.EncodeToString(data)})
		lines.Write(append(line, '\n'))
	}
	writeFile(t, casesFile, lines.Bytes())
	printed := map[string]pythonLine{}
	scanner := bufio.NewScanner(bytes.NewReader(runPython(t, "-m", "tests.support.tools.go_client", address, casesFile)))
	scanner.Buffer(nil, 64<<20)
	for scanner.Scan() {
		var line pythonLine
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			t.Fatalf("go_client printed %q: %v", scanner.Text(), err)
		}
		printed[line.Name] = line
	}

	for _, c := range rpcCases {
		t.Run(c.name, func(t *testing.T) {
			line, ok := printed[c.name]
			if !ok {
				t.Fatal("the Python client printed nothing for this case")
			}
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			got := goCall(ctx, conn, c)
			python := pythonOutcome(t, c, line)

			if got.err != nil || python.err != nil {
				if got.err == nil || python.err == nil || got.err.code != python.err.code ||
					got.err.message != python.err.message || fmt.Sprint(got.err.details) != fmt.Sprint(python.err.details) {
					t.Fatalf("Go got\n%v\nPython got\n%v", got, python)
				}
				if got.err.code != c.code {
					t.Fatalf("status %v, want %v: %v", got.err.code, c.code, got)
				}
				return
			}
			if c.code != codes.OK {
				t.Fatalf("the call succeeded, want status %v: %v", c.code, got)
			}
			if c.rpc == "Chat" {
				envelope := c.request.(*e2av1.ChatRequest).GetEnvelope()
				if err := checkStream(envelope, got.frames); err != nil {
					t.Fatalf("the stream Go got breaks section 12: %v\n%v", err, got)
				}
				if err := checkStream(envelope, python.frames); err != nil {
					t.Fatalf("the stream Python got breaks section 12: %v\n%v", err, python)
				}
			}
			if c.check != nil {
				c.check(t, got)
			}
			goKept, pythonKept := withoutCallTimeValues(t, c, got), withoutCallTimeValues(t, c, python)
			if goKept.String() != pythonKept.String() || !sameMessages(goKept, pythonKept) {
				t.Fatalf("Go got\n%v\nPython got\n%v", goKept, pythonKept)
			}
		})
	}
}

func sameMessages(a, b outcome) bool {
	if a.reply != nil || b.reply != nil {
		return proto.Equal(a.reply, b.reply)
	}
	if len(a.frames) != len(b.frames) {
		return false
	}
	for i := range a.frames {
		if !proto.Equal(a.frames[i], b.frames[i]) {
			return false
		}
	}
	return true
}

var (
	rfc3339UTC = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$`)
	uuidText   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

func isRFC3339UTC(text string) bool {
	_, err := time.Parse(time.RFC3339Nano, text)
	return err == nil && rfc3339UTC.MatchString(text)
}

// withoutCallTimeValues is a copy of the outcome without the values the server makes per call,
// after checking their shape: FromACP's provenance.converted_at, and the response_id and timestamp
// of its responses; each Chat frame's response_id and timestamp, and a request_id the server assigned.
func withoutCallTimeValues(t *testing.T, c rpcCase, o outcome) outcome {
	t.Helper()
	if o.reply != nil {
		reply := proto.Clone(o.reply)
		if records, ok := reply.(*e2av1.FromACPResponse); ok {
			for i, record := range records.GetRecords() {
				provenance := record.GetEnvelope().GetProvenance()
				if response := record.GetResponse(); response != nil {
					provenance = response.GetProvenance()
					if !uuidText.MatchString(response.GetResponseId()) || !isRFC3339UTC(response.GetTimestamp()) {
						t.Errorf("record %d: response_id %q, timestamp %q", i, response.GetResponseId(), response.GetTimestamp())
					}
					response.ResponseId, response.Timestamp = nil, nil
				}
				if !isRFC3339UTC(provenance.GetConvertedAt()) {
					t.Errorf("record %d: provenance.converted_at %q", i, provenance.GetConvertedAt())
				}
				provenance.ConvertedAt = nil
			}
		}
		return outcome{reply: reply}
	}
	assigned := c.request.(*e2av1.ChatRequest).GetEnvelope().RequestId == nil
	var frames []*e2av1.E2AResponse
	for _, frame := range o.frames {
		frame = proto.Clone(frame).(*e2av1.E2AResponse)
		frame.ResponseId, frame.Timestamp = nil, nil // checked by checkStream
		if assigned {
			frame.RequestId = nil
		}
		frames = append(frames, frame)
	}
	return outcome{frames: frames}
}

// checkStream checks a Chat stream against section 12 of the protocol: request_id echoed (or
// assigned once by the server), sequence 0, 1, 2, ..., a unique response_id per frame, RFC 3339
// UTC timestamps, the request's correlation fields echoed, exactly one final frame and it is the
// last, in_progress before it, and a final status of succeeded or failed (then an e2a.error).
func checkStream(request *e2av1.E2AEnvelope, frames []*e2av1.E2AResponse) error {
	if len(frames) == 0 {
		return errors.New("no frames")
	}
	requestID := request.GetRequestId()
	if request.RequestId == nil {
		requestID = frames[0].GetRequestId()
	}
	seen := map[string]bool{}
	for i, frame := range frames {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("frame %d (%s): %s", i, frame.GetResponseKind(), fmt.Sprintf(format, args...))
		}
		if frame.RequestId == nil || frame.GetRequestId() == "" || frame.GetRequestId() != requestID {
			return fail("request_id %q, want %q", frame.GetRequestId(), requestID)
		}
		if frame.GetSequence() != int64(i) {
			return fail("sequence %d", frame.GetSequence())
		}
		if id := frame.GetResponseId(); id == "" || seen[id] {
			return fail("response_id %q missing or repeated", id)
		}
		seen[frame.GetResponseId()] = true
		if !isRFC3339UTC(frame.GetTimestamp()) {
			return fail("timestamp %q is not RFC 3339 UTC", frame.GetTimestamp())
		}
		if frame.GetProvenance().GetSourceProtocol() == "" {
			return fail("provenance.source_protocol is not set")
		}
		if field := unechoedField(request, frame); field != "" {
			return fail("%s does not echo the request's", field)
		}
		last := i == len(frames)-1
		if frame.GetIsFinal() != last {
			return fail("is_final %v: want exactly one final frame, the last", frame.GetIsFinal())
		}
		switch {
		case !last && frame.GetStatus() != "in_progress":
			return fail("a non-final frame has status %q", frame.GetStatus())
		case last && frame.GetStatus() == "failed":
			body, err := e2ajson.DecodeObject(frame.GetBody())
			if frame.GetResponseKind() != "e2a.error" || err != nil || body["code"] == nil || body["message"] == nil || body["details"] == nil {
				return fail("a failed final frame must be an e2a.error with code, message and details")
			}
		case last && frame.GetStatus() != "succeeded":
			return fail("the final frame has status %q", frame.GetStatus())
		}
	}
	return nil
}

// unechoedField names the first request field that the frame does not echo (spec 12.4), or "".
func unechoedField(request *e2av1.E2AEnvelope, frame *e2av1.E2AResponse) string {
	strings := []struct {
		name      string
		want, got *string
	}{
		{"correlation_id", request.CorrelationId, frame.CorrelationId},
		{"task_id", request.TaskId, frame.TaskId},
		{"context_id", request.ContextId, frame.ContextId},
		{"session_id", request.SessionId, frame.SessionId},
		{"message_id", request.MessageId, frame.MessageId},
		{"channel", request.Channel, frame.Channel},
		{"user_id", request.UserId, frame.UserId},
		{"source_agent_id", request.SourceAgentId, frame.SourceAgentId},
		{"method", request.Method, frame.Method},
	}
	for _, s := range strings {
		if (s.want == nil) != (s.got == nil) || (s.want != nil && *s.want != *s.got) {
			return s.name
		}
	}
	if !proto.Equal(request.GetJsonrpcId(), frame.GetJsonrpcId()) {
		return "jsonrpc_id"
	}
	if request.GetIsStream() != frame.GetIsStream() {
		return "is_stream"
	}
	if !sameJSONText(request.GetAgentRef(), frame.GetAgentRef()) {
		return "agent_ref"
	}
	return ""
}

// sameJSONText: equal JSON values ("" meaning null here), whatever the spelling.
func sameJSONText(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	x, errX := e2ajson.Decode(a)
	y, errY := e2ajson.Decode(b)
	return errX == nil && errY == nil && sameJSON(x, y)
}

func wantOneof(name string) func(*testing.T, outcome) {
	return func(t *testing.T, got outcome) {
		fields := got.reply.ProtoReflect()
		oneof := fields.Descriptor().Oneofs().ByName("result")
		if which := fields.WhichOneof(oneof); which == nil || string(which.Name()) != name {
			t.Errorf("result is %v, want %s", which, name)
		}
	}
}

func wantRecords(kinds ...string) func(*testing.T, outcome) {
	return func(t *testing.T, got outcome) {
		records := got.reply.(*e2av1.FromACPResponse).GetRecords()
		var have []string
		for _, record := range records {
			have = append(have, string(record.ProtoReflect().WhichOneof(record.ProtoReflect().Descriptor().Oneofs().ByName("record")).Name()))
		}
		if fmt.Sprint(have) != fmt.Sprint(kinds) {
			t.Errorf("records %v, want %v", have, kinds)
		}
	}
}

// wantEcho: the echo backend streams the prompt text back as e2a.chunk deltas, then an
// e2a.complete whose result.content is the whole text.
func wantEcho(text string) func(*testing.T, outcome) {
	return func(t *testing.T, got outcome) {
		var deltas string
		for _, frame := range got.frames[:len(got.frames)-1] {
			body, err := e2ajson.DecodeObject(frame.GetBody())
			if err != nil || frame.GetResponseKind() != "e2a.chunk" {
				t.Fatalf("frame %d: %s %q (%v)", frame.GetSequence(), frame.GetResponseKind(), frame.GetBody(), err)
			}
			deltas += body["delta"].(string)
		}
		final := got.frames[len(got.frames)-1]
		body, err := e2ajson.DecodeObject(final.GetBody())
		result, _ := body["result"].(map[string]any)
		if deltas != text || err != nil || final.GetResponseKind() != "e2a.complete" || result["content"] != text {
			t.Errorf("deltas %q, final %s %q; want the text %q", deltas, final.GetResponseKind(), final.GetBody(), text)
		}
	}
}
