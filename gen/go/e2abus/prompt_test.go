package e2abus

import (
	"errors"
	"testing"
)

func TestPromptText(t *testing.T) {
	cases := map[string]string{
		`{"text":"hi"}`:                         "hi",
		`{"text":"","content":"c","query":"q"}`: "c",
		`{"text":0,"query":"q"}`:                "q",
		`{"prompt":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":"b"}],"text":"no"}`: "ab",
		`{"content_blocks":[{"type":"text","text":"cb"}],"text":"no"}`:                                               "cb",
		`{"content_blocks":[],"text":"t"}`:                                                                           "t",
	}
	for params, want := range cases {
		got, err := PromptText(params)
		if err != nil || got != want {
			t.Errorf("PromptText(%s) = %q, %v; want %q", params, got, err, want)
		}
	}
}

func TestPromptTextRefusals(t *testing.T) {
	cases := map[string]string{
		`{"text":5}`:                   "params.text",
		`{"prompt":"x"}`:               "params.prompt",
		`{"prompt":[]}`:                "params.prompt",
		`{"prompt":[1]}`:               "params.prompt[0]",
		`{"prompt":[{"text":"x"}]}`:    "params.prompt[0].type",
		`{"prompt":[{"type":"text"}]}`: "params.prompt[0].text",
		`[1]`:                          "params",
	}
	for params, field := range cases {
		_, err := PromptText(params)
		var requestErr *RequestError
		if !errors.As(err, &requestErr) || requestErr.Field != field {
			t.Errorf("PromptText(%s) = %v, want an error naming %s", params, err, field)
		}
	}
}
