package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"e2agrpc/gen/go/e2abus"
)

func TestEchoAgentStreamsThePromptWordByWord(t *testing.T) {
	var pieces []string
	result, err := echoAgent{}.Turn(context.Background(), &e2abus.Request{Prompt: "  hello from\tGo "},
		func(text string) error { pieces = append(pieces, text); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pieces, "|") != "  |hello |from\t|Go " {
		t.Errorf("pieces %q", pieces)
	}
	if result["content"] != "  hello from\tGo " {
		t.Errorf("result %v", result)
	}
}

func TestEchoAgentStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sent := 0
	_, err := echoAgent{delay: time.Millisecond}.Turn(ctx, &e2abus.Request{Prompt: "a b c d"}, func(string) error {
		sent++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || sent != 1 {
		t.Errorf("err %v after %d pieces, want context.Canceled after 1", err, sent)
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions([]string{"--agent-id", "go-echo", "--nats", "nats://a:1,nats://b:2", "--max-turns", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if o.bus.AgentID != "go-echo" || o.urls != "nats://a:1,nats://b:2" || o.bus.MaxTurns != 2 || o.bus.RequestStream != e2abus.DefaultRequestStream {
		t.Errorf("options %+v", o)
	}
	refusals := map[string][]string{
		"--agent-id":           {},
		"unexpected arguments": {"--agent-id", "a", "extra"},
		"--registry-heartbeat": {"--agent-id", "a", "--registry-heartbeat", "40s"},
		"--progress":           {"--agent-id", "a", "--progress", "30s"},
		"--max-turns":          {"--agent-id", "a", "--max-turns", "0"},
		"--replicas":           {"--agent-id", "a", "--replicas", "7"},
	}
	for want, args := range refusals {
		if _, err := parseOptions(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseOptions(%q) = %v, want an error naming %s", args, err, want)
		}
	}
}
