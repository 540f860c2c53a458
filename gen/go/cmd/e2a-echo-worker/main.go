// Command e2a-echo-worker is an E2A agent written in Go that joins the agent bus
// (docs/agent-bus.md): it registers its agent in the registry, takes the agent's requests from
// JetStream and answers each by echoing its prompt, word by word, then e2a.complete, as the
// Python echo backend does. See README.md beside this file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"e2agrpc/gen/go/e2abus"
)

// version is the worker's software version in its registry entry.
const version = "0.1.0"

// echoAgent streams the prompt's text back a word at a time (each word with the white space after
// it, so the pieces join back to the text), pausing delay before each.
type echoAgent struct{ delay time.Duration }

var pieces = regexp.MustCompile(`\s+|\S+\s*`)

func (a echoAgent) Turn(ctx context.Context, request *e2abus.Request, emit func(string) error) (map[string]any, error) {
	for _, piece := range pieces.FindAllString(request.Prompt, -1) {
		if a.delay > 0 {
			timer := time.NewTimer(a.delay)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			case <-timer.C:
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := emit(piece); err != nil {
			return nil, err
		}
	}
	return map[string]any{"content": request.Prompt}, nil
}

type options struct {
	urls              string
	agentID           string
	name              string
	description       string
	delay             time.Duration
	grace             time.Duration
	registryBucket    string
	registryTTL       time.Duration
	registryHeartbeat time.Duration
	bus               e2abus.Config
}

func parseOptions(args []string) (*options, error) {
	o := &options{bus: e2abus.NewConfig("")}
	flags := flag.NewFlagSet("e2a-echo-worker", flag.ContinueOnError)
	flags.StringVar(&o.urls, "nats", "nats://127.0.0.1:4222", "NATS server URLs, comma-separated")
	flags.StringVar(&o.agentID, "agent-id", "", "the agent id whose requests this worker takes (required)")
	flags.StringVar(&o.name, "name", "Go echo agent", "the agent's display name in the registry")
	flags.StringVar(&o.description, "description", "Echoes the prompt back, word by word (an E2A worker in Go)", "what the agent does")
	flags.DurationVar(&o.delay, "delay", 0, "pause before each word (to watch streaming, cancel and drain)")
	flags.DurationVar(&o.grace, "grace", 30*time.Second, "on SIGTERM, how long running turns may take to finish")
	flags.StringVar(&o.registryBucket, "registry-bucket", e2abus.DefaultRegistry, "the registry's key-value bucket")
	flags.DurationVar(&o.registryTTL, "registry-ttl", 60*time.Second, "the registry bucket's TTL, when this worker creates it")
	flags.DurationVar(&o.registryHeartbeat, "registry-heartbeat", 15*time.Second, "how often the registry entry is written again")
	flags.StringVar(&o.bus.RequestStream, "request-stream", o.bus.RequestStream, "the JetStream stream of requests")
	flags.StringVar(&o.bus.RequestPrefix, "request-prefix", o.bus.RequestPrefix, "the subject prefix of requests")
	flags.DurationVar(&o.bus.RequestMaxAge, "request-max-age", o.bus.RequestMaxAge, "the request stream's max age, when this worker creates it")
	flags.StringVar(&o.bus.FrameStream, "frame-stream", o.bus.FrameStream, "the JetStream stream of frames")
	flags.StringVar(&o.bus.FramePrefix, "frame-prefix", o.bus.FramePrefix, "the subject prefix of frames")
	flags.StringVar(&o.bus.CancelPrefix, "cancel-prefix", o.bus.CancelPrefix, "the subject prefix of cancels")
	flags.StringVar(&o.bus.TypePrefix, "type-prefix", o.bus.TypePrefix, "the CloudEvents type prefix of frames")
	flags.DurationVar(&o.bus.AckWait, "ack-wait", o.bus.AckWait, "the shared consumer's ack wait, when this worker creates it")
	flags.DurationVar(&o.bus.Progress, "progress", o.bus.Progress, "how often a running turn says it is alive")
	flags.IntVar(&o.bus.MaxTurns, "max-turns", o.bus.MaxTurns, "turns run at once; the worker pulls only with one free")
	flags.IntVar(&o.bus.Replicas, "replicas", o.bus.Replicas, "copies of the streams and the registry bucket this worker creates (3 on a three-node cluster)")
	if err := flags.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case flags.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(flags.Args(), " "))
	case o.agentID == "":
		return nil, errors.New("--agent-id is required")
	case o.registryHeartbeat <= 0 || o.registryHeartbeat > o.registryTTL/2:
		return nil, fmt.Errorf("--registry-heartbeat (%s) must be positive and at most half of --registry-ttl (%s)", o.registryHeartbeat, o.registryTTL)
	case o.bus.Progress <= 0 || o.bus.Progress >= o.bus.AckWait:
		return nil, fmt.Errorf("--progress (%s) must be positive and shorter than --ack-wait (%s)", o.bus.Progress, o.bus.AckWait)
	case o.bus.MaxTurns < 1:
		return nil, fmt.Errorf("--max-turns must be at least 1, got %d", o.bus.MaxTurns)
	case o.bus.Replicas < 1 || o.bus.Replicas > 5:
		return nil, fmt.Errorf("--replicas must be 1 to 5 (JetStream's range), got %d", o.bus.Replicas)
	}
	o.bus.AgentID = o.agentID
	o.bus.Converter = "e2a-echo-worker"
	return o, nil
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	o, err := parseOptions(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2a-echo-worker:", err)
		os.Exit(2)
	}
	if err := run(o, log); err != nil {
		log.Error("the worker stopped", "error", err)
		os.Exit(1)
	}
}

