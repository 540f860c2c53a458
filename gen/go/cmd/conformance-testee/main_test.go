package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	envelope := `{"request_id":"r","params":{"a":1.0,"big":18446744073709551617}}`
	// Python: base64.b64encode(E2AEnvelope.from_json('{"params":{"a":1.0},"request_id":"r"}').to_bytes())
	const pythonBytes = "CgMxLjASBQoDZTJhGgFyWAKqAQl7ImEiOjEuMH0="
	requests := []map[string]any{
		{"id": 1, "message": "envelope", "from": "wire_json", "to": "protobuf", "payload": `{"params":{"a":1.0},"request_id":"r"}`},
		{"id": 2, "message": "envelope", "from": "protobuf", "to": "wire_json", "payload": pythonBytes},
		{"id": 3, "message": "envelope", "from": "protobuf", "to": "protobuf", "payload": pythonBytes},
		{"id": 4, "message": "envelope", "from": "wire_json", "to": "wire_json", "payload": envelope},
		{"id": 5, "message": "response", "from": "wire_json", "to": "wire_json", "payload": `{"sequence":true}`},
		{"id": 6, "message": "response", "from": "protobuf", "to": "wire_json", "payload": "/w=="},
		{"id": 7, "message": "response", "from": "protobuf", "to": "wire_json", "payload": "not base64"},
		{"id": 8, "message": "record", "from": "wire_json", "to": "wire_json", "payload": "{}"},
		{"id": 9, "message": "envelope", "from": "yaml", "to": "wire_json", "payload": "{}"},
		{"id": 10, "message": "envelope", "from": "wire_json", "to": "wire_json"},
	}
	var input strings.Builder
	for _, req := range requests {
		line, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		input.Write(line)
		input.WriteString("\n\n") // blank lines are skipped
	}
	input.WriteString("not json\n")
	var output strings.Builder
	if err := run(strings.NewReader(input.String()), &output); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id             string
		payload        string // a fragment of it
		field, message string
	}{
		{"1", pythonBytes, "", ""},
		{"2", `"request_id":"r","jsonrpc_id":null`, "", ""},
		{"3", pythonBytes, "", ""},
		{"4", `"params":{"a":1.0,"big":18446744073709551617}`, "", ""},
		{"5", "", "sequence", "expected an integer, got boolean"},
		{"6", "", "$", "not a valid e2a.v1.E2AResponse message"},
		{"7", "", "", "not standard base64"},
		{"8", "", "", "unknown message"},
		{"9", "", "", "unknown format"},
		{"10", "", "", "payload is missing"},
		{"null", "", "", "not a JSON object"},
	}
	scanner := bufio.NewScanner(strings.NewReader(output.String()))
	for i := 0; scanner.Scan(); i++ {
		if i >= len(want) {
			t.Fatalf("extra output line %s", scanner.Text())
		}
		var got struct {
			ID      json.RawMessage
			Payload *string
			Error   *errorBody
		}
		if err := json.Unmarshal(scanner.Bytes(), &got); err != nil {
			t.Fatalf("output line %q: %v", scanner.Text(), err)
		}
		w := want[i]
		switch {
		case string(got.ID) != w.id:
			t.Errorf("line %d: id %s, want %s", i, got.ID, w.id)
		case w.payload != "" && (got.Payload == nil || !strings.Contains(*got.Payload, w.payload) || got.Error != nil):
			t.Errorf("request %s: %s, want a payload with %s", w.id, scanner.Text(), w.payload)
		case w.payload == "" && (got.Error == nil || got.Payload != nil || got.Error.Field != w.field || !strings.Contains(got.Error.Message, w.message)):
			t.Errorf("request %s: %s, want error field %q message %q", w.id, scanner.Text(), w.field, w.message)
		}
	}
}
