package e2abus

import "testing"

// The vectors are what the Python homes (frame_messages.subject_token, agent_records.key_token)
// give for the same ids.
func TestSubjectAndAgentTokens(t *testing.T) {
	cases := []struct{ id, subject, agent string }{
		{"abc", "abc", "abc"},
		{"a.b", "~YS5i", "a_2Eb"},
		{"_", "~Xw", "_5F"},
		{"a_b-C9", "a_b-C9", "a_5Fb-C9"},
		{"sp ace", "~c3AgYWNl", "sp_20ace"},
		{"é*>", "~w6kqPg", "_C3_A9_2A_3E"},
	}
	for _, c := range cases {
		if got := SubjectToken(c.id); got != c.subject {
			t.Errorf("SubjectToken(%q) = %q, want %q", c.id, got, c.subject)
		}
		if got := AgentToken(c.id); got != c.agent {
			t.Errorf("AgentToken(%q) = %q, want %q", c.id, got, c.agent)
		}
	}
}

func TestSubjects(t *testing.T) {
	session := "s.1"
	checks := map[string]string{
		FrameSubject(DefaultFramePrefix, nil, "r-1"):           "e2a.frames._.r-1",
		FrameSubject(DefaultFramePrefix, &session, "r 1"):      "e2a.frames.~cy4x.~ciAx",
		AnyWorkerSubject(DefaultRequestPrefix, "a.b"):          "e2a.requests.a_2Eb.any",
		SharedConsumer("a.b"):                                  "e2a-agent-a_2Eb",
		CancelSubject(DefaultCancelPrefix, "r.1"):              "e2a.cancel.~ci4x",
		LostFrameMsgID("r-1"):                                  "r-1:lost",
		RegistryKey("a.b", "0123456789abcdef0123456789abcdef"): "a_2Eb.0123456789abcdef0123456789abcdef",
	}
	for got, want := range checks {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
