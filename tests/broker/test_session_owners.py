"""Session ownership (``broker.session_owners``) against a real nats-server: claims, owners, take-over
by another instance, refreshes (many at once, one taken over meanwhile, one expired meanwhile),
releases that leave another instance's claim alone, expiry by the TTL, values with no secret."""

from __future__ import annotations

import asyncio
import datetime
import logging
import uuid
from collections.abc import AsyncIterator

import nats
import pytest
import pytest_asyncio
from nats.aio.client import Client as NatsClient
from nats.js.kv import KeyValue

from e2a_grpc.broker.agent_records import new_instance_id, now
from e2a_grpc.broker.session_owners import SessionOwner, SessionOwners, session_key
from tests.support.log_records import log_records
from tests.support.nats_server import NatsServer

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio]
#: The shortest TTL the settings allow.
TTL = 1.0
#: Long enough that no claim of a test expires while it runs, unless the test waits for it.
LONG_TTL = 60.0


@pytest_asyncio.fixture
async def nc(broker: NatsServer) -> AsyncIterator[NatsClient]:
    client = await nats.connect(broker.url)
    yield client
    await client.close()


async def _owners(nc: NatsClient, ttl: float = LONG_TTL) -> tuple[SessionOwners, KeyValue]:
    """The claims of a bucket of the test's own, and the bucket itself (to write behind their back)."""
    bucket = f"SESSIONS_{uuid.uuid4().hex[:12]}"
    owners = await SessionOwners.open(nc, bucket=bucket, ttl=ttl, replicas=1)
    return owners, await nc.jetstream().key_value(bucket)


async def test_a_claim_makes_its_instance_the_owner_until_released(nc: NatsClient) -> None:
    owners, _ = await _owners(nc)
    worker = new_instance_id()
    assert await owners.owner("coder", "s1") is None
    claim = await owners.claim("coder", "s1", worker)
    assert claim.previous is None
    assert (claim.owner.agent_id, claim.owner.session_id, claim.owner.instance_id) == ("coder", "s1", worker)
    assert await owners.owner("coder", "s1") == claim.owner
    assert await owners.owner("coder", "s2") is None
    assert await owners.owner("other", "s1") is None
    # Claiming a session it holds again keeps the first claim's time and takes nothing over.
    again = await owners.claim("coder", "s1", worker)
    assert again.previous is None and again.owner.claimed_at == claim.owner.claimed_at
    await owners.release([again])
    assert await owners.owner("coder", "s1") is None
    # A released session can be claimed anew.
    fresh = await owners.claim("coder", "s1", worker)
    assert fresh.previous is None and await owners.owner("coder", "s1") == fresh.owner


async def test_a_claim_takes_the_session_over_and_says_from_whom(nc: NatsClient) -> None:
    owners, _ = await _owners(nc)
    first, second = new_instance_id(), new_instance_id()
    held = await owners.claim("coder", "shared", first)
    taken = await owners.claim("coder", "shared", second)
    assert taken.previous == held.owner
    assert (await owners.owner("coder", "shared")) == taken.owner
    # The first instance's refresh learns it lost the session; its release leaves the new owner's claim.
    refreshed = await owners.refresh([held])
    assert (refreshed.held, refreshed.lost) == ([], [held])
    await owners.release([held])
    assert (await owners.owner("coder", "shared")) == taken.owner


async def test_a_refresh_writes_many_claims_at_once_and_keeps_an_expired_one(nc: NatsClient) -> None:
    owners, kv = await _owners(nc)
    worker = new_instance_id()
    claims = [await owners.claim("coder", f"s{index}", worker) for index in range(20)]
    # One claim deleted behind the worker's back (as the broker's expiry does): the refresh writes it again.
    await kv.delete(claims[3].owner.key)
    refreshed = await owners.refresh(claims)
    assert refreshed.lost == []
    assert [claim.owner.session_id for claim in refreshed.held] == [f"s{index}" for index in range(20)]
    for before, after in zip(claims, refreshed.held, strict=True):
        assert after.revision > before.revision
        assert after.owner.claimed_at == before.owner.claimed_at
        assert after.owner.refreshed_at >= before.owner.refreshed_at
        assert await owners.owner("coder", after.owner.session_id) == after.owner
    # The next refresh follows the revisions the last one wrote.
    assert (await owners.refresh(refreshed.held)).lost == []
    await owners.release(refreshed.held)
    assert [await owners.owner("coder", f"s{index}") for index in range(20)] == [None] * 20


async def test_a_claim_not_refreshed_within_the_ttl_has_no_owner(nc: NatsClient) -> None:
    owners, _ = await _owners(nc, ttl=TTL)
    worker = new_instance_id()
    claim = await owners.claim("coder", "quiet", worker)
    assert await owners.owner("coder", "quiet") == claim.owner
    # Nothing tells when the TTL passes: wait for the instant the claim expires, then ask.
    expiry = claim.owner.refreshed_at + datetime.timedelta(seconds=TTL)
    await asyncio.sleep((expiry - now()).total_seconds() + 0.05)
    assert await owners.owner("coder", "quiet") is None


async def test_taking_over_an_expired_claim_still_says_whose_it_was(nc: NatsClient) -> None:
    owners, kv = await _owners(nc)
    # A claim its worker stopped refreshing long ago, which the broker has not removed yet.
    written = now() - datetime.timedelta(seconds=2 * LONG_TTL)
    stale = SessionOwner(
        schema_version=1,
        agent_id="coder",
        session_id="old",
        instance_id=new_instance_id(),
        claimed_at=written,
        refreshed_at=written,
    )
    await kv.put(stale.key, stale.to_json())
    assert await owners.owner("coder", "old") is None
    # The session lived in that instance's process: whoever claims it now must start it anew.
    taken = await owners.claim("coder", "old", new_instance_id())
    assert taken.previous == stale
    assert await owners.owner("coder", "old") == taken.owner


async def test_values_that_are_not_claims_of_their_key_are_ignored_and_logged(nc: NatsClient) -> None:
    owners, kv = await _owners(nc)
    await kv.put(session_key("coder", "junk"), b'{"schema_version": 99}')
    stolen = (await owners.claim("coder", "real", new_instance_id())).owner
    await kv.put(session_key("coder", "thief"), stolen.to_json())
    with log_records() as logs:
        assert await owners.owner("coder", "junk") is None
        assert await owners.owner("coder", "thief") is None
        # A claim replaces what is not one, and takes nothing over.
        claim = await owners.claim("coder", "junk", new_instance_id())
    assert claim.previous is None and await owners.owner("coder", "junk") == claim.owner
    ignored = logs.matching(logging.WARNING, "ignored")
    assert len(ignored) == 3, ignored


async def test_a_claim_holds_ids_and_times_only(nc: NatsClient) -> None:
    owners, kv = await _owners(nc)
    claim = await owners.claim("coder", "s1", new_instance_id())
    stored = (await kv.get(claim.owner.key)).value
    assert SessionOwner.from_json(stored or b"") == claim.owner
    assert set(SessionOwner.model_fields) == {
        "schema_version",
        "agent_id",
        "session_id",
        "instance_id",
        "claimed_at",
        "refreshed_at",
    }
