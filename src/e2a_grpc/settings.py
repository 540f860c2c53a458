"""The one source of the settings' defaults and environment variables (``E2A_GRPC_*``).

Values are taken, highest first, from the keyword arguments (the command line's options), the
environment, then the defaults below; an empty environment variable counts as unset.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import Field, PrivateAttr, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from e2a_grpc.address import DEFAULT_PORT, ServerAddress, parse_server_address
from e2a_grpc.routing import (
    AGENT_ID_MAX_CHARS,
    AGENT_ID_PATTERN,
    AgentRoute,
    RouteKind,
    RoutingTable,
    routing_table,
    skill_entries,
)

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ENV_PREFIX = "E2A_GRPC_"
_SETTINGS_CONFIG = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True)
_DEFAULT_HOST = "127.0.0.1"  # the server's bind address and the client's default target
_DEFAULT_PORT = DEFAULT_PORT  # also the port an address without one names
#: Where the A2A server serves its agent card (A2A's well-known path) and its HTTP+JSON transport.
A2A_CARD_PATH = "/.well-known/agent-card.json"
A2A_REST_PATH = "/rest"
#: A2A's protocol bindings as agent cards name them (the SDK's ``TransportProtocol`` values) that the a2a
#: backend calls an agent with. Not HTTP+JSON: a2a-sdk 1.3's REST client reports an agent's failure
#: (an error event without ErrorInfo) as a transport failure, which would map to a2a_unavailable.
A2A_GRPC_BINDING = "GRPC"
A2A_JSONRPC_BINDING = "JSONRPC"
A2A_CLIENT_BINDINGS = (A2A_GRPC_BINDING, A2A_JSONRPC_BINDING)
#: The a2a backend's transports by default: gRPC where the agent offers it (its C core does HTTP/2 and
#: protobuf, which costs this server less CPU per call than JSON-RPC: BENCHMARKS.md), else JSON-RPC.
A2A_DEFAULT_TRANSPORTS = (A2A_GRPC_BINDING, A2A_JSONRPC_BINDING)
#: The A2A HTTP port's probes: alive while the process's event loop answers; ready while the server can
#: take work (README "Readiness and liveness").
LIVENESS_PATH = "/livez"
READINESS_PATH = "/readyz"


class BackendName(StrEnum):
    """The Chat backends a server can run."""

    ECHO = "echo"
    ACP = "acp"
    A2A = "a2a"


class PermissionAnswer(StrEnum):
    """An answer the acp backend gives an agent's ``session/request_permission`` itself: the first of
    its options of an allowing (or rejecting) kind."""

    DENY = "deny"
    ALLOW = "allow"


class PermissionPolicy(StrEnum):
    """How the acp backend answers an agent's ``session/request_permission``: it asks the client (the
    turn ends with an ``e2a.input_required`` question), or answers itself."""

    ASK = "ask"
    DENY = PermissionAnswer.DENY.value
    ALLOW = PermissionAnswer.ALLOW.value


class LogFormat(StrEnum):
    """How ``e2a-grpc`` writes its log lines."""

    TEXT = "text"
    JSON = "json"


class EventLoop(StrEnum):
    """Which asyncio event loop the server runs on."""

    AUTO = "auto"
    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"


def env_var(field_name: str) -> str:
    """The environment variable that sets a settings field."""
    return ENV_PREFIX + field_name.upper()


# --- CloudEvents and the NATS JetStream broker path (README "CloudEvents"): each field is declared
# once here and used by every settings class that has it.
_NATS_SUBJECT_PREFIX = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
_NATS_STREAM_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


def _cloudevents_type_prefix() -> Any:
    return Field(
        default="io.e2a",
        min_length=1,
        description="CloudEvents: the type prefix, as in <prefix>.<method>.req (EventMesh's style: "
        "org.apache.eventmesh.a2a)",
    )


def _cloudevents_source() -> Any:
    return Field(
        default=None,
        min_length=1,
        description="CloudEvents: the source attribute of every event; unset: /e2a/channels/<the record's channel>",
    )


def _nats_stream() -> Any:
    return Field(
        default="E2A_FRAMES",
        pattern=_NATS_STREAM_NAME.pattern,
        description="NATS: the JetStream stream of the frames (created if missing, file storage)",
    )


def _nats_subject_prefix() -> Any:
    return Field(
        default="e2a.frames",
        pattern=_NATS_SUBJECT_PREFIX.pattern,
        description="NATS: frames go to <prefix>.<session or _>.<request_id>; the stream takes <prefix>.>",
    )


#: JetStream's limit on a stream's replicas.
_NATS_MAX_REPLICAS = 5


def _nats_replicas() -> Any:
    return Field(
        default=1,
        ge=1,
        le=_NATS_MAX_REPLICAS,
        description="NATS: replicas of the JetStream streams and buckets this process creates (the frames' "
        "stream, the agent registry's bucket): 1 for a single server, 3 for a cluster, so that they outlive the "
        "loss of a node; an existing stream or bucket keeps its own",
    )


_NATS_BUCKET_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


def _registry_bucket() -> Any:
    return Field(
        default="E2A_AGENTS",
        pattern=_NATS_BUCKET_NAME.pattern,
        description="agent registry: the JetStream key-value bucket of the entries (created if missing, with "
        "--registry-ttl-seconds as its TTL)",
    )


def _sessions_bucket() -> Any:
    return Field(
        default="E2A_SESSIONS",
        pattern=_NATS_BUCKET_NAME.pattern,
        description="session ownership: the JetStream key-value bucket naming the worker that holds each session "
        "of a bus agent (created if missing, with --registry-ttl-seconds as its TTL)",
    )


#: The NATS server a subscriber reads from when none is given.
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
#: How long JetStream remembers message ids for de-duplication in the stream a server creates (its
#: default): a frame published again within it is stored once.
NATS_DUPLICATE_WINDOW_SECONDS = 120.0


@dataclass(frozen=True)
class AgentCardText:
    """What an agent's card (A2A) and registry entry say of it."""

    name: str
    description: str
    #: (id, description) pairs.
    skills: tuple[tuple[str, str], ...]


