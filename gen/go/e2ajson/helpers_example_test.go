package e2ajson_test

import (
	"encoding/json"
	"fmt"
	"log"

	"e2agrpc/gen/go/e2ajson"
)

func ExampleDecodeObject() {
	params, err := e2ajson.DecodeObject(`{"n":18446744073709551616,"x":1.0,"tags":["a","b"]}`)
	if err != nil {
		log.Fatal(err)
	}
	n := params["n"].(json.Number)
	fmt.Println(n, params["x"], params["tags"])
	// Output: 18446744073709551616 1.0 [a b]
}

func ExampleEncode() {
	text, err := e2ajson.Encode(map[string]any{"text": "a <b> & c", "n": json.Number("123456789012345678901234567890")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
	// Output: {"n":123456789012345678901234567890,"text":"a <b> & c"}
}
