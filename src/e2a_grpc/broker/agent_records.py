"""The agent registry's entries: the key layout and the value schema (docs/agent-registry.md).

Pure code (no NATS): the registrant (``agent_registry``), the ``agents`` command and the gateway
read and write entries through this module only, so the layout has one home. Other languages
implement it from the document.

An entry per worker instance of an agent, so counting an agent's entries counts its workers:
key ``<agent token>.<instance id>``, where the agent token is the agent id's ``key_token``: every
byte outside ``[A-Za-z0-9-]`` written ``_XX`` (its UTF-8 bytes in upper-case hex): ids stay readable,
any id is a valid KV key token, and ``<agent token>.*`` watches exactly one agent's workers. Session
ownership (``session_owners``) and the bus's request subjects use the same token.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import re
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from e2a_grpc.routing import RouteKind
from e2a_grpc.settings import AgentCardText, ServerSettings

#: The value schema's version; a reader skips entries of a version it does not know.
SCHEMA_VERSION: Literal[1] = 1
#: Bytes of an id written ``_XX`` in its key token (all but those kept as they are).
_ESCAPED_BYTE = re.compile(rb"[^A-Za-z0-9-]")
#: An instance id: what ``new_instance_id`` makes, and the only form a key's second token may have.
INSTANCE_ID = re.compile(r"^[0-9a-f]{32}$")
#: The longest agent id (so that a key stays well under NATS's subject size).
MAX_AGENT_ID_LENGTH = 256


class RegistrySkill(BaseModel):
    """A skill of the agent, as its A2A card names it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    description: str


class AgentRecord(BaseModel):
    """The value of a registry entry: one worker instance of an agent, as JSON (UTF-8).

    No field carries a secret: the backend is its kind only (never the ACP command line or the A2A
    URL), and the text fields are the operator's card settings. Readers ignore fields they do not
    know, so later versions of a writer may add fields without breaking them."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: Literal[1] = Field(description="the value schema's version")
    agent_id: str = Field(min_length=1, max_length=MAX_AGENT_ID_LENGTH, description="the agent id Chat routes by")
    name: str = Field(description="the agent's display name (its A2A card's name)")
    description: str = Field(description="what the agent does (its A2A card's description)")
    skills: tuple[RegistrySkill, ...] = Field(description="its skills: [{id, description}]")
    input_modes: tuple[str, ...] = Field(description="media types of the parts it takes")
    output_modes: tuple[str, ...] = Field(description="media types of its answers")
    backend: str = Field(min_length=1, description="the kind of agent behind the worker: echo, acp, a2a, ...")
    version: str = Field(description="the version of the worker's software (e2a-grpc's, for this project)")
    instance_id: str = Field(pattern=INSTANCE_ID.pattern, description="the worker instance: 32 lower-case hex digits")
    started_at: datetime.datetime = Field(description="when the worker registered (RFC 3339, UTC)")
    heartbeat_at: datetime.datetime = Field(description="when the worker last wrote its entry (RFC 3339, UTC)")

    @property
    def key(self) -> str:
        return entry_key(self.agent_id, self.instance_id)

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, value: bytes) -> AgentRecord:
        """An entry's value; raises pydantic's ValidationError when it is not one (of this schema)."""
        return cls.model_validate_json(value)


def new_instance_id() -> str:
    return uuid.uuid4().hex


def key_token(value: str) -> str:
    """``value`` (an agent id, a session id) as one KV key token and NATS subject token (see the module
    docstring); distinct values have distinct tokens."""
    return _ESCAPED_BYTE.sub(lambda byte: b"_%02X" % byte[0][0], value.encode()).decode()


def entry_key(agent_id: str, instance_id: str) -> str:
    """The key of one worker instance's entry."""
    if not INSTANCE_ID.fullmatch(instance_id):
        raise ValueError(f"instance id {instance_id!r} is not 32 lower-case hex digits")
    return f"{key_token(agent_id)}.{instance_id}"


def agent_keys(agent_id: str) -> str:
    """The key filter that matches every worker entry of ``agent_id`` (for a KV watch)."""
    return f"{key_token(agent_id)}.*"


def now() -> datetime.datetime:
    """The time written in entries: UTC, to the millisecond (RFC 3339 as pydantic writes it)."""
    moment = datetime.datetime.now(datetime.UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def server_record(
    config: ServerSettings, *, instance_id: str, started_at: datetime.datetime, heartbeat_at: datetime.datetime
) -> AgentRecord:
    """The entry of ``serve``'s one agent: its card settings (those the A2A server's card shows) and
    its backend's kind, nothing else of its configuration (no command line, URL or token)."""
    return _record(
        config,
        config.agent_id,
        config.card_text(),
        config.backend.value,
        instance_id=instance_id,
        started_at=started_at,
        heartbeat_at=heartbeat_at,
    )


#: The backend kind an entry names for each local route of a routing table.
_LOCAL_BACKENDS = {RouteKind.ECHO: "echo", RouteKind.ACP: "acp", RouteKind.A2A: "a2a"}


def route_records(
    config: ServerSettings, *, instance_id: str, started_at: datetime.datetime, heartbeat_at: datetime.datetime
) -> tuple[AgentRecord, ...]:
    """The entries of ``serve``'s agents: with a routing table, one per agent that runs in this server
    (a ``local:`` route: its name, description and skills, else the server's card settings); an agent of a
    ``nats`` or ``grpc://`` route is registered by the service that runs it. Without one, ``server_record``."""
    table = config.routing
    if table is None:
        return (server_record(config, instance_id=instance_id, started_at=started_at, heartbeat_at=heartbeat_at),)
    return tuple(
        _record(
            config,
            route.agent_id,
            config.card_text(route),
            _LOCAL_BACKENDS[route.target.kind],
            instance_id=instance_id,
            started_at=started_at,
            heartbeat_at=heartbeat_at,
        )
        for route in table.routes
        if route.target.kind in _LOCAL_BACKENDS
    )


def _record(
    config: ServerSettings,
    agent_id: str,
    card: AgentCardText,
    backend: str,
    *,
    instance_id: str,
    started_at: datetime.datetime,
    heartbeat_at: datetime.datetime,
) -> AgentRecord:
    return AgentRecord(
        schema_version=SCHEMA_VERSION,
        agent_id=agent_id,
        name=card.name,
        description=card.description,
        skills=tuple(RegistrySkill(id=skill_id, description=text) for skill_id, text in card.skills),
        input_modes=config.a2a_input_media_types,
        output_modes=config.a2a_output_media_types,
        backend=backend,
        version=importlib.metadata.version("e2a-grpc"),
        instance_id=instance_id,
        started_at=started_at,
        heartbeat_at=heartbeat_at,
    )