class ServerSettings(BaseSettings):
    """How to run the server. ``token`` is a secret: it is never logged (nor shown by ``repr``)."""

    model_config = _SETTINGS_CONFIG

    host: str = Field(default=_DEFAULT_HOST, description="address to bind")
    port: int = Field(default=_DEFAULT_PORT, ge=0, le=65535, description="port; 0 picks a free one")
    max_message_bytes: int = Field(
        default=4 * 1024 * 1024,
        gt=0,
        description="largest request or reply; bigger ones get RESOURCE_EXHAUSTED (an A2A HTTP request: HTTP 413)",
    )
    grace_seconds: float = Field(
        default=10.0,
        ge=0,
        description="on SIGTERM/SIGINT, how long in-flight calls may finish (the lame-duck period included); then "
        "they are cancelled, and the process exits within 1 s",
    )
    lame_duck_seconds: float = Field(
        default=0.0,
        ge=0,
        description="on SIGTERM/SIGINT, how long to go on taking calls while health already says NOT_SERVING (a "
        "load balancer's time to notice), before new calls are refused with UNAVAILABLE; part of --grace-seconds",
    )
    tls_cert: Path | None = Field(default=None, description="PEM certificate; with --tls-key, serve TLS")
    tls_key: Path | None = Field(default=None, description="PEM private key; with --tls-cert, serve TLS")
    token_file: Path | None = Field(
        default=None,
        description="require 'authorization: Bearer <token>' with the token in this file (it wins over "
        f"{env_var('token')}); health checks stay open",
    )
    token: SecretStr | None = Field(
        default=None, description="the bearer token itself, when there is no token file; default: no auth"
    )
    backend: BackendName = Field(
        default=BackendName.ECHO,
        description="agent backend of the Chat RPC; echo is a deterministic demo/test backend",
    )
    echo_delay_seconds: float = Field(
        default=0.0, ge=0, description="echo backend: pause before each word (demos and tests)"
    )
    chat_max_prompt_bytes: int = Field(
        default=1024 * 1024,
        gt=0,
        description="Chat: largest prompt, in bytes of its content blocks as an ACP agent is sent them (compact "
        "JSON; a text prompt is one text block); a bigger one gets a single e2a.error frame prompt_too_large and "
        "reaches no backend",
    )
    chat_max_frames: int = Field(
        default=100_000,
        ge=1,
        description="Chat: most frames of one stream, the final one included; the backend is stopped and the "
        "last frame is e2a.error stream_frame_limit",
    )
    chat_max_stream_seconds: float = Field(
        default=600.0,
        gt=0,
        description="Chat: longest a stream may run; the backend is then stopped and the stream ends with "
        "e2a.error stream_time_limit (a client that stopped reading gets RESOURCE_EXHAUSTED soon after)",
    )
    chat_coalesce_max_bytes: int = Field(
        default=16 * 1024,
        ge=0,
        description="Chat: text (or reasoning) deltas an agent sent while a frame was being written to a slow "
        "client go out as one e2a.chunk frame whose delta has at most this many UTF-8 bytes; 0: one frame per delta",
    )
    log_frames: bool = Field(
        default=False, description="log one JSON line per Chat frame (spec 12.7; no bodies, no secrets)"
    )
    log_format: LogFormat = Field(
        default=LogFormat.TEXT,
        description="log lines as text, or as one JSON object per line (time, level, logger, message; request_id, "
        "method and status on call logs)",
    )
    metrics_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="serve Prometheus metrics at http://HOST:PORT/metrics (HOST: --host; 0 picks a free port); "
        "default: no metrics",
    )
    tracing: bool = Field(
        default=False,
        description="OpenTelemetry tracing (needs the 'tracing' extra): a span per RPC, in the caller's W3C trace "
        "context, and one per Chat backend turn; exporter and endpoint from the OTEL_* environment variables "
        "(OTEL_TRACES_EXPORTER, default otlp)",
    )
    acp_command: str = Field(
        default="",
        description="acp backend: the ACP agent to run, as a shell-style command line, e.g. 'python agent.py' "
        "(needed with --backend acp)",
    )
    acp_cwd: Path | None = Field(
        default=None,
        description="acp backend: session cwd when a request gives no params.workspace_dir or params.cwd; "
        "unset: the server's cwd",
    )
    acp_permission_policy: PermissionPolicy = Field(
        default=PermissionPolicy.ASK,
        description="acp backend: how the agent's session/request_permission is answered: ask the client (the "
        "turn ends with an e2a.input_required question, answered by a call with its task_id), or allow / deny",
    )
    acp_permission_timeout_seconds: float = Field(
        default=300.0,
        gt=0,
        description="acp backend: how long a question (--acp-permission-policy ask) waits for the client's answer; "
        "then --acp-permission-timeout-policy answers it and the turn goes on unattended",
    )
    acp_permission_timeout_policy: PermissionAnswer = Field(
        default=PermissionAnswer.DENY,
        description="acp backend: the answer to a question nobody answered in time, and to questions that "
        "cannot reach a client (calls without session_id)",
    )
    acp_max_sessions: int = Field(
        default=16,
        ge=1,
        description="acp backend: agent processes kept for requests with a session_id; the least recently used "
        "idle one is closed to make room",
    )
    a2a_url: str | None = Field(
        default=None,
        description="a2a backend: base URL of the remote A2A agent, where its agent card is served "
        "(needed with --backend a2a)",
    )
    a2a_timeout_seconds: float = Field(
        default=300.0,
        gt=0,
        description="a2a backend: longest silence on the agent's stream, and the connect timeout (HTTP transports; "
        "over gRPC a connection refused fails at once and a stream is bounded by --chat-max-stream-seconds)",
    )
    a2a_transports: str = Field(
        default=",".join(A2A_DEFAULT_TRANSPORTS),
        description="a2a backend: the A2A transports to call the agent with, most preferred first, comma-separated "
        f"({', '.join(A2A_CLIENT_BINDINGS)}); the first one the agent card offers is used",
    )
    cloudevents_type_prefix: str = _cloudevents_type_prefix()
    cloudevents_source: str | None = _cloudevents_source()
    publish_nats: str | None = Field(
        default=None,
        description="publish every Chat frame as a CloudEvent to this NATS server's JetStream, e.g. "
        f"{DEFAULT_NATS_URL} (a cluster: its nodes' URLs, comma-separated); default: no publishing",
    )
    nats_stream: str = _nats_stream()
    nats_subject_prefix: str = _nats_subject_prefix()
    nats_replicas: int = _nats_replicas()
    nats_publish_queue: int = Field(
        default=10_000,
        ge=1,
        description="--publish-nats: frames waiting for the broker; when full (the broker is down that long), "
        "Chat streams wait for room rather than lose frames",
    )
    nats_publish_window: int = Field(
        default=256,
        ge=1,
        le=65_536,
        description="--publish-nats: frames published and not yet acknowledged by JetStream, at most; the "
        "publisher waits for acks beyond that",
    )
    nats_ack_timeout_seconds: float = Field(
        default=2.0,
        ge=0.1,
        lt=NATS_DUPLICATE_WINDOW_SECONDS,
        description="--publish-nats: how long a frame waits for JetStream's ack before it is published again "
        "(same Nats-Msg-Id; under the stream's duplicate window, so that it is stored once)",
    )
    nats_publish_linger_seconds: float = Field(
        default=0.005,
        ge=0,
        le=1.0,
        description="--publish-nats: while frames await JetStream's ack, how long the next ones may gather (or "
        "until those acks came) before they are sent together (one socket write and one read of acks for them "
        "all); a frame with none in flight is sent at once; 0: send each at once",
    )
    agent_id: str = Field(
        default="default",
        min_length=1,
        max_length=AGENT_ID_MAX_CHARS,
        pattern=AGENT_ID_PATTERN,
        description="without a routing table: the id of the agent this server serves (every agent_id reaches it) "
        "and its key in the agent registry",
    )
    agents: Path | None = Field(
        default=None,
        description="the agent routing table: a TOML file of [agents.ID] entries with a target (local:echo, "
        "local:acp:<command>, local:a2a:<url>, nats, grpc(s)://host:port); a request's agent_id picks its agent, "
        "an unknown one gets NOT_FOUND (README 'Routing by agent')",
    )
    # NoDecode: pydantic-settings would read the environment variable as JSON, and fail with a traceback.
    agent: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="an entry of the routing table, ID=TARGET (repeat it for more; over the --agents file's "
        "entry of the same id; in the environment one entry per line)",
    )
    default_agent: str | None = Field(
        default=None,
        description="with a routing table: the agent of a request without agent_id; unset: the file's "
        "default_agent, else the first agent",
    )
    registry_nats: str | None = Field(
        default=None,
        description="register the agent in the agent registry on this NATS server's JetStream (a cluster: its "
        "nodes' URLs, comma-separated), refresh the entry every --registry-heartbeat-seconds and delete it on a "
        "clean stop; default: not registered",
    )
    registry_bucket: str = _registry_bucket()
    sessions_bucket: str = _sessions_bucket()
    registry_ttl_seconds: float = Field(
        default=60.0,
        ge=1.0,
        description="agent registry: how long an entry lives without a heartbeat (the bucket's TTL, set when this "
        "server creates the bucket); a killed server's entry is gone this long after its last heartbeat",
    )
    registry_heartbeat_seconds: float = Field(
        default=15.0,
        gt=0,
        description="agent registry: how often the entry is written again; at most half of --registry-ttl-seconds, "
        "so that one lost heartbeat does not expire it",
    )
    bus_nats: str | None = Field(
        default=None,
        description="the agent bus: the NATS server (a cluster: its nodes' URLs, comma-separated) whose JetStream "
        "carries requests to agent workers (e2a-grpc agent) and their frames back (docs/agent-bus.md); needed by "
        "nats routes and by e2a-grpc agent (--nats)",
    )
    bus_requests_stream: str = Field(
        default="E2A_REQUESTS",
        pattern=_NATS_STREAM_NAME.pattern,
        description="agent bus: the JetStream work-queue stream of the requests (created if missing, file storage)",
    )
    bus_requests_subject_prefix: str = Field(
        default="e2a.requests",
        pattern=_NATS_SUBJECT_PREFIX.pattern,
        description="agent bus: requests go to <prefix>.<agent token>.any (any worker) or "
        "<prefix>.<agent token>.worker.<instance id> (one worker); the stream takes <prefix>.>",
    )
    bus_cancel_subject_prefix: str = Field(
        default="e2a.cancel",
        pattern=_NATS_SUBJECT_PREFIX.pattern,
        description="agent bus: a gateway cancels a request on <prefix>.<request token>, and a task waiting for its "
        "client on <prefix>.task.<agent token>.<task token> (core NATS)",
    )
    bus_task_cancel_seconds: float = Field(
        default=3.0,
        gt=0,
        description="agent bus: how long a gateway waits for the worker holding a waiting task to say it cancelled "
        "it (an ACP agent gets 1 s to answer session/cancel); no reply by then: no worker holds the task",
    )
    bus_requests_max_age_seconds: float = Field(
        default=600.0,
        ge=1.0,
        description="agent bus: how long the requests' stream keeps a request no worker took (the stream's "
        "max_age, set when it is created)",
    )
    bus_start_by_seconds: float = Field(
        default=5.0,
        gt=0,
        description="agent bus: how long a request waits for a live worker to take it; past that the Chat call "
        "gets UNAVAILABLE and a worker that takes it later drops it unrun",
    )
    bus_ack_wait_seconds: float = Field(
        default=30.0,
        ge=1.0,
        description="agent bus: the work-queue consumer's ack wait: a request taken and neither acked nor marked "
        "in progress for this long is delivered again (and then answered agent_unavailable, never run twice)",
    )
    bus_progress_seconds: float = Field(
        default=5.0,
        gt=0,
        description="agent bus: how often a worker says a running request is alive (a 'working' notice and an "
        "in-progress ack); a gateway that hears nothing for 3 of these after 'taken' writes the request's "
        "agent_unavailable final frame; at most a third of --bus-ack-wait-seconds",
    )
    a2a_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="also serve the Chat backend as an A2A agent on HOST:PORT (0 picks a free port): the agent card "
        f"at {A2A_CARD_PATH}, JSON-RPC at /, HTTP+JSON at {A2A_REST_PATH} (needs the 'a2a-server' extra); "
        "default: no A2A server",
    )
    a2a_grpc_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="with --a2a-port: also serve the A2A gRPC transport (a2a.v1.A2AService) on HOST:PORT",
    )
    a2a_agent_name: str = Field(default="e2a-grpc", min_length=1, description="A2A server: the agent card's name")
    a2a_agent_description: str = Field(
        default="An agent served through e2a-grpc", description="A2A server: the agent card's description"
    )
    a2a_skills: str = Field(
        default="chat: Chat with the agent",
        description="A2A server: the agent card's skills, 'id: description' entries separated by ';'",
    )
    a2a_input_modes: str = Field(
        default="text/plain,application/json",
        description="A2A server: media types of the message parts it takes, comma-separated; a message with another "
        "part gets content_type_not_supported",
    )
    a2a_output_modes: str = Field(
        default="text/plain,application/json",
        description="A2A server: media types of its answers, comma-separated; a request whose acceptedOutputModes "
        "names none of them gets content_type_not_supported",
    )
    a2a_card_max_age_seconds: int = Field(
        default=300,
        ge=0,
        description="A2A server: how long clients may cache the agent card (its Cache-Control max-age); it "
        "changes only on a restart, and a client revalidates with its ETag or Last-Modified",
    )
    a2a_max_running_tasks: int = Field(
        default=64,
        ge=1,
        description="A2A server: most backend turns running at once; a send past it gets a retryable error "
        "(reason capacity_exhausted, with the limit)",
    )
    a2a_max_connections: int = Field(
        default=512,
        ge=1,
        description="A2A server: most HTTP connections open at once (nginx's worker_connections default); a "
        "connection past it gets HTTP 503 and is closed at once, so slow or idle clients cannot use up the "
        "process's file descriptors",
    )
    a2a_header_timeout_seconds: float = Field(
        default=20.0,
        gt=0,
        description="A2A server: how long a connection may take to send a request's headers (from the connection, "
        "or the first byte of a next request) before it gets HTTP 408 and is closed",
    )
    a2a_body_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="A2A server: how long a request's whole body may take to arrive, from its headers, before the "
        "request gets HTTP 408 (reason request_body_timeout) and the connection is closed",
    )
    a2a_sqlite_path: Path | None = Field(
        default=None,
        description="A2A server: keep tasks in this SQLite file (they survive a restart); default: in memory",
    )
    a2a_postgres_url: str | None = Field(
        default=None,
        description="A2A server: keep tasks and their event streams in PostgreSQL, shared by every instance given "
        "the same URL (postgresql+asyncpg://USER@HOST:PORT/DB; put a password in the environment, not here)",
    )
    a2a_store_probe_interval_seconds: float = Field(
        default=5.0,
        gt=0,
        description="A2A server with --a2a-sqlite-path or --a2a-postgres-url: how often readiness checks the "
        "database (a new connection and SELECT 1); a call that loses its connection has it checked at once",
    )
    a2a_store_probe_timeout_seconds: float = Field(
        default=2.0,
        gt=0,
        description="A2A server: how long that check may take; a database that has not answered by then counts "
        "as unreachable (health NOT_SERVING for the A2A service and the server, /readyz 503)",
    )
    a2a_task_ttl_seconds: float = Field(
        default=3600.0,
        ge=0,
        description="A2A server: delete tasks this long after they ended (completed, failed, canceled, rejected); "
        "0 keeps them",
    )
    a2a_lease_seconds: float = Field(
        default=30.0,
        gt=0,
        description="A2A server with a database task store: an instance that has not renewed its lease for this "
        "long is gone, and another instance marks its unfinished tasks failed",
    )
    a2a_sweep_interval_seconds: float = Field(
        default=10.0,
        gt=0,
        description="A2A server with a database task store: how often an instance renews its lease and marks "
        "failed the tasks left unfinished by a lost turn or a gone instance (at most half the lease)",
    )
    a2a_push_notifications: bool = Field(
        default=False,
        description="A2A server: offer push notifications (the card's capabilities.pushNotifications): POST each "
        "task update to the webhooks clients register; their configs are kept with the tasks",
    )
    a2a_push_allowed_networks: str = Field(
        default="",
        description="A2A server: networks (CIDRs, comma-separated, e.g. 10.1.2.0/24,::1/128) webhooks may target "
        "besides public addresses; unset, a webhook on a loopback, private, link-local or other non-public "
        "address is refused",
    )
    a2a_push_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="A2A server: how long one webhook POST (and the look-up of its host) may take before it "
        "counts as failed",
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        description="server processes sharing the port through SO_REUSEPORT, to use every core; default: one per "
        "core this process may run on, or 1 with --backend acp, --metrics-port or --a2a-port, which one process "
        "must own",
    )
    worker_max_restarts: int = Field(
        default=5,
        ge=0,
        description="with more than one worker, how many times a worker that dies is restarted within "
        "--worker-restart-window-seconds (all workers together); the next death there stops the service "
        "(exit code 1); 0: any death stops it",
    )
    worker_restart_window_seconds: float = Field(
        default=60.0, gt=0, description="the time window of --worker-max-restarts"
    )
    pin_workers: bool = Field(
        default=False,
        description="with more than one worker, run worker i on the i-th CPU this process may run on (in turn "
        "when there are more workers than CPUs): a worker's threads then share one CPU's caches and wake each "
        "other without a cross-CPU interrupt (2 workers on a 2-CPU VM: 186 µs of server CPU per ToACP call, 212 "
        "unpinned); a pinned worker cannot take an idle CPU when its connections are the busy ones (Linux)",
    )
    event_loop: EventLoop = Field(
        default=EventLoop.AUTO,
        description="the asyncio event loop: uvloop (the 'uvloop' extra) or the standard one; auto: uvloop when "
        "it is installed, except with --backend acp",
    )
    convert_stream_window: int = Field(
        default=8,
        ge=1,
        description="ConvertStream: request messages (batches) of one stream read ahead of the reply being "
        "written, so reading overlaps writing; beyond that, HTTP/2 flow control holds the client back (a stream "
        "holds at most this many times --max-message-bytes of requests)",
    )

    #: The routing table read from ``agents`` / ``agent`` (``None``: one agent, ``backend``).
    _routing: RoutingTable | None = PrivateAttr(default=None)

    @field_validator("agent", mode="before")
    @classmethod
    def _entry_per_line(cls, entries: Any) -> Any:
        """The environment variable's entries, one per line (a target's command line may hold any other
        separator)."""
        return [line.strip() for line in entries.splitlines() if line.strip()] if isinstance(entries, str) else entries

    @field_validator("acp_command")
    @classmethod
    def _shell_style(cls, command: str) -> str:
        shlex.split(command)  # its ValueError (e.g. "No closing quotation") becomes the validation error
        return command

    @field_validator("a2a_input_modes", "a2a_output_modes", "a2a_skills")
    @classmethod
    def _not_empty_list(cls, text: str, info: ValidationInfo) -> str:
        entries = skill_entries(text) if info.field_name == "a2a_skills" else _comma_list(text)
        if not entries:
            raise ValueError("needs at least one entry")
        return text

    @field_validator("a2a_transports")
    @classmethod
    def _known_transports(cls, text: str) -> str:
        bindings = _comma_list(text)
        if not bindings:
            raise ValueError("needs at least one entry")
        unknown = [binding for binding in bindings if binding not in A2A_CLIENT_BINDINGS]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not one of {', '.join(A2A_CLIENT_BINDINGS)}")
        return text

    @field_validator("a2a_push_allowed_networks")
    @classmethod
    def _networks(cls, text: str) -> str:
        _network_list(text)  # its ValueError names the entry that is no network
        return text

    @field_validator("token")
    @classmethod
    def _not_blank(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None and not token.get_secret_value().strip():
            raise ValueError("the token is blank")
        return token

    @model_validator(mode="after")
    def _token_and_combinations(self) -> Self:
        if self.token_file is not None:
            self.token = SecretStr(_read_token(self.token_file))
        self._routing = routing_table(self.agents, self.agent, self.default_agent, bus_nats=self.bus_nats)
        if self._routing is not None and "backend" in self.model_fields_set:
            raise ValueError(
                "--backend names the one agent of a server without a routing table; with --agents or --agent, "
                "each agent's target says where it runs"
            )
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError(
                f"TLS needs both a certificate and a key: --tls-cert and --tls-key "
                f"(or {env_var('tls_cert')} and {env_var('tls_key')})"
            )
        if self.backend is BackendName.ACP and not self.acp_argv:
            raise ValueError(f"--backend acp needs --acp-command (or {env_var('acp_command')})")
        if self.backend is BackendName.A2A and not self.a2a_url:
            raise ValueError(f"--backend a2a needs --a2a-url (or {env_var('a2a_url')})")
        if self.a2a_grpc_port is not None and self.a2a_port is None:
            raise ValueError(
                f"--a2a-grpc-port needs --a2a-port (or {env_var('a2a_port')}): the agent card is served there"
            )
        if self.a2a_port is not None and (self.token is not None or self.tls_cert is not None):
            # The A2A transports would serve the same backend in plaintext to anyone: refuse, not expose.
            raise ValueError(
                "--a2a-port serves A2A without TLS or bearer-token auth: it cannot be combined with --token, "
                "--token-file or --tls-cert"
            )
        if self.a2a_sqlite_path is not None and self.a2a_postgres_url:
            raise ValueError("--a2a-sqlite-path and --a2a-postgres-url name two task stores: give one")
        if self.a2a_sweep_interval_seconds * 2 > self.a2a_lease_seconds:
            # A lease renewed less often could expire while its instance is alive.
            raise ValueError(
                f"--a2a-sweep-interval-seconds ({self.a2a_sweep_interval_seconds:g}) must be at most half of "
                f"--a2a-lease-seconds ({self.a2a_lease_seconds:g})"
            )
        if self.event_loop is EventLoop.UVLOOP and not _uvloop_installed():
            raise ValueError("--event-loop uvloop: uvloop is not installed (pip install 'e2a-grpc[uvloop]')")
        if self.event_loop is EventLoop.UVLOOP and self.runs_acp:
            raise ValueError(
                "--event-loop uvloop cannot serve --backend acp: uvloop starts the agent processes with a fork "
                "while gRPC's threads run, and they crash at times (SIGSEGV); use --event-loop asyncio"
            )
        if self.registry_heartbeat_seconds > self.registry_ttl_seconds / 2:
            raise ValueError(
                f"--registry-heartbeat-seconds ({self.registry_heartbeat_seconds:g}) must be at most half of "
                f"--registry-ttl-seconds ({self.registry_ttl_seconds:g}), so that one lost heartbeat does not "
                "expire the agent's entry"
            )
        if self.bus_progress_seconds * 3 > self.bus_ack_wait_seconds:
            raise ValueError(
                f"--bus-progress-seconds ({self.bus_progress_seconds:g}) must be at most a third of "
                f"--bus-ack-wait-seconds ({self.bus_ack_wait_seconds:g}), so that a running request is never "
                "delivered again while its worker lives"
            )
        if self.lame_duck_seconds > self.grace_seconds:
            raise ValueError(
                f"--lame-duck-seconds ({self.lame_duck_seconds:g}) is part of --grace-seconds "
                f"({self.grace_seconds:g}): it cannot be longer"
            )
        if self.pin_workers and not hasattr(os, "sched_setaffinity"):
            raise ValueError("--pin-workers: this system cannot pin a process to a CPU (Linux can)")
        if self.workers is not None and self.workers > 1:
            if self.runs_acp:
                raise ValueError(
                    "--workers > 1 cannot serve --backend acp (nor a local:acp agent): an ACP chat's agent session "
                    "lives in the worker process that started it, and a client's next call may reach another worker"
                )
            if self.metrics_port is not None:
                raise ValueError(
                    "--workers > 1 cannot serve --metrics-port: each worker process counts its own calls, and "
                    "one port would show one worker's"
                )
            if self.a2a_port is not None:
                raise ValueError(
                    "--workers > 1 cannot serve --a2a-port: the A2A server and its running tasks live in one process"
                )
        return self

    @property
    def worker_count(self) -> int:
        """How many server processes to run: ``workers``, or its default (see the field)."""
        if self.workers is not None:
            return self.workers
        if self.runs_acp or self.metrics_port is not None or self.a2a_port is not None:
            return 1
        return _usable_cores()

    @property
    def uses_uvloop(self) -> bool:
        """Whether the server runs on uvloop: asked for, or ``auto`` with uvloop installed and a backend
        that starts no processes (see the acp refusal above)."""
        if self.event_loop is EventLoop.AUTO:
            return not self.runs_acp and _uvloop_installed()
        return self.event_loop is EventLoop.UVLOOP

    @property
    def routing(self) -> RoutingTable | None:
        """The agent routing table, if ``agents`` or ``agent`` give one."""
        return self._routing

    @property
    def local_backends(self) -> frozenset[BackendName]:
        """The backends that run in this process: ``backend``, or those of the routing table's ``local:`` agents."""
        if self._routing is None:
            return frozenset((self.backend,))
        return frozenset(
            LOCAL_ROUTE_BACKENDS[route.target.kind]
            for route in self._routing.routes
            if route.target.kind in LOCAL_ROUTE_BACKENDS
        )

    @property
    def runs_acp(self) -> bool:
        """Whether ACP agents run in this process (``--backend acp``, or a ``local:acp`` agent)."""
        return BackendName.ACP in self.local_backends

    @property
    def acp_argv(self) -> tuple[str, ...]:
        """The acp backend's agent command, split like a shell would."""
        return tuple(shlex.split(self.acp_command))

    @property
    def a2a_input_media_types(self) -> tuple[str, ...]:
        """The A2A server's input modes."""
        return _comma_list(self.a2a_input_modes)

    @property
    def a2a_transport_preference(self) -> tuple[str, ...]:
        """The a2a backend's transports, most preferred first."""
        return _comma_list(self.a2a_transports)

    @property
    def a2a_output_media_types(self) -> tuple[str, ...]:
        """The A2A server's output modes."""
        return _comma_list(self.a2a_output_modes)

    @property
    def a2a_push_networks(self) -> tuple[IPNetwork, ...]:
        """The networks webhooks may target besides public addresses."""
        return _network_list(self.a2a_push_allowed_networks)

    def card_text(self, route: AgentRoute | None = None) -> AgentCardText:
        """An agent's name, description and skills: its routing table entry's where it gives them, else
        the server's (``a2a_agent_name``, ``a2a_agent_description``, ``a2a_skills``)."""
        if route is None:
            return AgentCardText(self.a2a_agent_name, self.a2a_agent_description, self.a2a_skill_entries)
        return AgentCardText(
            route.name or self.a2a_agent_name,
            self.a2a_agent_description if route.description is None else route.description,
            route.skill_entries or self.a2a_skill_entries,
        )

    @property
    def a2a_skill_entries(self) -> tuple[tuple[str, str], ...]:
        """The A2A server's skills as (id, description) pairs."""
        return skill_entries(self.a2a_skills)


#: The backend of each kind of ``local:`` route.
LOCAL_ROUTE_BACKENDS = {
    RouteKind.ECHO: BackendName.ECHO,
    RouteKind.ACP: BackendName.ACP,
    RouteKind.A2A: BackendName.A2A,
}


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _network_list(text: str) -> tuple[IPNetwork, ...]:
    networks = []
    for entry in _comma_list(text):
        try:  # not strict: 10.1.2.3/24 names 10.1.2.0/24, as an operator means it
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not a network (CIDR, e.g. 10.1.2.0/24) or an IP address") from None
    return tuple(networks)


def _uvloop_installed() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def _usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), where the platform says."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _read_token(token_file: Path) -> str:
    try:
        token = token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the token file (--token-file / {env_var('token_file')}): {exc}") from None
    if not token:
        # Serving without auth because of an empty file would silently open a server meant to be closed.
        raise ValueError(f"the token file {token_file} (--token-file / {env_var('token_file')}) is empty")
    return token


