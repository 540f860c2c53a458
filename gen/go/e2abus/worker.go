package e2abus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	e2av1 "e2agrpc/gen/go/e2a/v1"
	"e2agrpc/gen/go/e2ajson"
)

// duplicateWindow is how long JetStream remembers a Nats-Msg-Id (settings.NATS_DUPLICATE_WINDOW_SECONDS).
const duplicateWindow = 120 * time.Second

// pullWait bounds one pull for a request: a stopping worker notices the stop within it, and never
// drops a request the server already handed it (a pull cut short by a cancelled context could).
const pullWait = time.Second

// Request is one request a worker took: its envelope, its request id and its prompt's text.
type Request struct {
	Envelope  *e2av1.E2AEnvelope
	RequestID string
	Prompt    string
}

// Agent answers requests. Turn sends the answer's text with emit, a piece at a time, and returns
// the turn's result (the e2a.complete body's "result"); it returns soon after ctx ends.
type Agent interface {
	Turn(ctx context.Context, request *Request, emit func(text string) error) (map[string]any, error)
}

// Config is a worker's bus settings; NewConfig gives the defaults the Python side uses.
type Config struct {
	AgentID        string
	RequestStream  string
	RequestPrefix  string
	RequestMaxAge  time.Duration
	FrameStream    string
	FramePrefix    string
	CancelPrefix   string
	TypePrefix     string
	Methods        []string
	AckWait        time.Duration
	Progress       time.Duration
	MaxTurns       int
	Replicas       int // of the streams this worker creates (3 on a three-node cluster)
	SourceProtocol string
	Converter      string
}

// NewConfig is the bus's default configuration for a worker of agentID.
func NewConfig(agentID string) Config {
	return Config{
		AgentID:        agentID,
		RequestStream:  DefaultRequestStream,
		RequestPrefix:  DefaultRequestPrefix,
		RequestMaxAge:  10 * time.Minute,
		FrameStream:    DefaultFrameStream,
		FramePrefix:    DefaultFramePrefix,
		CancelPrefix:   DefaultCancelPrefix,
		TypePrefix:     DefaultTypePrefix,
		Methods:        []string{"chat.send", "session/prompt"},
		AckWait:        30 * time.Second,
		Progress:       5 * time.Second,
		MaxTurns:       16,
		Replicas:       1,
		SourceProtocol: "e2a",
		Converter:      "e2abus",
	}
}

// The causes a turn ends early for.
var (
	errCancelled    = errors.New("the client cancelled the request")
	errDeadline     = errors.New("the request's deadline passed")
	errShuttingDown = errors.New("the worker stopped before the turn finished (its drain grace ran out)")
	// errEndedElsewhere: the request got its final frame from whoever took this worker for lost while
	// it was silent (stopped, or cut off); the turn writes nothing more.
	errEndedElsewhere = errors.New("the request was ended as lost while this worker was silent")
)

// Worker takes requests of one agent from the shared work-queue consumer and runs each as a turn
// of its Agent, at most MaxTurns at a time.
type Worker struct {
	cfg        Config
	nc         *nats.Conn
	js         jetstream.JetStream
	agent      Agent
	log        *slog.Logger
	instanceID string
	consumer   jetstream.Consumer
	frames     jetstream.Stream
	slots      chan struct{}
	turns      sync.WaitGroup
	// turnsCtx ends every running turn (cause errShuttingDown) when the drain grace runs out.
	turnsCtx  context.Context
	stopTurns context.CancelCauseFunc
	// running cancels a running turn by its request's cancel subject.
	runningMu sync.Mutex
	running   map[string]context.CancelCauseFunc
}

