"""The agent routing table of ``serve``: which agent each ``agent_id`` is and where it runs.

It comes from ``--agents FILE`` (TOML, read with the standard library's ``tomllib``: YAML would add a
dependency the project does not have) and from repeated ``--agent ID=TARGET`` options, which add to
the file's entries or replace one of the same id. A target is one of:

* ``local:echo``, ``local:acp:<command line>``, ``local:a2a:<url>``: a backend in this process, as
  ``--backend`` runs one;
* ``nats``: the agent's workers on the agent bus;
* ``grpc://host:port`` or ``grpcs://host:port`` (TLS): an upstream E2A ``AgentService``.

The file's form (README, "Routing by agent")::

    default_agent = "writer"          # optional: else the first agent

    [agents.writer]
    target = "local:acp:python writer.py"
    name = "Writer"                   # optional, for its A2A card and registry entry
    description = "Writes text"       # optional
    skills = ["write: Writes text"]   # optional, 'id: description' each

    [agents.search]
    target = "grpcs://search.internal:443"
    token_env = "SEARCH_TOKEN"        # the upstream's bearer token is read from this variable
    tls_ca = "search-ca.pem"          # optional: the CAs of its certificate (else the system's)

A token never goes in the file, which is not a secret store: ``token_env`` names the environment
variable that holds it (read when the route is built). ``tls_ca``, a PEM file (a relative path is
relative to the file's directory), is read and checked with the table.
"""

from __future__ import annotations

import os
import re
import shlex
import ssl
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from e2a_grpc.address import ServerAddress, parse_server_address

#: What an agent id may be: what ``ServerSettings.agent_id`` takes.
AGENT_ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"
AGENT_ID_MAX_CHARS = 256
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENDS_WITH_PORT = re.compile(r":\d+/?$")


class RouteKind(StrEnum):
    """Where an agent runs: the start of its target."""

    ECHO = "local:echo"
    ACP = "local:acp"
    A2A = "local:a2a"
    NATS = "nats"
    GRPC = "grpc"


#: Upstream schemes: ``grpc://`` plaintext, ``grpcs://`` TLS (as ``https://`` in ``--server``).
_UPSTREAM_SCHEMES = {"grpc": "http", "grpcs": "https"}
_TARGET_FORMS = "local:echo, local:acp:<command>, local:a2a:<url>, nats, grpc://host:port or grpcs://host:port"


@dataclass(frozen=True)
class RouteTarget:
    """A target parsed: its kind and what follows the kind (command, URL, upstream address)."""

    kind: RouteKind
    acp_command: str = ""
    a2a_url: str = ""
    upstream: ServerAddress | None = None

    def __str__(self) -> str:
        if self.upstream is not None:
            scheme = "grpcs" if self.upstream.tls else "grpc"
            return f"{scheme}://{self.upstream.target}"
        return str(self.kind)


def parse_target(text: str) -> RouteTarget:
    """A target as the routing table writes it; ``ValueError`` says which forms there are."""
    text = text.strip()
    if text == RouteKind.ECHO:
        return RouteTarget(RouteKind.ECHO)
    if text == RouteKind.NATS:
        return RouteTarget(RouteKind.NATS)
    for kind in (RouteKind.ACP, RouteKind.A2A):
        prefix = f"{kind}:"
        if text.startswith(prefix):
            argument = text[len(prefix) :].strip()
            if not argument:
                raise ValueError(
                    f"{kind} needs {'a command line' if kind is RouteKind.ACP else 'a URL'} after {prefix}"
                )
            if kind is RouteKind.A2A:
                return RouteTarget(kind, a2a_url=argument)
            # Checked here as --acp-command is: the route's backend is made from a copy of the settings
            # (model_copy), which validates nothing, and the split at its start would end in a traceback.
            try:
                shlex.split(argument)
            except ValueError as exc:  # e.g. "No closing quotation"
                raise ValueError(f"{prefix} command line {argument!r}: {exc}") from None
            return RouteTarget(kind, acp_command=argument)
    scheme, separator, rest = text.partition("://")
    if separator and scheme.lower() in _UPSTREAM_SCHEMES:
        if not _ENDS_WITH_PORT.search(rest):
            raise ValueError(f"{text!r} names no port: write {scheme}://host:port")
        try:  # the --server address rules, with the scheme that says whether it is TLS
            address = parse_server_address(f"{_UPSTREAM_SCHEMES[scheme.lower()]}://{rest}")
        except ValueError:
            raise ValueError(f"{text!r} is not an upstream address: write {scheme}://host:port") from None
        return RouteTarget(RouteKind.GRPC, upstream=address)
    raise ValueError(f"unknown target {text!r}; a target is one of {_TARGET_FORMS}")