class ClientSettings(BaseSettings):
    """How ``chat`` (and ``convert --server``) reach a running service."""

    model_config = _SETTINGS_CONFIG

    server: str = Field(
        default=f"{_DEFAULT_HOST}:{_DEFAULT_PORT}",
        description=f"the service: HOST, HOST:PORT, [IPv6]:PORT or http(s)://HOST:PORT (port default {_DEFAULT_PORT}; "
        "https:// means TLS, with the system's CA certificates unless --tls-ca)",
    )
    token_env: str = Field(default=env_var("token"), description="environment variable with the bearer token")

    @field_validator("server")
    @classmethod
    def _an_address(cls, server: str) -> str:
        parse_server_address(server)  # its ValueError names what is wrong
        return server

    @property
    def server_address(self) -> ServerAddress:
        """``server`` parsed: host, port and whether to use TLS."""
        return parse_server_address(self.server)

    def bearer_token(self) -> str | None:
        """The token from the environment variable ``token_env`` names, if it is set and not empty."""
        return os.environ.get(self.token_env) or None


class CloudEventsSettings(BaseSettings):
    """How ``convert to-cloudevents`` builds events (the server has the same fields)."""

    model_config = _SETTINGS_CONFIG

    cloudevents_type_prefix: str = _cloudevents_type_prefix()
    cloudevents_source: str | None = _cloudevents_source()