func run(o *options, log *slog.Logger) error {
	signals, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopSignals()
	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(o.urls, nats.Name("e2a-echo-worker "+o.agentID), nats.MaxReconnects(-1),
		nats.ReconnectHandler(func(*nats.Conn) {
			select { // heartbeat at once after a reconnect (docs/agent-registry.md)
			case reconnected <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", o.urls, err)
	}
	defer nc.Close()
	setup, cancelSetup := context.WithTimeout(signals, 30*time.Second)
	defer cancelSetup()
	instanceID := e2abus.NewInstanceID()
	worker, err := e2abus.NewWorker(setup, nc, o.bus, echoAgent{delay: o.delay}, instanceID, log.With("agent_id", o.agentID, "instance_id", instanceID))
	if err != nil {
		return err
	}
	card := e2abus.Card{
		AgentID: o.agentID, Name: o.name, Description: o.description,
		Skills:     []e2abus.Skill{{ID: "echo", Description: "Echoes the prompt back"}},
		InputModes: []string{"text/plain"}, OutputModes: []string{"text/plain"},
		Backend: "go", Version: version,
	}
	registration, err := e2abus.Register(setup, worker.JetStream(), o.registryBucket, o.registryTTL, o.bus.Replicas, card, instanceID)
	if err != nil {
		return err
	}
	heartbeats, stopHeartbeats := context.WithCancel(context.Background())
	defer stopHeartbeats()
	beating := make(chan struct{})
	go func() { registration.Beat(heartbeats, o.registryHeartbeat, reconnected, log); close(beating) }()
	log.Info("taking requests", "agent_id", o.agentID, "instance_id", instanceID, "nats", nc.ConnectedUrlRedacted())
	fmt.Println("ready", instanceID) // one line on stdout: what a supervisor (or a test) waits for

	pulling := make(chan struct{})
	go func() { worker.Pull(signals); close(pulling) }()
	<-signals.Done()
	// Draining: leave the registry first (no heartbeat may write the entry again after), so that
	// gateways stop routing here; then stop pulling and let the running turns finish.
	stopHeartbeats()
	<-beating
	leave, cancelLeave := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLeave()
	if err := registration.Leave(leave); err != nil {
		log.Warn("could not leave the registry (the entry expires with its TTL)", "error", err)
	}
	<-pulling
	log.Info("draining", "grace", o.grace)
	worker.Drain(o.grace)
	return nc.Drain()
}
