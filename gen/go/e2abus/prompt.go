package e2abus

import (
	"encoding/json"
	"fmt"
	"strings"

	"e2agrpc/gen/go/e2ajson"
)

// Where a request's prompt is (spec section 7; Python home: protocols.acp.prompt_source).
const (
	promptKey        = "prompt"
	contentBlocksKey = "content_blocks"
)

var promptTextKeys = []string{"text", "content", "query"}

// RequestError says why Chat refuses a request, naming the field at fault (a params key of the prompt).
type RequestError struct {
	Field   string
	Message string
}

func (e *RequestError) Error() string { return e.Field + ": " + e.Message }

// PromptText is the text of a request's prompt: the text of its text content blocks, in order.
// The prompt is params.prompt whatever it holds; else params.content_blocks when a non-empty
// list; else the first of params.text, content and query that is set (not empty, null, 0 or
// false), which must be a string. A request without any has the empty prompt.
func PromptText(params string) (string, error) {
	document, err := e2ajson.DecodeObject(params)
	if err != nil {
		return "", &RequestError{Field: "params", Message: err.Error()}
	}
	if value, ok := document[promptKey]; ok {
		return blocksText("params."+promptKey, value)
	}
	if blocks, ok := document[contentBlocksKey].([]any); ok && len(blocks) > 0 {
		return blocksText("params."+contentBlocksKey, blocks)
	}
	for _, key := range promptTextKeys {
		value, ok := document[key]
		if !ok || !truthy(value) {
			continue
		}
		text, ok := value.(string)
		if !ok {
			return "", &RequestError{Field: "params." + key, Message: fmt.Sprintf(
				"the prompt's text must be a string, got %s (the first of %s that is set is the prompt)",
				jsonType(value), strings.Join(promptTextKeys, ", "))}
		}
		return text, nil
	}
	return "", &RequestError{Field: "params", Message: "no prompt: give prompt, content_blocks, text, content or query"}
}

func blocksText(field string, value any) (string, error) {
	blocks, ok := value.([]any)
	if !ok {
		return "", &RequestError{Field: field, Message: "expected a list of content blocks, got " + jsonType(value)}
	}
	if len(blocks) == 0 {
		return "", &RequestError{Field: field, Message: "the prompt has no content blocks"}
	}
	var text strings.Builder
	for index, item := range blocks {
		block, ok := item.(map[string]any)
		if !ok {
			return "", &RequestError{Field: fmt.Sprintf("%s[%d]", field, index), Message: "expected a content block object, got " + jsonType(item)}
		}
		kind, ok := block["type"].(string)
		if !ok {
			return "", &RequestError{Field: fmt.Sprintf("%s[%d].type", field, index), Message: "a content block has a string type"}
		}
		if kind == "text" {
			part, ok := block["text"].(string)
			if !ok {
				return "", &RequestError{Field: fmt.Sprintf("%s[%d].text", field, index), Message: "a text block has a string text"}
			}
			text.WriteString(part)
		}
	}
	return text.String(), nil
}

// truthy is Python's truth of a JSON value: not null, false, 0, "" or an empty list or object.
func truthy(value any) bool {
	switch v := value.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	case json.Number:
		number, err := v.Float64()
		return err != nil || number != 0
	default:
		return true
	}
}

func jsonType(value any) string {
	switch value.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "number"
	}
}