class SubscribeSettings(BaseSettings):
    """Where ``e2a-grpc subscribe`` reads Chat streams from, and for how long."""

    model_config = _SETTINGS_CONFIG

    nats_url: str = Field(
        default=DEFAULT_NATS_URL,
        description="NATS: the server to read from (a cluster: its nodes' URLs, comma-separated)",
    )
    nats_stream: str = _nats_stream()
    nats_subject_prefix: str = _nats_subject_prefix()
    nats_idle_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="NATS: give up after this many seconds without a message on the subjects read (--timeout "
        "for short); default: wait for ever",
    )


class AgentsSettings(BaseSettings):
    """Where ``e2a-grpc agents`` reads the agent registry."""

    model_config = _SETTINGS_CONFIG

    registry_nats: str = Field(
        default=DEFAULT_NATS_URL,
        description="the agent registry's NATS server (a cluster: its nodes' URLs, comma-separated)",
    )
    registry_bucket: str = _registry_bucket()


class AgentWorkerSettings(ServerSettings):
    """How ``e2a-grpc agent`` runs: the backend and turn limits of ``serve`` (the same fields, so one home
    for them), the agent bus (``bus_nats``, needed), and the worker's own bounds."""

    bus_max_turns: int = Field(
        default=16,
        ge=1,
        le=4096,
        description="agent worker: turns run at once; the worker pulls a request only when one has ended, so "
        "requests past this wait in the stream (backpressure)",
    )

    health_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="agent worker: serve gRPC health on HOST:PORT (0 picks a free port): SERVING while the worker "
        "takes requests and its frames reach the broker, NOT_SERVING from SIGTERM on (serve's rule); default: none",
    )

    @model_validator(mode="after")
    def _needs_the_bus(self) -> Self:
        if not self.bus_nats:
            raise ValueError(f"e2a-grpc agent needs --nats (or {env_var('bus_nats')}): the agent bus's NATS server")
        return self
