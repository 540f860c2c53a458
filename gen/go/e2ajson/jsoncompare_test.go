package e2ajson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// jsonNode is a parsed JSON value that keeps what map[string]any loses: key order, and whether a
// number is an integer (compared exactly, any size) or has a fraction/exponent.
type jsonNode struct {
	kind  string // "object", "array", "string", "integer", "number", "boolean", "null"
	text  string // string content, number text, "true"/"false"
	keys  []string
	items []jsonNode
}

func parseOrdered(text []byte) (jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	node, err := parseNode(dec)
	if err != nil {
		return node, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return node, fmt.Errorf("data after the value")
	}
	return node, nil
}

func parseNode(dec *json.Decoder) (jsonNode, error) {
	token, err := dec.Token()
	if err != nil {
		return jsonNode{}, err
	}
	switch t := token.(type) {
	case json.Delim:
		node := jsonNode{kind: "array"}
		if t == '{' {
			node.kind = "object"
		}
		for dec.More() {
			if node.kind == "object" {
				key, err := dec.Token()
				if err != nil {
					return node, err
				}
				node.keys = append(node.keys, key.(string))
			}
			item, err := parseNode(dec)
			if err != nil {
				return node, err
			}
			node.items = append(node.items, item)
		}
		_, err := dec.Token() // the closing delimiter
		return node, err
	case string:
		return jsonNode{kind: "string", text: t}, nil
	case json.Number:
		if strings.ContainsAny(string(t), ".eE") {
			return jsonNode{kind: "number", text: string(t)}, nil
		}
		return jsonNode{kind: "integer", text: string(t)}, nil
	case bool:
		return jsonNode{kind: "boolean", text: strconv.FormatBool(t)}, nil
	}
	return jsonNode{kind: "null"}, nil
}

// diff describes the first difference between two values ("" if none), at a dotted path.
func (a jsonNode) diff(b jsonNode, path string) string {
	if a.kind != b.kind {
		return fmt.Sprintf("%s: %s vs %s", path, a.kind, b.kind)
	}
	switch a.kind {
	case "integer":
		x, _ := new(big.Int).SetString(a.text, 10)
		y, _ := new(big.Int).SetString(b.text, 10)
		if x.Cmp(y) != 0 {
			return fmt.Sprintf("%s: %s vs %s", path, a.text, b.text)
		}
	case "number":
		x, _ := strconv.ParseFloat(a.text, 64)
		y, _ := strconv.ParseFloat(b.text, 64)
		if math.Float64bits(x) != math.Float64bits(y) {
			return fmt.Sprintf("%s: %s vs %s", path, a.text, b.text)
		}
	case "string", "boolean":
		if a.text != b.text {
			return fmt.Sprintf("%s: %q vs %q", path, a.text, b.text)
		}
	case "object", "array":
		if len(a.items) != len(b.items) {
			return fmt.Sprintf("%s: %d vs %d members (keys %q vs %q)", path, len(a.items), len(b.items), a.keys, b.keys)
		}
		for i := range a.items {
			sub := fmt.Sprintf("%s[%d]", path, i)
			if a.kind == "object" {
				if a.keys[i] != b.keys[i] {
					return fmt.Sprintf("%s: key %d is %q vs %q", path, i, a.keys[i], b.keys[i])
				}
				sub = path + "." + a.keys[i]
			}
			if d := a.items[i].diff(b.items[i], sub); d != "" {
				return d
			}
		}
	}
	return ""
}

// jsonDiff compares two JSON texts by value, key order and number kind.
func jsonDiff(got, want []byte) string {
	a, err := parseOrdered(got)
	if err != nil {
		return fmt.Sprintf("got invalid JSON %s: %v", got, err)
	}
	b, err := parseOrdered(want)
	if err != nil {
		return fmt.Sprintf("want invalid JSON %s: %v", want, err)
	}
	return a.diff(b, "$")
}
