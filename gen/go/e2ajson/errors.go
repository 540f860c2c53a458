package e2ajson

import "fmt"

// FieldError is an error about one field of an E2A record. Field is the dotted path the Python
// reference implementation names for the same input ("params", "auth.extra_headers.X",
// "expected_output_modes[2]"); "$" stands for the whole JSON text, "envelope" / "response" for a
// document that is not a JSON object. Use errors.As to get at it.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func fieldErrorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// typeError is the message of a value of the wrong JSON type, worded as Python words it.
func typeError(field, expected string, value []byte) *FieldError {
	return &FieldError{Field: field, Message: "expected " + expected + ", got " + typeName(value)}
}

// loneSurrogateError is what Python's protobuf encoder reports for a string field (not a free-form
// JSON field) holding a lone surrogate, which UTF-8 and so protobuf cannot carry.
func loneSurrogateError(field string) *FieldError {
	return &FieldError{Field: field, Message: "string is not valid Unicode (lone surrogate); use JSON escapes in a JSON field"}
}
