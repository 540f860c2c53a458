"""The one source of the server's defaults and settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class BackendName(StrEnum):
    """The Chat backends a server can run."""

    ECHO = "echo"
    ACP = "acp"
    A2A = "a2a"


class PermissionPolicy(StrEnum):
    """How the acp backend answers an agent's ``session/request_permission``."""

    DENY = "deny"
    ALLOW = "allow"


DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 50051
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_A2A_TIMEOUT_SECONDS = 300.0


@dataclass
class ServerConfig:
    """How to run the server. ``token`` is a secret: it is never logged (nor shown by ``repr``)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    tls_cert: Path | None = None
    tls_key: Path | None = None
    token: str | None = field(default=None, repr=False)
    backend: BackendName = BackendName.ECHO
    echo_delay_seconds: float = 0.0
    log_frames: bool = False
    #: acp backend: the agent command (argv), the default session cwd (else the server's cwd), the
    #: answer to the agent's permission requests, and how many session-bound agents stay alive.
    acp_command: tuple[str, ...] = ()
    acp_cwd: Path | None = None
    acp_permission_policy: PermissionPolicy = PermissionPolicy.DENY
    acp_max_sessions: int = 16
    #: a2a backend: the remote agent's base URL (its agent card is served below it), and the longest
    #: silence on its stream (also the connect and plain-request timeout).
    a2a_url: str | None = None
    a2a_timeout_seconds: float = DEFAULT_A2A_TIMEOUT_SECONDS
