// Command conformance-testee is the Go testee of the E2A conformance suite: it converts E2A
// records between wire JSON and binary protobuf with package e2ajson.
//
// It reads one request per line on stdin,
//
//	{"id": 1, "message": "envelope"|"response", "from": "wire_json"|"protobuf", "to": "wire_json"|"protobuf", "payload": "..."}
//
// where a protobuf payload is the message's bytes in standard base64, and writes one line per
// request to stdout, flushed at once:
//
//	{"id": 1, "payload": "..."}  or  {"id": 1, "error": {"field": "params", "message": "..."}}
//
// field is the dotted path of the field at fault, "$" for the whole payload, "" for a request the
// testee cannot read. protobuf to protobuf decodes the record (checking it as the wire JSON
// conversion does) and encodes it again.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
	"e2agrpc/gen/go/e2ajson"
)

type request struct {
	ID      json.RawMessage `json:"id"`
	Message string          `json:"message"`
	From    string          `json:"from"`
	To      string          `json:"to"`
	Payload *string         `json:"payload"`
}

type errorBody struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

type response struct {
	ID      json.RawMessage `json:"id"`
	Payload *string         `json:"payload,omitempty"`
	Error   *errorBody      `json:"error,omitempty"`
}

// record is what the testee does with one message type.
type record struct {
	name          string // the protobuf full name, for errors
	newMessage    func() proto.Message
	unmarshalJSON func([]byte) (proto.Message, error)
	marshalJSON   func(proto.Message) ([]byte, error)
}

var records = map[string]record{
	"envelope": {
		name:          "e2a.v1.E2AEnvelope",
		newMessage:    func() proto.Message { return &e2av1.E2AEnvelope{} },
		unmarshalJSON: func(data []byte) (proto.Message, error) { return e2ajson.UnmarshalEnvelope(data) },
		marshalJSON:   func(m proto.Message) ([]byte, error) { return e2ajson.MarshalEnvelope(m.(*e2av1.E2AEnvelope)) },
	},
	"response": {
		name:          "e2a.v1.E2AResponse",
		newMessage:    func() proto.Message { return &e2av1.E2AResponse{} },
		unmarshalJSON: func(data []byte) (proto.Message, error) { return e2ajson.UnmarshalResponse(data) },
		marshalJSON:   func(m proto.Message) ([]byte, error) { return e2ajson.MarshalResponse(m.(*e2av1.E2AResponse)) },
	},
}

// requestError is a request the testee cannot carry out (field "").
type requestError string

func (e requestError) Error() string { return string(e) }

// convert carries out one request and returns the output payload.
func convert(req request) (string, error) {
	rec, ok := records[req.Message]
	if !ok {
		return "", requestError(fmt.Sprintf("unknown message %q (want envelope or response)", req.Message))
	}
	for _, format := range []string{req.From, req.To} {
		if format != "wire_json" && format != "protobuf" {
			return "", requestError(fmt.Sprintf("unknown format %q (want wire_json or protobuf)", format))
		}
	}
	if req.Payload == nil {
		return "", requestError("payload is missing or not a string")
	}
	var m proto.Message
	var err error
	if req.From == "wire_json" {
		if m, err = rec.unmarshalJSON([]byte(*req.Payload)); err != nil {
			return "", err
		}
	} else {
		data, err := base64.StdEncoding.DecodeString(*req.Payload)
		if err != nil {
			return "", requestError("payload is not standard base64: " + err.Error())
		}
		m = rec.newMessage()
		if err := proto.Unmarshal(data, m); err != nil {
			return "", &e2ajson.FieldError{Field: "$", Message: fmt.Sprintf("not a valid %s message: %v", rec.name, err)}
		}
		// Decoding a message checks it: its JSON text and strings must make a valid record.
		wire, err := rec.marshalJSON(m)
		if err != nil {
			return "", err
		}
		if req.To == "wire_json" {
			return string(wire), nil
		}
		if m, err = rec.unmarshalJSON(wire); err != nil {
			return "", err
		}
	}
	if req.To == "wire_json" {
		wire, err := rec.marshalJSON(m)
		return string(wire), err
	}
	data, err := proto.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding protobuf: %w", err)
	}
	return base64.StdEncoding.EncodeToString(data), nil
}

func answer(line []byte) response {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return response{ID: req.ID, Error: &errorBody{Message: "request is not a JSON object of the testee protocol: " + err.Error()}}
	}
	payload, err := convert(req)
	if err == nil {
		return response{ID: req.ID, Payload: &payload}
	}
	body := &errorBody{Message: err.Error()}
	var fieldErr *e2ajson.FieldError
	if errors.As(err, &fieldErr) {
		body = &errorBody{Field: fieldErr.Field, Message: fieldErr.Message}
	}
	return response{ID: req.ID, Error: body}
}

func run(in io.Reader, out io.Writer) error {
	reader := bufio.NewReader(in)
	writer := bufio.NewWriter(out)
	encoder := json.NewEncoder(writer) // one line per value
	encoder.SetEscapeHTML(false)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 && !isBlank(line) {
			resp := answer(line)
			if resp.ID == nil {
				resp.ID = json.RawMessage("null")
			}
			if err := encoder.Encode(resp); err != nil {
				return err
			}
			if err := writer.Flush(); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func isBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-testee:", err)
		os.Exit(1)
	}
}
