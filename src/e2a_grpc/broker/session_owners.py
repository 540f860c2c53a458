"""Session ownership on a JetStream key-value bucket (nats-py, the ``nats`` extra): which worker
instance holds each session of an agent whose backend keeps sessions in the worker's process (acp),
so that a gateway sends the session's next request to that worker (docs/agent-registry.md, "Session
ownership", is the layout other languages implement).

One entry per session: key ``<agent token>.<session token>`` (both ``agent_records.key_token``),
value a ``SessionOwner`` as JSON. The bucket's TTL is the registry's: a worker refreshes its claims
with its registry heartbeat, so a killed worker's claims go when its registry entry does, and readers
treat a claim not refreshed for a TTL as gone (nats-server 2.9 removes it without telling a watch).

Writes are compare-and-set on the entry's revision, so that a worker never overwrites a claim another
instance took meanwhile: ``claim`` takes a session over from whoever held it and says who that was,
``refresh`` keeps a worker's claims and tells which another instance took, ``release`` deletes only a
worker's own claims.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Self

import nats.js.errors
import pydantic
from nats.aio.client import Client as NatsClient
from nats.js.kv import KeyValue
from pydantic import BaseModel, ConfigDict, Field, model_validator

from e2a_grpc.broker.agent_records import INSTANCE_ID, MAX_AGENT_ID_LENGTH, key_token, now
from e2a_grpc.broker.kv_buckets import REQUEST_TIMEOUT_SECONDS, expired, open_bucket

log = logging.getLogger(__name__)

#: The value schema's version; a reader ignores claims of a version it does not know.
SCHEMA_VERSION: Literal[1] = 1
#: The longest session key: with a subject's other parts it stays within nats-server's 4 KiB control line.
MAX_SESSION_KEY_LENGTH = 3072
#: Reads and writes of one claim before giving up on an entry other writers keep changing.
_WRITE_ATTEMPTS = 4
#: JetStream's error codes for a write whose expected last revision of the key is not the key's.
_WRONG_LAST_REVISION = frozenset((10071, 10164))


def session_key(agent_id: str, session_id: str) -> str:
    """The key of a session's claim; raises ValueError for an empty session id or one too long for a key."""
    if not session_id:
        raise ValueError("a session id must not be empty")
    key = f"{key_token(agent_id)}.{key_token(session_id)}"
    if len(key) > MAX_SESSION_KEY_LENGTH:
        raise ValueError(
            f"session id too long for session ownership: its key would have {len(key)} characters, at most "
            f"{MAX_SESSION_KEY_LENGTH}"
        )
    return key


