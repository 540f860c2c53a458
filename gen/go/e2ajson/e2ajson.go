// Package e2ajson reads and writes the E2A wire JSON of whole records, and the JSON text that E2A
// messages carry in their free-form fields.
//
// UnmarshalEnvelope / UnmarshalResponse read a record's wire JSON (the legacy keys of spec sections
// 9-11 included) into its protobuf message, and MarshalEnvelope / MarshalResponse write a message
// as wire JSON, as the Python reference implementation does: the same fields and defaults, the same
// output text, and for a bad input a *FieldError naming the field Python names. Free-form values
// (params, body, channel_context, ...) never go through Go maps: they are checked and copied as
// canonical JSON text, so integers of any size, 1.0 vs 1, key order and all of Unicode survive.
//
// Decode, DecodeObject and Encode are encoding/json set up for the free-form text of one field
// (params, body, provenance.details, agent_ref, channel_context, metadata, projections, a2a_metadata,
// acp_meta and the _meta fields of package e2a/v1): numbers decode as json.Number, so integers of
// any size and the int/float distinction (1 vs 1.0) survive; an empty field reads as the E2A
// default {}; text after the value is an error. Objects decode to map[string]any, which does not
// keep key order: decode into a struct, or keep the text as a json.RawMessage, where order matters.
package e2ajson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Decode parses JSON text into map[string]any, []any, string, json.Number, bool or nil.
// Empty text is the E2A default of the object fields: an empty map.
func Decode(text string) (any, error) {
	if text == "" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return nil, fmt.Errorf("e2ajson: invalid JSON text: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("e2ajson: invalid JSON text: data after the value")
	}
	return value, nil
}

// DecodeObject is Decode for the fields that hold a JSON object (all but agent_ref, where empty
// text means null): it fails if the text is some other JSON value.
func DecodeObject(text string) (map[string]any, error) {
	value, err := Decode(text)
	if err != nil {
		return nil, err
	}
	object, ok := value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("e2ajson: JSON text is a %T, not an object", value)
	}
	return object, nil
}

// Encode writes v (a map, struct, slice, json.Number, ...) as compact JSON text for a free-form
// field. Unlike json.Marshal it leaves <, > and & as they are.
func Encode(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("e2ajson: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
