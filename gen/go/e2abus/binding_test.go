package e2abus

import (
	"context"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

func TestHeaderValuePercentEncodesAsTheHTTPBinding(t *testing.T) {
	// What Python's cloudevent_formats.http_header_value gives for the same text.
	if got, want := headerValue(`a b"%é~!`), "a%20b%22%25%C3%A9~!"; got != want {
		t.Errorf("headerValue = %q, want %q", got, want)
	}
}

func TestEventHeadersRoundTrip(t *testing.T) {
	ctx := context.Background()
	e := event.New()
	e.SetID("id with space é")
	e.SetSource("/e2a/channels/web")
	e.SetType("io.e2a.message.stream.stream")
	e.SetExtension("collaborationid", "r 1")
	e.SetExtension("seq", int32(7))
	if err := e.SetData(event.ApplicationJSON, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	header, data, err := EventHeaders(ctx, &e)
	if err != nil {
		t.Fatal(err)
	}
	for name := range header {
		if name != strings.ToLower(name) {
			t.Errorf("header %q is not lower-case", name)
		}
	}
	if got := header.Get("ce-id"); got != "id%20with%20space%20%C3%A9" {
		t.Errorf("ce-id = %q", got)
	}
	if got := header.Get("content-type"); got != "application/json" {
		t.Errorf("content-type = %q", got)
	}
	if got := header.Get("ce-seq"); got != "7" {
		t.Errorf("ce-seq = %q", got)
	}
	// A reader takes header names in any case (nats-py keeps what the writer sent).
	mixed := nats.Header{}
	for name, values := range header {
		mixed[strings.ToUpper(name[:1])+name[1:]] = values
	}
	back, err := EventOfMessage(ctx, mixed, data)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != e.ID() || back.Type() != e.Type() || back.Source() != e.Source() || string(back.Data()) != `{"a":1}` {
		t.Errorf("read back %v, want %v", back, e)
	}
	if got := back.Extensions()["collaborationid"]; got != "r 1" {
		t.Errorf("collaborationid = %v", got)
	}
}

func TestEventOfMessageRefusals(t *testing.T) {
	ctx := context.Background()
	cases := map[string]nats.Header{
		"specversion": {"ce-id": {"1"}},
		"ce-id":       {"ce-specversion": {"1.0"}, "ce-id": {"%zz"}, "ce-source": {"/s"}, "ce-type": {"t"}},
		"source":      {"ce-specversion": {"1.0"}, "ce-id": {"1"}, "ce-type": {"t"}},
	}
	for want, header := range cases {
		_, err := EventOfMessage(ctx, header, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("EventOfMessage(%v) = %v, want an error naming %s", header, err, want)
		}
	}
}
