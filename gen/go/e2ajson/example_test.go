package e2ajson_test

import (
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// Example_params reads params as Go values and writes them back, with encoding/json alone.
func Example_params() {
	// An envelope as it arrives, e.g. from proto.Unmarshal or a ConversionService reply.
	env := &e2av1.E2AEnvelope{
		Method: proto.String("session/prompt"),
		Params: `{"text":"héllo ✓","n":123456789012345678901234567890,"x":1.0}`,
	}

	// Read: params is JSON text ("" means {}). A json.Decoder with UseNumber keeps every
	// number as written: n is beyond 2^64, and x stays 1.0.
	text := env.GetParams()
	if text == "" {
		text = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var params map[string]any
	if err := dec.Decode(&params); err != nil {
		log.Fatal(err)
	}
	n := params["n"].(json.Number)
	fmt.Println(params["text"], n, params["x"])

	// Write: json.Marshal of a map (keys come out sorted) or of a struct gives the text to store.
	params["mode"] = "plan"
	out, err := json.Marshal(params)
	if err != nil {
		log.Fatal(err)
	}
	env.Params = string(out)
	fmt.Println(env.GetParams())
	// Output:
	// héllo ✓ 123456789012345678901234567890 1.0
	// {"mode":"plan","n":123456789012345678901234567890,"text":"héllo ✓","x":1.0}
}