// NewWorker makes sure the request and frame streams and the agent's shared consumer exist (each
// created when missing, as the gateway would) and returns the worker, not yet pulling.
func NewWorker(ctx context.Context, nc *nats.Conn, cfg Config, agent Agent, instanceID string, log *slog.Logger) (*Worker, error) {
	if cfg.MaxTurns < 1 {
		return nil, fmt.Errorf("max turns must be at least 1, got %d", cfg.MaxTurns)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if _, err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name: cfg.RequestStream, Subjects: []string{cfg.RequestPrefix + ".>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicateWindow, MaxAge: cfg.RequestMaxAge, Replicas: cfg.Replicas,
	}); err != nil {
		return nil, err
	}
	frames, err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name: cfg.FrameStream, Subjects: []string{cfg.FramePrefix + ".>"}, Storage: jetstream.FileStorage,
		Duplicates: duplicateWindow, Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	consumer, err := ensureConsumer(ctx, js, cfg.RequestStream, jetstream.ConsumerConfig{
		Durable: SharedConsumer(cfg.AgentID), FilterSubject: AnyWorkerSubject(cfg.RequestPrefix, cfg.AgentID),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.AckWait, MaxDeliver: -1, MaxAckPending: -1,
	})
	if err != nil {
		return nil, err
	}
	turnsCtx, stopTurns := context.WithCancelCause(context.Background())
	w := &Worker{
		cfg: cfg, nc: nc, js: js, agent: agent, log: log, instanceID: instanceID, consumer: consumer,
		frames: frames, slots: make(chan struct{}, cfg.MaxTurns), turnsCtx: turnsCtx, stopTurns: stopTurns,
		running: map[string]context.CancelCauseFunc{},
	}
	// One subscription for every cancel, made before any request is taken: a cancel that comes right
	// after the taken notice finds its turn (a subscription per request could miss it).
	if _, err := nc.Subscribe(cfg.CancelPrefix+".*", w.onCancel); err != nil {
		return nil, fmt.Errorf("subscribing to %s.*: %w", cfg.CancelPrefix, err)
	}
	return w, nil
}

// onCancel ends the running turn a cancel names, if this worker runs it.
func (w *Worker) onCancel(msg *nats.Msg) {
	w.runningMu.Lock()
	cancel := w.running[msg.Subject]
	w.runningMu.Unlock()
	if cancel != nil {
		cancel(errCancelled)
	}
}

// JetStream is the worker's JetStream context (for its registration).
func (w *Worker) JetStream() jetstream.JetStream { return w.js }

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	stream, err := js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = js.Stream(ctx, cfg.Name) // another process created it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	return stream, nil
}

func ensureConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	consumer, err := js.Consumer(ctx, stream, cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		consumer, err = js.CreateConsumer(ctx, stream, cfg)
		if errors.Is(err, jetstream.ErrConsumerExists) {
			consumer, err = js.Consumer(ctx, stream, cfg.Durable)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s of stream %s: %w", cfg.Durable, stream, err)
	}
	return consumer, nil
}

// Pull takes requests until ctx ends, one at a time and only while a turn slot is free (so the
// requests it cannot run yet stay in the stream for other workers), each run in its own goroutine.
func (w *Worker) Pull(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case w.slots <- struct{}{}:
		}
		msg, err := w.consumer.Next(jetstream.FetchMaxWait(pullWait))
		if err != nil {
			<-w.slots
			if !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
				w.log.Warn("pulling a request failed", "error", err)
				select { // a broken connection: do not spin
				case <-ctx.Done():
				case <-time.After(pullWait):
				}
			}
			continue
		}
		w.turns.Add(1)
		go func() {
			defer func() { <-w.slots; w.turns.Done() }()
			w.handle(msg)
		}()
	}
}

// Drain waits for the running turns for at most grace, then ends those still running (each with a
// final server_shutting_down frame) and waits for them to finish.
func (w *Worker) Drain(grace time.Duration) {
	done := make(chan struct{})
	go func() { w.turns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		w.log.Warn("drain grace ran out: ending the running turns", "grace", grace)
		w.stopTurns(errShuttingDown)
		<-done
	}
}

