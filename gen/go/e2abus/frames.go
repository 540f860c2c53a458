package e2abus

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
	"e2agrpc/gen/go/e2ajson"
)

// Response kinds, statuses and error codes of the frames a worker writes (spec sections 5 and 12;
// the Python home is e2a_grpc.model.enums).
const (
	KindChunk    = "e2a.chunk"
	KindComplete = "e2a.complete"
	KindError    = "e2a.error"

	StatusInProgress = "in_progress"
	StatusSucceeded  = "succeeded"
	StatusFailed     = "failed"

	CodeAgentUnavailable = "agent_unavailable"
	CodeClientCancelled  = "client_cancelled"
	CodeDeadlineExceeded = "deadline_exceeded"
	CodeInvalidRequest   = "invalid_request"
	CodeInternal         = "internal"
	CodeShuttingDown     = "server_shutting_down"
)

// protocolVersion is what a frame says when the request names no protocol version: the schema's
// default of E2AEnvelope.protocol_version (its e2a.v1.json option), as the Python FrameBuilder's.
var protocolVersion = func() string {
	field := (&e2av1.E2AEnvelope{}).ProtoReflect().Descriptor().Fields().ByName("protocol_version")
	return proto.GetExtension(field.Options(), e2av1.E_Json).(*e2av1.JsonField).GetDefaultValue()
}()

// FrameBuilder writes the frames of one request in order: each echoes the request's correlation
// fields (spec 12.4), is numbered 0, 1, 2, ..., has a fresh UUID and an RFC 3339 UTC timestamp, and
// the last is the one final frame. It is the Go counterpart of e2a_grpc.chat.frames.FrameBuilder.
type FrameBuilder struct {
	template *e2av1.E2AResponse
	next     int64
	finished bool
	// Now gives frame timestamps; NewID response ids. Tests replace them.
	Now   func() time.Time
	NewID func() string
}

// NewFrameBuilder starts the frames of the request envelope, whose request id is requestID, for
// an agent whose answers were sourceProtocol ("e2a", "acp", "a2a") and converted by converter.
func NewFrameBuilder(envelope *e2av1.E2AEnvelope, requestID, sourceProtocol, converter string) *FrameBuilder {
	version := envelope.ProtocolVersion
	if version == nil {
		schemaDefault := protocolVersion
		version = &schemaDefault
	}
	template := &e2av1.E2AResponse{
		ProtocolVersion: version,
		RequestId:       &requestID,
		Provenance:      &e2av1.E2AProvenance{SourceProtocol: sourceProtocol, Converter: &converter},
		JsonrpcId:       envelope.JsonrpcId,
		CorrelationId:   envelope.CorrelationId,
		TaskId:          envelope.TaskId,
		ContextId:       envelope.ContextId,
		SessionId:       envelope.SessionId,
		MessageId:       envelope.MessageId,
		IsStream:        envelope.IsStream,
		IdentityOrigin:  e2av1.IdentityOrigin_IDENTITY_ORIGIN_AGENT,
		Channel:         envelope.Channel,
		UserId:          envelope.UserId,
		AgentRef:        envelope.AgentRef,
		SourceAgentId:   envelope.SourceAgentId,
		Method:          envelope.Method,
	}
	return &FrameBuilder{template: template, Now: time.Now, NewID: uuid.NewString}
}

// FrameBuilderAfter goes on from last, a frame another worker stored: the next frames keep its
// fields (its request's correlation fields, an agent task id it adopted) and follow its sequence.
func FrameBuilderAfter(last *e2av1.E2AResponse) *FrameBuilder {
	template := proto.Clone(last).(*e2av1.E2AResponse)
	return &FrameBuilder{template: template, next: last.Sequence + 1, Now: time.Now, NewID: uuid.NewString}
}

// TextChunk is an e2a.chunk frame with a text delta.
func (b *FrameBuilder) TextChunk(text string) (*e2av1.E2AResponse, error) {
	return b.frame(KindChunk, StatusInProgress, false, chunkBody{DeltaKind: "text", Delta: text})
}

// Complete is the final e2a.complete frame with the turn's result.
func (b *FrameBuilder) Complete(result map[string]any) (*e2av1.E2AResponse, error) {
	return b.frame(KindComplete, StatusSucceeded, true, map[string]any{"result": result})
}

