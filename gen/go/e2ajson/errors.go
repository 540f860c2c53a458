package e2ajson

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The longest field path and message a FieldError keeps, in characters, as in the Python
// reference: both may quote the input, and errors travel in status trailers.
const (
	maxFieldChars   = 200
	maxMessageChars = 400
)

// FieldError is an error about one field of an E2A record. Field is the dotted path the Python
// reference implementation names for the same input ("params", "auth.extra_headers.X",
// "expected_output_modes[2]"); "$" stands for the whole JSON text, "envelope" / "response" for a
// document that is not a JSON object. Use errors.As to get at it.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// newFieldError is a FieldError with its path and message cut to their limits.
func newFieldError(field, message string) *FieldError {
	return &FieldError{Field: shortened(field, maxFieldChars), Message: shortened(message, maxMessageChars)}
}

// shortened is text if it fits limit characters, else its start and how much was left out.
func shortened(text string, limit int) string {
	count := utf8.RuneCountInString(text)
	if count <= limit {
		return text
	}
	cut := 0
	for range limit {
		_, size := utf8.DecodeRuneInString(text[cut:])
		cut += size
	}
	return text[:cut] + "... (" + strconv.Itoa(count-limit) + " more characters)"
}

func fieldErrorf(field, format string, args ...any) *FieldError {
	return newFieldError(field, fmt.Sprintf(format, args...))
}

// typeError is the message of a value of the wrong JSON type, worded as Python words it.
func typeError(field, expected string, value []byte) *FieldError {
	return newFieldError(field, "expected "+expected+", got "+typeName(value))
}

// loneSurrogateError is what Python's protobuf encoder reports for a string field (not a free-form
// JSON field) holding a lone surrogate, which UTF-8 and so protobuf cannot carry.
func loneSurrogateError(field string) *FieldError {
	return newFieldError(field, "string is not valid Unicode (lone surrogate); use JSON escapes in a JSON field")
}