// handle runs one request from taking it to acking it (docs/agent-bus.md, "What a worker does").
func (w *Worker) handle(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error("a request message without JetStream metadata", "error", err)
		return
	}
	log := w.log.With("subject", msg.Subject(), "stream_seq", meta.Sequence.Stream, "delivery", meta.NumDelivered)
	request, limits, err := readRequest(msg.Headers(), msg.Data())
	if err != nil {
		log.Warn("a message that is no request of the bus: terminated, unrun", "error", err)
		w.settle(msg.Term, log)
		return
	}
	log = log.With("request_id", request.RequestID)
	if meta.NumDelivered > 1 {
		// Another worker took it and never acked: at most once, so it is not run again.
		if err := w.answerLost(request); err != nil {
			log.Warn("cannot answer a redelivered request agent_unavailable now (left for its next delivery)", "error", err)
			return
		}
		log.Info("a redelivered request was answered agent_unavailable, unrun (at most once)")
		w.settle(msg.Term, log)
		return
	}
	if time.Now().After(limits.startBy) {
		log.Info("a request taken after its Start-By was dropped unrun (the gateway gave up)", "start_by", limits.startBy)
		w.settle(msg.Ack, log)
		return
	}
	if w.run(msg, request, limits, log) {
		w.settle(msg.Ack, log)
	} else {
		// Not stored: delivered again, the request gets its agent_unavailable frame (never a second run).
		log.Error("the request's final frame was not stored; released for its lost-request answer")
		w.settle(msg.Nak, log)
	}
}

// settle acks, naks or terminates the request message, logging a failure (JetStream then delivers
// it again, and its next taker finds its final frame stored, or answers it agent_unavailable).
func (w *Worker) settle(ack func() error, log *slog.Logger) {
	if err := ack(); err != nil {
		log.Warn("settling a request message failed", "error", err)
	}
}

// requestLimits are the bus headers that bound a request in time, and where its notices go.
type requestLimits struct {
	startBy  time.Time
	deadline time.Time // zero: none
	replyTo  string
}

// readRequest is the request a message carries, or an error naming what makes it no request of the
// bus: not a CloudEvent in binary mode, an event that carries a response, an envelope that does not
// read or has no request_id, a required header missing (E2A-Reply-To, E2A-Start-By) or a time that is
// not RFC 3339.
func readRequest(header nats.Header, data []byte) (*Request, requestLimits, error) {
	var limits requestLimits
	event, err := EventOfMessage(context.Background(), header, data)
	if err != nil {
		return nil, limits, err
	}
	if kind, ok := event.Extensions()["mcptype"]; ok && kind != "request" {
		return nil, limits, fmt.Errorf("header ce-mcptype: the bus carries requests, this event carries a %v", kind)
	}
	envelope, err := e2ajson.UnmarshalEnvelope(event.Data())
	if err != nil {
		return nil, limits, fmt.Errorf("the request's envelope: %w", err)
	}
	if envelope.GetRequestId() == "" {
		return nil, limits, errors.New("data.request_id: a request on the bus needs a request_id")
	}
	if limits.replyTo = header.Get(ReplyToHeader); limits.replyTo == "" {
		return nil, limits, fmt.Errorf("header %s: a request on the bus needs the gateway's inbox", ReplyToHeader)
	}
	if header.Get(StartByHeader) == "" {
		return nil, limits, fmt.Errorf("header %s: a request on the bus needs the time it must start by", StartByHeader)
	}
	if limits.startBy, err = headerTime(header, StartByHeader); err != nil {
		return nil, limits, err
	}
	if limits.deadline, err = headerTime(header, DeadlineHeader); err != nil {
		return nil, limits, err
	}
	return &Request{Envelope: envelope, RequestID: envelope.GetRequestId()}, limits, nil
}

func headerTime(header nats.Header, name string) (time.Time, error) {
	text := header.Get(name)
	if text == "" {
		return time.Time{}, nil
	}
	at, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, fmt.Errorf("header %s: %q is not an RFC 3339 time", name, text)
	}
	return at, nil
}

// checkRequest is the request's prompt text, or a *RequestError naming the field Chat would refuse
// it for: a method Chat does not take, a prompt ACP would not send, or no prompt at all.
func (w *Worker) checkRequest(envelope *e2av1.E2AEnvelope) (string, error) {
	if !slices.Contains(w.cfg.Methods, envelope.GetMethod()) {
		return "", &RequestError{Field: "method", Message: fmt.Sprintf("Chat takes one of %s, got %q", strings.Join(w.cfg.Methods, ", "), envelope.GetMethod())}
	}
	return PromptText(envelope.Params)
}