// Error is the final e2a.error frame: code, message and details (never nil).
func (b *FrameBuilder) Error(code, message string, details map[string]any) (*e2av1.E2AResponse, error) {
	if details == nil {
		details = map[string]any{}
	}
	return b.frame(KindError, StatusFailed, true, errorBody{Code: code, Message: message, Details: details})
}

// The bodies, their keys in the order the Python FrameBuilder writes them.
type chunkBody struct {
	DeltaKind string `json:"delta_kind"`
	Delta     string `json:"delta"`
}

type errorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func (b *FrameBuilder) frame(kind, status string, final bool, body any) (*e2av1.E2AResponse, error) {
	if b.finished {
		return nil, fmt.Errorf("frame %d (%s): the stream's final frame was written already", b.next, kind)
	}
	text, err := e2ajson.Encode(body)
	if err != nil {
		return nil, fmt.Errorf("frame %d (%s) body: %w", b.next, kind, err)
	}
	frame := proto.Clone(b.template).(*e2av1.E2AResponse)
	id := b.NewID()
	timestamp := b.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	frame.ResponseId = &id
	frame.Sequence = b.next
	frame.IsFinal = final
	frame.Status = status
	frame.ResponseKind = kind
	frame.Timestamp = &timestamp
	frame.Body = text
	b.next++
	b.finished = final
	return frame, nil
}

// Frame is a frame as the NATS message that carries it, as the Python FramePublisher writes it.
type Frame struct {
	Subject string
	Header  map[string][]string
	Data    []byte
}

// FrameMessage writes a frame's NATS message: its CloudEvent in binary mode on its frame subject,
// de-duplicated by its response id (Nats-Msg-Id).
func FrameMessage(ctx context.Context, frame *e2av1.E2AResponse, framePrefix, typePrefix string) (*Frame, error) {
	data, err := e2ajson.MarshalResponse(frame)
	if err != nil {
		return nil, fmt.Errorf("frame %d: %w", frame.Sequence, err)
	}
	e := event.New()
	e.SetID(frame.GetResponseId())
	e.SetSource(EventSource(frame.Channel))
	e.SetType(responseType(typePrefix, frame))
	if err := e.SetData(event.ApplicationJSON, data); err != nil {
		return nil, err
	}
	if frame.Timestamp != nil {
		if at, err := time.Parse(time.RFC3339Nano, *frame.Timestamp); err == nil {
			e.SetTime(at)
		}
	}
	if frame.Method != nil {
		e.SetExtension("a2amethod", *frame.Method)
	}
	e.SetExtension("mcptype", "response")
	e.SetExtension("collaborationid", frame.GetRequestId())
	if frame.Sequence >= -1<<31 && frame.Sequence < 1<<31 {
		e.SetExtension("seq", int32(frame.Sequence))
	}
	header, payload, err := EventHeaders(ctx, &e)
	if err != nil {
		return nil, fmt.Errorf("frame %d: %w", frame.Sequence, err)
	}
	header[MsgIDHeader] = []string{frame.GetResponseId()}
	return &Frame{Subject: FrameSubject(framePrefix, frame.SessionId, frame.GetRequestId()), Header: header, Data: payload}, nil
}

// EventSource is a record's CloudEvent source: /e2a, or /e2a/channels/<channel> (cloudevents.default_source).
func EventSource(channel *string) string {
	if channel == nil {
		return "/e2a"
	}
	return "/e2a/channels/" + quoteAll(*channel)
}

// quoteAll percent-encodes every byte but letters, digits and "_.-~", as Python's quote(s, safe="").
func quoteAll(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("_.-~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// responseType is <prefix>.<method, or else response kind, with "/" as ".">.<resp|stream>
// (cloudevents.response_type).
func responseType(prefix string, frame *e2av1.E2AResponse) string {
	name := frame.ResponseKind
	if frame.Method != nil && *frame.Method != "" {
		name = *frame.Method
	}
	if name == "" {
		name = "none"
	}
	suffix := "resp"
	if frame.IsStream {
		suffix = "stream"
	}
	return prefix + "." + strings.ReplaceAll(name, "/", ".") + "." + suffix
}
