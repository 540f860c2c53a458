package e2abus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// registrySchemaVersion is the registry value schema's version (docs/agent-registry.md).
const registrySchemaVersion = 1

// Skill is one skill of an agent's card.
type Skill struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// Card is what a worker says of its agent in the registry: the text fields of its A2A card and the
// kind of agent behind it. It carries no secret.
type Card struct {
	AgentID     string
	Name        string
	Description string
	Skills      []Skill
	InputModes  []string
	OutputModes []string
	Backend     string
	Version     string
}

// RegistryEntry is the JSON value of a registry entry (docs/agent-registry.md, schema version 1).
type RegistryEntry struct {
	SchemaVersion int      `json:"schema_version"`
	AgentID       string   `json:"agent_id"`
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	Skills        []Skill  `json:"skills"`
	InputModes    []string `json:"input_modes"`
	OutputModes   []string `json:"output_modes"`
	Backend       string   `json:"backend"`
	Version       string   `json:"version"`
	InstanceID    string   `json:"instance_id"`
	StartedAt     string   `json:"started_at"`
	HeartbeatAt   string   `json:"heartbeat_at"`
}

// NewInstanceID is a new worker instance's id: 32 lower-case hex digits.
func NewInstanceID() string {
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(id[:])
}

// registryTime is a time as entries carry it: RFC 3339 in UTC, to the millisecond.
func registryTime(at time.Time) string {
	return at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Entry is the card's registry value for the worker instance.
func (c Card) Entry(instanceID string, startedAt, heartbeatAt time.Time) RegistryEntry {
	nonNil := func(values []string) []string {
		if values == nil {
			return []string{}
		}
		return values
	}
	skills := c.Skills
	if skills == nil {
		skills = []Skill{}
	}
	return RegistryEntry{
		SchemaVersion: registrySchemaVersion,
		AgentID:       c.AgentID,
		Name:          c.Name,
		Description:   c.Description,
		Skills:        skills,
		InputModes:    nonNil(c.InputModes),
		OutputModes:   nonNil(c.OutputModes),
		Backend:       c.Backend,
		Version:       c.Version,
		InstanceID:    instanceID,
		StartedAt:     registryTime(startedAt),
		HeartbeatAt:   registryTime(heartbeatAt),
	}
}

// Registration keeps a worker's entry in the registry bucket while it takes requests.
type Registration struct {
	kv         jetstream.KeyValue
	card       Card
	instanceID string
	startedAt  time.Time
	key        string
}

// Register writes the worker's entry in bucket, creating the bucket (history 1, file storage, ttl
// as its max age, replicas copies) when it is missing; a bucket that exists keeps its TTL.
func Register(ctx context.Context, js jetstream.JetStream, bucket string, ttl time.Duration, replicas int, card Card, instanceID string) (*Registration, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: ttl, Storage: jetstream.FileStorage, Replicas: replicas})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, bucket) // another worker created it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("registry bucket %s: %w", bucket, err)
	}
	r := &Registration{kv: kv, card: card, instanceID: instanceID, startedAt: time.Now(), key: RegistryKey(card.AgentID, instanceID)}
	return r, r.Heartbeat(ctx)
}

// Heartbeat writes the entry again with a new heartbeat time.
func (r *Registration) Heartbeat(ctx context.Context) error {
	value, err := json.Marshal(r.card.Entry(r.instanceID, r.startedAt, time.Now()))
	if err != nil {
		return err
	}
	if _, err := r.kv.Put(ctx, r.key, value); err != nil {
		return fmt.Errorf("registry entry %s: %w", r.key, err)
	}
	return nil
}

// Beat heartbeats every interval, and at once on each value of now (a reconnect), until ctx ends,
// logging (not stopping on) a failed write: the next beat tries again, and the entry outlives one
// lost beat (the interval is at most half the TTL).
func (r *Registration) Beat(ctx context.Context, interval time.Duration, now <-chan struct{}, log *slog.Logger) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-now:
		case <-ticker.C:
		}
		if err := r.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			log.Warn("registry heartbeat failed", "error", err)
		}
	}
}

// Leave deletes the entry, so gateways stop routing to the worker.
func (r *Registration) Leave(ctx context.Context) error {
	return r.kv.Delete(ctx, r.key)
}