func (w *Worker) frameBuilder(request *Request) *FrameBuilder {
	return NewFrameBuilder(request.Envelope, request.RequestID, w.cfg.SourceProtocol, w.cfg.Converter)
}

// publish stores a frame in the frame stream, waiting for JetStream's ack; its Nats-Msg-Id is its
// response id.
func (w *Worker) publish(frame *e2av1.E2AResponse, options ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.AckWait)
	defer cancel()
	message, err := FrameMessage(ctx, frame, w.cfg.FramePrefix, w.cfg.TypePrefix)
	if err != nil {
		return nil, err
	}
	return w.js.PublishMsg(ctx, &nats.Msg{Subject: message.Subject, Header: message.Header, Data: message.Data}, options...)
}

// isWrongLastSequence says whether JetStream refused a publish because its expected last subject
// sequence is not the subject's last message (10071; 10164 from a replicated stream).
func isWrongLastSequence(err error) bool {
	var refused *jetstream.APIError
	return errors.As(err, &refused) && (refused.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		refused.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// turnFrames stores a turn's frames in order, each only while the turn's previous frame is still the
// last on the request's frame subject (Nats-Expected-Last-Subject-Sequence; 0 for the first: none):
// a worker that was stopped or cut off long enough for its gateway to end the request as lost gets
// errEndedElsewhere instead of storing a frame after the lost one (docs/agent-bus.md). Each publish
// waits for its ack anyway, so the check costs no round trip.
type turnFrames struct {
	w    *Worker
	last uint64
}

func (t *turnFrames) publish(frame *e2av1.E2AResponse) error {
	ack, err := t.w.publish(frame, jetstream.WithExpectLastSequencePerSubject(t.last))
	if isWrongLastSequence(err) {
		return errEndedElsewhere
	}
	if err != nil {
		return err
	}
	t.last = ack.Sequence
	return nil
}

// answerLost writes the one agent_unavailable final frame of a request whose first taker was lost
// (docs/agent-bus.md, "Semantics: at most once"), unless its frame subject already ends with a final
// frame: one after the last frame stored, keeping that frame's fields, or the request's first frame.
// It is stored only while that frame is still the subject's last (Nats-Expected-Last-Subject-Sequence):
// a frame stored meanwhile (the first taker was only silent, or the gateway wrote the lost frame
// first) leaves nothing to write.
func (w *Worker) answerLost(request *Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.AckWait)
	defer cancel()
	builder := w.frameBuilder(request)
	subject := FrameSubject(w.cfg.FramePrefix, request.Envelope.SessionId, request.RequestID)
	var lastSequence uint64 // none stored
	last, err := w.frames.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return fmt.Errorf("reading the last frame on %s: %w", subject, err)
	default:
		frame, err := e2ajson.UnmarshalResponse(last.Data)
		if err != nil {
			return fmt.Errorf("the last frame on %s: %w", subject, err)
		}
		if frame.IsFinal {
			return nil
		}
		builder = FrameBuilderAfter(frame)
		lastSequence = last.Sequence
	}
	lostID := LostFrameMsgID(request.RequestID)
	builder.NewID = func() string { return lostID }
	frame, err := builder.Error(CodeAgentUnavailable, lostMessage, map[string]any{"noticed_by": "worker"})
	if err != nil {
		return err
	}
	_, err = w.publish(frame, jetstream.WithExpectLastSequencePerSubject(lastSequence))
	if isWrongLastSequence(err) {
		return nil
	}
	return err
}

// lostMessage is the message of the agent_unavailable frame of a lost request (agent_requests.lost_final_frame's).
const lostMessage = "the agent worker running this request was lost before it ended; it was not run again"

