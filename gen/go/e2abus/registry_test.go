package e2abus

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

func TestRegistryEntry(t *testing.T) {
	card := Card{AgentID: "go-echo", Name: "Go", Description: "echo", Backend: "go", Version: "1"}
	started := time.Date(2026, 12, 2, 4, 10, 33, 716_999_000, time.UTC)
	value, err := json.Marshal(card.Entry("0123456789abcdef0123456789abcdef", started, started.Add(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema_version":1,"agent_id":"go-echo","name":"Go","description":"echo","skills":[],"input_modes":[],` +
		`"output_modes":[],"backend":"go","version":"1","instance_id":"0123456789abcdef0123456789abcdef",` +
		`"started_at":"2026-12-02T04:10:33.716Z","heartbeat_at":"2026-12-02T04:10:34.716Z"}`
	if string(value) != want {
		t.Errorf("entry\n%s\nwant\n%s", value, want)
	}
}

func TestNewInstanceID(t *testing.T) {
	a, b := NewInstanceID(), NewInstanceID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) || a == b {
		t.Errorf("instance ids %q, %q", a, b)
	}
}
