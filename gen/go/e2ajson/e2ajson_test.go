package e2ajson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		text string
		want any
	}{
		{"", map[string]any{}},
		{"{}", map[string]any{}},
		{"null", nil},
		{` {"a" : [1, 1.0, -0.0, 1e400, "é\u2028", true, null, {}]} `, map[string]any{"a": []any{
			json.Number("1"), json.Number("1.0"), json.Number("-0.0"), json.Number("1e400"), "é\u2028", true, nil, map[string]any{},
		}}},
		{"-123456789012345678901234567890", json.Number("-123456789012345678901234567890")},
		{`"\ud83d\ude80"`, "🚀"},
	}
	for _, c := range cases {
		got, err := Decode(c.text)
		if err != nil {
			t.Errorf("Decode(%q): %v", c.text, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Decode(%q) = %#v, want %#v", c.text, got, c.want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, text := range []string{"{", "{} {}", "{}x", "[1,]", "NaN", "{'a':1}", " "} {
		if got, err := Decode(text); err == nil {
			t.Errorf("Decode(%q) = %#v, want an error", text, got)
		} else if !strings.HasPrefix(err.Error(), "e2ajson: ") {
			t.Errorf("Decode(%q) error %q does not say where it comes from", text, err)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	got, err := DecodeObject("")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf(`DecodeObject("") = %#v, %v; want an empty map`, got, err)
	}
	for _, text := range []string{"[]", "1", `"{}"`, "null"} {
		if _, err := DecodeObject(text); err == nil || !strings.Contains(err.Error(), "not an object") {
			t.Errorf("DecodeObject(%q) error = %v, want 'not an object'", text, err)
		}
	}
}

func TestEncode(t *testing.T) {
	type prompt struct {
		Text string      `json:"text"`
		N    json.Number `json:"n"`
		Tags []string    `json:"tags,omitempty"`
	}
	cases := []struct {
		value any
		want  string
	}{
		{map[string]any{}, "{}"},
		{prompt{Text: "<é> & ✓", N: "123456789012345678901234567890"}, `{"text":"<é> & ✓","n":123456789012345678901234567890}`},
		{[]any{json.Number("1.0"), json.Number("-0.0"), nil, true}, "[1.0,-0.0,null,true]"},
	}
	for _, c := range cases {
		got, err := Encode(c.value)
		if err != nil || got != c.want {
			t.Errorf("Encode(%#v) = %q, %v; want %q", c.value, got, err, c.want)
		}
	}
	if _, err := Encode(map[string]any{"f": func() {}}); err == nil || !strings.HasPrefix(err.Error(), "e2ajson: ") {
		t.Errorf("Encode(func) error = %v, want an e2ajson error", err)
	}
}

// Decode then Encode keeps every number's text and all of Unicode (only key order and spacing change).
func TestRoundTrip(t *testing.T) {
	text := `{"b":[18446744073709551616,-1.50,0.0,"\u0000 ✓ 🚀 </script>"],"a":{"x":1e-7}}`
	value, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Encode(value)
	want := `{"a":{"x":1e-7},"b":[18446744073709551616,-1.50,0.0,"\u0000 ✓ 🚀 </script>"]}`
	if err != nil || got != want {
		t.Errorf("Encode(Decode(%q)) = %q, %v; want %q", text, got, err, want)
	}
}
