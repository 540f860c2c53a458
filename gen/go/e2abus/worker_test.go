package e2abus

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// requestHeaders is a request message as a gateway writes it, with the bus headers in extra.
func requestHeaders(t *testing.T, mcpType, envelope string, extra map[string]string) (nats.Header, []byte) {
	t.Helper()
	e := event.New()
	e.SetID("r-1")
	e.SetSource("/e2a")
	e.SetType("io.e2a.session.prompt.req")
	e.SetExtension("mcptype", mcpType)
	if err := e.SetData(event.ApplicationJSON, []byte(envelope)); err != nil {
		t.Fatal(err)
	}
	header, data, err := EventHeaders(context.Background(), &e)
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range extra {
		header.Set(name, value)
	}
	return header, data
}

func TestReadRequest(t *testing.T) {
	bus := map[string]string{ReplyToHeader: "_INBOX.1", StartByHeader: "2026-12-02T07:00:00.000Z", DeadlineHeader: "2026-12-02T07:01:00Z"}
	header, data := requestHeaders(t, "request", `{"request_id":"r-1","method":"session/prompt","params":{"text":"hi"}}`, bus)
	request, limits, err := readRequest(header, data)
	if err != nil {
		t.Fatal(err)
	}
	if request.RequestID != "r-1" || request.Envelope.GetMethod() != "session/prompt" || limits.replyTo != "_INBOX.1" ||
		limits.startBy.Minute() != 0 || limits.deadline.Minute() != 1 {
		t.Errorf("request %v, limits %+v", request, limits)
	}
}

func TestReadRequestRefusals(t *testing.T) {
	envelope := `{"request_id":"r-1","method":"session/prompt"}`
	full := map[string]string{ReplyToHeader: "_INBOX.1", StartByHeader: "2026-12-02T07:00:00Z"}
	without := func(name string) map[string]string {
		headers := map[string]string{}
		for key, value := range full {
			if key != name {
				headers[key] = value
			}
		}
		return headers
	}
	cases := []struct {
		want, mcpType, envelope string
		headers                 map[string]string
	}{
		{"ce-mcptype", "response", envelope, full},
		{"data.request_id", "request", `{"method":"session/prompt"}`, full},
		{"envelope", "request", `{"request_id":5}`, full},
		{ReplyToHeader, "request", envelope, without(ReplyToHeader)},
		{StartByHeader, "request", envelope, without(StartByHeader)},
		{StartByHeader, "request", envelope, map[string]string{ReplyToHeader: "_INBOX.1", StartByHeader: "soon"}},
		{DeadlineHeader, "request", envelope, map[string]string{ReplyToHeader: "i", StartByHeader: "2026-12-02T07:00:00Z", DeadlineHeader: "later"}},
	}
	for _, c := range cases {
		header, data := requestHeaders(t, c.mcpType, c.envelope, c.headers)
		if _, _, err := readRequest(header, data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("readRequest(%s, %v) = %v, want an error naming %s", c.envelope, c.headers, err, c.want)
		}
	}
}

func TestCheckRequest(t *testing.T) {
	w := &Worker{cfg: NewConfig("a")}
	method, other := "chat.send", "tasks/get"
	text, err := w.checkRequest(envelopeOf(&method, `{"text":"hi"}`))
	if err != nil || text != "hi" {
		t.Errorf("checkRequest = %q, %v", text, err)
	}
	for field, method := range map[string]*string{"method": &other, "params": &method} {
		var refusal *RequestError
		if _, err := w.checkRequest(envelopeOf(method, `{}`)); !errors.As(err, &refusal) || refusal.Field != field {
			t.Errorf("checkRequest = %v, want a refusal naming %s", err, field)
		}
	}
}

func envelopeOf(method *string, params string) *e2av1.E2AEnvelope {
	return &e2av1.E2AEnvelope{Method: method, Params: params}
}