@dataclass(frozen=True)
class CaFile:
    """A PEM file of CA certificates, as read (``tls_ca`` of a grpcs route)."""

    path: Path
    pem: bytes

    @classmethod
    def read(cls, path: Path) -> CaFile:
        """``ValueError`` when it cannot be read or holds no certificate (which gRPC would report only
        on the first call, as a failed handshake)."""
        try:
            pem = path.read_bytes()
        except OSError as exc:
            raise ValueError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        try:
            ssl.create_default_context(cadata=pem.decode("ascii"))
        except (UnicodeDecodeError, ValueError, ssl.SSLError):
            raise ValueError(f"{path}: no PEM CA certificate in it") from None
        return cls(path, pem)


class AgentRoute(BaseModel):
    """One entry of the routing table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: str = Field(min_length=1, max_length=AGENT_ID_MAX_CHARS, pattern=AGENT_ID_PATTERN)
    target: RouteTarget
    #: The agent's name and description (A2A card, registry entry); unset: the server's.
    name: str | None = Field(default=None, min_length=1)
    description: str | None = None
    #: 'id: description' entries; unset: the server's ``a2a_skills``.
    skills: tuple[str, ...] = ()
    #: grpc targets: the environment variable holding the upstream's bearer token.
    token_env: str | None = None
    #: grpcs targets: a PEM file of the CA certificates the upstream's certificate is checked with,
    #: instead of the system's (read with the table).
    tls_ca: CaFile | None = None

    @field_validator("target", mode="before")
    @classmethod
    def _parsed(cls, target: Any) -> RouteTarget:
        if isinstance(target, RouteTarget):
            return target
        if not isinstance(target, str):
            raise ValueError(f"must be a string, one of {_TARGET_FORMS}")
        return parse_target(target)

    @field_validator("skills", mode="before")
    @classmethod
    def _skill_list(cls, skills: Any) -> Any:
        entries = skills.split(";") if isinstance(skills, str) else skills
        if not isinstance(entries, list):
            return entries
        return [entry.strip() if isinstance(entry, str) else entry for entry in entries if entry != ""]

    @field_validator("tls_ca", mode="before")
    @classmethod
    def _ca_file(cls, tls_ca: Any) -> Any:
        return CaFile.read(Path(tls_ca)) if isinstance(tls_ca, str | Path) else tls_ca

    @field_validator("token_env")
    @classmethod
    def _env_name(cls, name: str | None) -> str | None:
        if name is not None and not _ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not an environment variable name")
        return name

    @property
    def skill_entries(self) -> tuple[tuple[str, str], ...]:
        """Its skills as (id, description) pairs."""
        return skill_entries(";".join(self.skills))

    def upstream_token(self) -> str | None:
        """The upstream's bearer token, from the variable ``token_env`` names (unset or empty: none)."""
        return (os.environ.get(self.token_env) or None) if self.token_env else None


@dataclass(frozen=True)
class RoutingTable:
    """The agents of a server, in the order given, and the one a request without ``agent_id`` reaches."""

    routes: tuple[AgentRoute, ...]
    default_agent: str

    @property
    def agent_ids(self) -> tuple[str, ...]:
        return tuple(route.agent_id for route in self.routes)

    def route(self, agent_id: str) -> AgentRoute | None:
        return next((route for route in self.routes if route.agent_id == agent_id), None)


