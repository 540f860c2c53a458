"""The agent card's HTTP caching (``a2a_server.card_route``, spec 8.6.1): Cache-Control max-age, a strong
ETag of the bytes served, Last-Modified, and 304 for a matching conditional request (a2a-sdk 1.3: no
Cache-Control, a weak ETag, no Last-Modified, If-Modified-Since ignored)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from email.utils import formatdate, parsedate_to_datetime

import httpx
import pytest
import pytest_asyncio
from a2a.types.a2a_pb2 import AgentCard
from google.protobuf import json_format

from e2a_grpc.settings import A2A_CARD_PATH
from tests.a2a_server.conftest import a2a_server

TIMEOUT = 20.0


@pytest_asyncio.fixture
async def card_url() -> AsyncIterator[str]:
    async with a2a_server() as server:
        yield f"http://127.0.0.1:{server.port}{A2A_CARD_PATH}"


async def _get(url: str, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return await http.get(url, headers=headers)


@pytest.mark.asyncio
async def test_the_card_has_cache_validators(card_url: str) -> None:
    before = int(time.time())
    reply = await _get(card_url)
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    assert reply.headers["cache-control"] == "max-age=300"
    assert reply.headers["etag"] == f'"{hashlib.sha256(reply.content).hexdigest()}"'  # strong: no W/
    # Built when the server started, which was before this request, in this test.
    assert parsedate_to_datetime(reply.headers["last-modified"]).timestamp() <= before
    card = json_format.Parse(reply.content, AgentCard(), ignore_unknown_fields=True)
    assert card.name == "e2a-grpc"


@pytest.mark.asyncio
async def test_a_matching_if_none_match_gets_304(card_url: str) -> None:
    etag = (await _get(card_url)).headers["etag"]
    for tag in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        reply = await _get(card_url, **{"If-None-Match": tag})
        assert reply.status_code == 304 and reply.content == b"", tag
        assert reply.headers["etag"] == etag and reply.headers["cache-control"] == "max-age=300"
    assert (await _get(card_url, **{"If-None-Match": '"other"'})).status_code == 200


@pytest.mark.asyncio
async def test_if_modified_since(card_url: str) -> None:
    first = await _get(card_url)
    last_modified = first.headers["last-modified"]
    hour_before = formatdate(parsedate_to_datetime(last_modified).timestamp() - 3600, usegmt=True)
    assert (await _get(card_url, **{"If-Modified-Since": last_modified})).status_code == 304
    assert (await _get(card_url, **{"If-Modified-Since": hour_before})).status_code == 200
    assert (await _get(card_url, **{"If-Modified-Since": "not a date"})).status_code == 200
    # If-None-Match, when sent, decides alone (RFC 9110 13.2.2).
    both = {"If-None-Match": '"other"', "If-Modified-Since": last_modified}
    assert (await _get(card_url, **both)).status_code == 200


@pytest.mark.asyncio
async def test_the_max_age_is_a_setting() -> None:
    async with a2a_server(a2a_card_max_age_seconds=60) as server:
        reply = await _get(f"http://127.0.0.1:{server.port}{A2A_CARD_PATH}")
    assert reply.headers["cache-control"] == "max-age=60"