// run sends the taken notice and runs the request's turn, its frames to the frame stream, until its
// one final frame is stored (true) or a frame could not be stored (false).
func (w *Worker) run(msg jetstream.Msg, request *Request, limits requestLimits, log *slog.Logger) bool {
	ctx, cancel := context.WithCancelCause(w.turnsCtx)
	defer cancel(nil)
	if !limits.deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, limits.deadline, errDeadline)
		defer stop()
	}
	cancelSubject := CancelSubject(w.cfg.CancelPrefix, request.RequestID)
	w.runningMu.Lock()
	w.running[cancelSubject] = cancel
	w.runningMu.Unlock()
	defer func() {
		w.runningMu.Lock()
		delete(w.running, cancelSubject)
		w.runningMu.Unlock()
	}()
	w.notice(limits.replyTo, NoticeTaken, log)
	progressDone := make(chan struct{})
	defer close(progressDone)
	go w.progress(msg, limits.replyTo, progressDone, log)

	builder := w.frameBuilder(request)
	frames := &turnFrames{w: w}
	var final *e2av1.E2AResponse
	var err error
	var refusal *RequestError
	if request.Prompt, err = w.checkRequest(request.Envelope); errors.As(err, &refusal) {
		final, err = builder.Error(CodeInvalidRequest, refusal.Error(), map[string]any{"field": refusal.Field})
	} else if err == nil {
		final, err = w.turn(ctx, request, builder, frames, limits, log)
	}
	if err == nil {
		err = frames.publish(final)
	}
	if errors.Is(err, errEndedElsewhere) {
		// Its final frame is the lost one: the request is done.
		log.Warn("the request ended while this worker was silent (taken for lost): its turn stopped, writing nothing more")
		return true
	}
	if err != nil {
		log.Error("could not store the request's final frame", "error", err)
		return false
	}
	return true
}

// turn runs the agent's turn and returns its final frame: e2a.complete, or the e2a.error of what
// ended it early (cancel, deadline, the drain's end, the agent's failure); errEndedElsewhere when a
// frame of it was refused because the request had ended as lost meanwhile (no final frame then).
func (w *Worker) turn(ctx context.Context, request *Request, builder *FrameBuilder, frames *turnFrames, limits requestLimits, log *slog.Logger) (*e2av1.E2AResponse, error) {
	emit := func(text string) error {
		frame, err := builder.TextChunk(text)
		if err == nil {
			err = frames.publish(frame)
		}
		return err
	}
	result, err := w.agent.Turn(ctx, request, emit)
	if errors.Is(err, errEndedElsewhere) {
		return nil, err
	}
	switch cause := context.Cause(ctx); {
	case cause == errCancelled:
		return builder.Error(CodeClientCancelled, "the client cancelled the request", nil)
	case cause == errDeadline:
		return builder.Error(CodeDeadlineExceeded, "the request's deadline passed before the turn finished",
			map[string]any{"deadline": limits.deadline.UTC().Format(time.RFC3339Nano)})
	case cause == errShuttingDown:
		return builder.Error(CodeShuttingDown, errShuttingDown.Error(), nil)
	case err != nil:
		log.Error("the agent's turn failed", "error", err)
		return builder.Error(CodeInternal, "the agent failed: "+err.Error(), nil)
	}
	return builder.Complete(result)
}

// progress says the turn is alive every Progress interval until done: a working notice to the
// gateway and an in-progress ack to JetStream (so a turn longer than AckWait is not redelivered).
func (w *Worker) progress(msg jetstream.Msg, replyTo string, done <-chan struct{}, log *slog.Logger) {
	ticker := time.NewTicker(w.cfg.Progress)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
			w.notice(replyTo, NoticeWorking, log)
			if err := msg.InProgress(); err != nil {
				log.Warn("an in-progress ack failed", "error", err)
			}
		}
	}
}

// notice sends a notice (no payload) to the gateway's inbox of the request, if it gave one.
func (w *Worker) notice(replyTo, kind string, log *slog.Logger) {
	if replyTo == "" {
		return
	}
	header := nats.Header{}
	header.Set(NoticeHeader, kind)
	header.Set(WorkerHeader, w.instanceID)
	if err := w.nc.PublishMsg(&nats.Msg{Subject: replyTo, Header: header}); err != nil {
		log.Warn("a notice could not be sent", "notice", kind, "error", err)
	}
}