def routing_table(
    agents_file: Path | None, options: list[str], default_agent: str | None, *, bus_nats: str | None
) -> RoutingTable | None:
    """The table of ``--agents`` and ``--agent`` (``None`` without either); ``ValueError`` has one line
    per bad entry, each naming where it came from. ``nats`` targets need the bus (``bus_nats``)."""
    problems: list[str] = []
    routes: dict[str, AgentRoute] = {}
    file_default: str | None = None
    if agents_file is not None:
        file_default = _read_file(agents_file, routes, problems)
    for option in options:
        agent_id, separator, target = option.partition("=")
        if not separator:
            problems.append(f"--agent {option!r}: write ID=TARGET, e.g. writer=local:echo")
            continue
        route = _route(f"--agent {agent_id!r}", {"agent_id": agent_id.strip(), "target": target}, problems)
        if route is not None:
            routes[route.agent_id] = route
    for route in routes.values():
        if route.token_env is not None and not os.environ.get(route.token_env):
            problems.append(f"agent {route.agent_id!r}: token_env {route.token_env}: the variable is not set")
        if route.token_env is not None and route.target.kind is not RouteKind.GRPC:
            problems.append(f"agent {route.agent_id!r}: token_env is for grpc:// targets (the upstream's token)")
        if route.tls_ca is not None and not (route.target.upstream is not None and route.target.upstream.tls):
            problems.append(f"agent {route.agent_id!r}: tls_ca is for grpcs:// targets (the upstream's TLS)")
        if route.target.kind is RouteKind.NATS and not bus_nats:
            problems.append(
                f"agent {route.agent_id!r}: target nats needs --bus-nats, the NATS server of the agent bus its "
                "workers take requests from"
            )
    default = default_agent or file_default
    if default is not None and routes and default not in routes:
        problems.append(f"default agent {default!r} is not in the routing table ({', '.join(routes)})")
    if problems:
        raise ValueError("\n".join(problems))
    if not routes:
        if default_agent is not None:
            raise ValueError("--default-agent needs a routing table (--agents or --agent)")
        return None
    return RoutingTable(tuple(routes.values()), default or next(iter(routes)))


def _read_file(path: Path, routes: dict[str, AgentRoute], problems: list[str]) -> str | None:
    """Read the file's agents into ``routes``; its ``default_agent``."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"--agents {path}: cannot read it: {exc}")
        return None
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"--agents {path}: not valid TOML: {exc}")
        return None
    unknown = sorted(set(document) - {"agents", "default_agent"})
    if unknown:
        problems.append(
            f"--agents {path}: unknown top-level keys {unknown}; the file has default_agent and [agents.ID]"
        )
    default = document.get("default_agent")
    if default is not None and not isinstance(default, str):
        problems.append(f"--agents {path}: default_agent must be a string")
        default = None
    agents = document.get("agents", {})
    if not isinstance(agents, dict) or not agents:
        problems.append(f"--agents {path}: no [agents.ID] table")
        return default
    for agent_id, entry in agents.items():
        where = f"--agents {path}: agent {agent_id!r}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be a table with a target")
            continue
        if "token" in entry:
            problems.append(f"{where}: a token never goes in the file; name its environment variable with token_env")
            continue
        if isinstance(tls_ca := entry.get("tls_ca"), str):  # relative to the file, wherever serve runs
            entry = {**entry, "tls_ca": path.parent / tls_ca}
        route = _route(where, {**entry, "agent_id": agent_id}, problems)
        if route is not None:
            routes[route.agent_id] = route
    return default


def _route(where: str, fields: dict[str, Any], problems: list[str]) -> AgentRoute | None:
    try:
        return AgentRoute.model_validate(fields)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            message = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
            problems.append(f"{where}: {field}: {message}")
        return None


def skill_entries(text: str) -> tuple[tuple[str, str], ...]:
    """'id: description' entries separated by ';' as (id, description) pairs (an entry without an id is
    skipped; one without a description is described by its id)."""
    entries = []
    for entry in text.split(";"):
        skill_id, _, description = entry.partition(":")
        if skill_id.strip():
            entries.append((skill_id.strip(), description.strip() or skill_id.strip()))
    return tuple(entries)