class SessionOwner(BaseModel):
    """The value of a claim: the worker instance holding a session of an agent, as JSON (UTF-8).

    No field carries a secret: ids and times only. Readers ignore fields they do not know."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: Literal[1] = Field(description="the value schema's version")
    agent_id: str = Field(min_length=1, max_length=MAX_AGENT_ID_LENGTH, description="the agent the session is of")
    session_id: str = Field(min_length=1, description="the session id of the envelopes (its token is the key's second)")
    instance_id: str = Field(
        pattern=INSTANCE_ID.pattern, description="the worker instance holding it (its registry entry's instance_id)"
    )
    claimed_at: datetime.datetime = Field(description="when that instance claimed it (RFC 3339, UTC)")
    refreshed_at: datetime.datetime = Field(description="when that instance last wrote the claim (RFC 3339, UTC)")

    @model_validator(mode="after")
    def _has_a_key(self) -> Self:
        session_key(self.agent_id, self.session_id)
        return self

    @property
    def key(self) -> str:
        return session_key(self.agent_id, self.session_id)

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, value: bytes) -> SessionOwner:
        """A claim's value; raises pydantic's ValidationError when it is not one (of this schema)."""
        return cls.model_validate_json(value)


@dataclass(frozen=True)
class Claim:
    """A session a worker instance holds: the claim it wrote and that write's revision (what its next
    write must follow), and the claim of another instance it took the session over from, if any."""

    owner: SessionOwner
    revision: int
    previous: SessionOwner | None = None


@dataclass(frozen=True)
class Refreshed:
    """What a refresh did: the claims still held (with their new revisions), and those another
    instance has taken since (the worker no longer holds those sessions for the gateways)."""

    held: list[Claim]
    lost: list[Claim]


class ClaimContendedError(RuntimeError):
    """The claim of a session kept changing under a write (other instances writing it at once)."""


class _Stored(NamedTuple):
    """A key's claim as stored: the claim (None: no entry, deleted, or not a claim of its key) and the
    revision a write must follow (0: the key has no message)."""

    owner: SessionOwner | None
    revision: int


class SessionOwners:
    """The claims of a bucket (``open``, then ``claim``, ``owner``, ``refresh``, ``release``); the
    connection is the caller's. Each method raises nats-py's errors (or TimeoutError) when the broker
    is away or does not answer within ``kv_buckets.REQUEST_TIMEOUT_SECONDS``."""

    def __init__(self, kv: KeyValue, *, ttl: float) -> None:
        self._kv = kv
        self._ttl = ttl

    @classmethod
    async def open(cls, nc: NatsClient, *, bucket: str, ttl: float, replicas: int) -> SessionOwners:
        """The claims of ``bucket``, created with ``ttl`` and ``replicas`` if missing (an existing bucket
        keeps its TTL, which claims then live by)."""
        kv, bucket_ttl = await open_bucket(
            nc, bucket, ttl=ttl, replicas=replicas, timeout=REQUEST_TIMEOUT_SECONDS, role="session ownership"
        )
        return cls(kv, ttl=bucket_ttl)

    async def claim(self, agent_id: str, session_id: str, instance_id: str) -> Claim:
        """Make ``instance_id`` the owner of the session, taking it over from whoever held it (the
        claim's ``previous``: set when another instance held it, even one whose claim expired)."""
        key = session_key(agent_id, session_id)
        for _ in range(_WRITE_ATTEMPTS):
            stored = await self._stored(key)
            moment = now()
            held = stored.owner is not None and stored.owner.instance_id == instance_id
            owner = SessionOwner(
                schema_version=SCHEMA_VERSION,
                agent_id=agent_id,
                session_id=session_id,
                instance_id=instance_id,
                claimed_at=stored.owner.claimed_at if held and stored.owner is not None else moment,
                refreshed_at=moment,
            )
            try:
                revision = await self._kv.update(key, owner.to_json(), last=stored.revision)
            except nats.js.errors.KeyWrongLastSequenceError:
                continue  # another instance wrote the claim since it was read: read it again
            return Claim(owner=owner, revision=revision, previous=None if held else stored.owner)
        raise ClaimContendedError(
            f"the claim of session {session_id!r} of agent {agent_id!r} changed {_WRITE_ATTEMPTS} times while "
            f"instance {instance_id} was claiming it"
        )

    async def owner(self, agent_id: str, session_id: str) -> SessionOwner | None:
        """The live claim of the session: None when nobody holds it or its claim is older than the TTL."""
        owner = (await self._stored(session_key(agent_id, session_id))).owner
        if owner is None or expired(owner.refreshed_at, self._ttl, now()):
            return None
        return owner

    async def refresh(self, claims: Iterable[Claim]) -> Refreshed:
        """Write every claim again with a new ``refreshed_at`` (all at once: the worker's heartbeat).
        A claim that expired or was deleted meanwhile is written again; one that another instance
        took is lost. Raises the first broker error after every write has ended."""
        claims = list(claims)
        results = await asyncio.gather(*(self._refresh(claim) for claim in claims), return_exceptions=True)
        held, lost = [], []
        for claim, result in zip(claims, results, strict=True):
            if isinstance(result, BaseException):
                raise result
            if result is None:
                lost.append(claim)
            else:
                held.append(result)
        return Refreshed(held=held, lost=lost)

    async def release(self, claims: Iterable[Claim]) -> None:
        """Delete the claims (sessions that ended, a worker draining), all at once; a claim another
        instance took meanwhile is left to it. Raises the first broker error after every delete has ended."""
        results = await asyncio.gather(*(self._release(claim) for claim in claims), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _refresh(self, claim: Claim) -> Claim | None:
        owner, last = claim.owner, claim.revision
        for _ in range(_WRITE_ATTEMPTS):
            owner = owner.model_copy(update={"refreshed_at": now()})
            try:
                revision = await self._kv.update(owner.key, owner.to_json(), last=last)
            except nats.js.errors.KeyWrongLastSequenceError:
                stored = await self._stored(owner.key)
                if stored.owner is not None and stored.owner.instance_id != owner.instance_id:
                    log.info(
                        "session %r of agent %r was taken over by instance %s",
                        owner.session_id,
                        owner.agent_id,
                        stored.owner.instance_id,
                    )
                    return None
                last = stored.revision  # gone (expired, deleted) or rewritten by this instance: claim it again
                continue
            return Claim(owner=owner, revision=revision, previous=claim.previous)
        raise ClaimContendedError(
            f"the claim of session {owner.session_id!r} of agent {owner.agent_id!r} changed {_WRITE_ATTEMPTS} times "
            f"while instance {owner.instance_id} was refreshing it"
        )

    async def _release(self, claim: Claim) -> None:
        key, last = claim.owner.key, claim.revision
        for _ in range(_WRITE_ATTEMPTS):
            try:
                await self._kv.delete(key, last=last)
                return
            except nats.js.errors.APIError as exc:
                # nats-py's KeyValue.delete raises the plain APIError for a wrong expected revision (its
                # update maps the same error to KeyWrongLastSequenceError).
                if exc.err_code not in _WRONG_LAST_REVISION:
                    raise
            stored = await self._stored(key)
            if stored.owner is None or stored.owner.instance_id != claim.owner.instance_id:
                return  # gone already, or another instance's now
            last = stored.revision
        raise ClaimContendedError(
            f"the claim of session {claim.owner.session_id!r} of agent {claim.owner.agent_id!r} changed "
            f"{_WRITE_ATTEMPTS} times while instance {claim.owner.instance_id} was releasing it"
        )

    async def _stored(self, key: str) -> _Stored:
        try:
            entry = await self._kv.get(key)
        except nats.js.errors.KeyNotFoundError as exc:
            # A deleted key's error carries its delete marker, the revision a new claim must follow.
            deleted: KeyValue.Entry | None = exc.entry
            return _Stored(owner=None, revision=(deleted.revision or 0) if deleted is not None else 0)
        return _Stored(owner=_owner_of(key, entry.value), revision=entry.revision or 0)


def _owner_of(key: str, value: bytes | None) -> SessionOwner | None:
    """A claim's record, or None (logged) when its value is not one or does not match its key."""
    try:
        owner = SessionOwner.from_json(value or b"")
    except pydantic.ValidationError as exc:
        log.warning("session claim %s ignored: not a session owner of schema 1 (%d errors)", key, exc.error_count())
        return None
    if owner.key != key:
        log.warning(
            "session claim %s ignored: its value is session %r of agent %r", key, owner.session_id, owner.agent_id
        )
        return None
    return owner
