package e2ajson_test

import (
	"fmt"
	"log"

	"e2agrpc/gen/go/e2ajson"
)

// ExampleMarshalResponse writes a response message as wire JSON and reads it back.
func ExampleMarshalResponse() {
	resp, err := e2ajson.UnmarshalResponse([]byte(`{"response_id":"r1","sequence":0,"status":"in_progress",` +
		`"response_kind":"e2a.chunk","body":{"delta_kind":"text","delta":"Hello"}}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Sequence, resp.IsFinal = 1, true
	out, err := e2ajson.MarshalResponse(resp)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
	// Output:
	// {"protocol_version":"1.0","response_id":"r1","request_id":null,"sequence":1,"is_final":true,"status":"in_progress","response_kind":"e2a.chunk","timestamp":null,"provenance":{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{}},"body":{"delta_kind":"text","delta":"Hello"},"jsonrpc_id":null,"correlation_id":null,"task_id":null,"context_id":null,"session_id":null,"message_id":null,"is_stream":false,"identity_origin":"agent","channel":null,"user_id":null,"agent_ref":null,"source_agent_id":null,"method":null,"projections":{},"channel_context":{},"metadata":{},"a2a_metadata":{},"acp_meta":{}}
}
