// Package e2abus is the Go side of the E2A agent bus (docs/agent-bus.md): what a worker of an
// agent needs to take requests from NATS JetStream, answer them with frames that keep the
// invariants of spec section 12, and announce itself in the agent registry
// (docs/agent-registry.md). Command e2a-echo-worker is an agent built on it.
//
// This file holds the bus's names: subjects, stream, consumer and bucket names, header names and
// the two ways an id becomes a subject token. Each is the Go copy of a fact whose Python home is
// named beside it; the tests hold the two to the same vectors.
package e2abus

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

// Defaults shared with the Python gateway and workers (their settings' defaults).
const (
	DefaultRequestStream = "E2A_REQUESTS"
	DefaultRequestPrefix = "e2a.requests"
	DefaultFrameStream   = "E2A_FRAMES"
	DefaultFramePrefix   = "e2a.frames"
	DefaultCancelPrefix  = "e2a.cancel"
	DefaultRegistry      = "E2A_AGENTS"
	DefaultTypePrefix    = "io.e2a"
)

// Headers of a request message besides its CloudEvent's, and of the notices a worker sends.
const (
	MsgIDHeader    = "Nats-Msg-Id"
	ReplyToHeader  = "E2A-Reply-To"
	StartByHeader  = "E2A-Start-By"
	DeadlineHeader = "E2A-Deadline"
	NoticeHeader   = "E2A-Notice"
	WorkerHeader   = "E2A-Worker"
	NoticeTaken    = "taken"
	NoticeWorking  = "working"
)

// noSession is the frame subject's token of a request without a session (frame_messages.NO_SESSION).
const noSession = "_"

var plainSubjectToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// SubjectToken is value as one NATS subject token, as frame_messages.subject_token writes it: the
// value when plain (letters, digits, "-", "_", and not "_" alone), else "~" and its URL-safe base64
// without padding, so that ".", "*", ">" and spaces cannot split or widen a subject.
func SubjectToken(value string) string {
	if value != noSession && plainSubjectToken.MatchString(value) {
		return value
	}
	return "~" + base64.RawURLEncoding.EncodeToString([]byte(value))
}

// AgentToken is the registry's token of an agent id (agent_records.key_token): each byte of its
// UTF-8 in [A-Za-z0-9-] as it is, every other byte "_" and two upper-case hex digits. Registry keys
// and request subjects use it.
func AgentToken(agentID string) string {
	var b strings.Builder
	for _, c := range []byte(agentID) {
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// FrameSubject is where the frames of a request go: <prefix>.<session token or _>.<request token>.
func FrameSubject(prefix string, sessionID *string, requestID string) string {
	session := noSession
	if sessionID != nil {
		session = SubjectToken(*sessionID)
	}
	return prefix + "." + session + "." + SubjectToken(requestID)
}

// AnyWorkerSubject takes the requests that any worker of the agent may run.
func AnyWorkerSubject(prefix, agentID string) string {
	return prefix + "." + AgentToken(agentID) + ".any"
}

// SharedConsumer is the durable pull consumer every worker of the agent takes requests from.
func SharedConsumer(agentID string) string {
	return "e2a-agent-" + AgentToken(agentID)
}

// CancelSubject is where a gateway says that the client cancelled the request.
func CancelSubject(prefix, requestID string) string {
	return prefix + "." + SubjectToken(requestID)
}

// LostFrameMsgID de-duplicates the one agent_unavailable frame written for a request whose worker
// was lost, whoever notices (a gateway, or a worker the request is redelivered to).
func LostFrameMsgID(requestID string) string {
	return requestID + ":lost"
}

// RegistryKey is a worker instance's key in the registry bucket: <agent token>.<instance id>.
func RegistryKey(agentID, instanceID string) string {
	return AgentToken(agentID) + "." + instanceID
}
