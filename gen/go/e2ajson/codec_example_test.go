package e2ajson_test

import (
	"errors"
	"fmt"
	"log"

	"google.golang.org/protobuf/proto"

	"e2agrpc/gen/go/e2ajson"
)

// ExampleUnmarshalEnvelope reads an envelope's wire JSON (here with the legacy channel_id key),
// changes it and writes it back. Free-form values keep their numbers as written and their key order.
func ExampleUnmarshalEnvelope() {
	wire := []byte(`{"request_id": "req_1", "channel_id": "web", "method": "session/prompt",
		"params": {"text": "héllo <b>", "n": 18446744073709551617, "x": 1.0}}`)
	env, err := e2ajson.UnmarshalEnvelope(wire)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(env.GetChannel(), env.GetMethod(), env.GetParams())

	env.SessionId = proto.String("sess_1")
	out, err := e2ajson.MarshalEnvelope(env)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))

	// A bad input names the field, as the Python reference does.
	_, err = e2ajson.UnmarshalEnvelope([]byte(`{"expected_output_modes": ["text", 1]}`))
	var fieldErr *e2ajson.FieldError
	if errors.As(err, &fieldErr) {
		fmt.Println(fieldErr.Field, "|", fieldErr.Message)
	}
	// Output:
	// web session/prompt {"text":"héllo <b>","n":18446744073709551617,"x":1.0}
	// {"protocol_version":"1.0","provenance":{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{}},"request_id":"req_1","jsonrpc_id":null,"correlation_id":null,"task_id":null,"context_id":null,"session_id":"sess_1","message_id":null,"timestamp":null,"identity_origin":"user","channel":"web","user_id":null,"agent_ref":null,"chat_id":null,"source_agent_id":null,"agent_id":null,"service_id":null,"workspace_key":null,"method":"session/prompt","params":{"text":"héllo <b>","n":18446744073709551617,"x":1.0},"ext_method":null,"session_update_kind":null,"is_stream":false,"expected_output_modes":[],"auth":null,"channel_context":{},"a2a_metadata":{},"acp_meta":{}}
	// expected_output_modes[1] | expected a string, got integer
}
