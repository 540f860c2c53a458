"""Readiness as a load balancer meets it (``serve --a2a-port``, real PostgreSQL and SQLite databases
taken away and given back): gRPC health on both gRPC ports and ``/readyz`` on the A2A port say
NOT_SERVING / 503 for the A2A service and the server while the task store's database is unreachable,
and SERVING / 200 again once it answers; ConversionService, CodecService and Chat, which need no
database, stay SERVING; ``/livez`` stays 200; one WARNING and one INFO per outage; the metrics follow.
A call that loses its connection has the database checked at once. ``/readyz`` agrees with health
during the SIGTERM drain, and neither endpoint is subject to the A2A request checks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy.ext.asyncio import create_async_engine

from e2a_grpc.a2a_server.server import A2A_SERVICE_NAME
from e2a_grpc.a2a_server.store_outage import StoreHealth
from e2a_grpc.a2a_server.store_probe import TaskStoreProbe
from e2a_grpc.grpc.readiness import WHOLE_SERVER
from e2a_grpc.grpc.server import SERVICE_NAMES
from e2a_grpc.settings import READINESS_PATH
from tests.support.log_records import LogRecords, log_records
from tests.support.postgres import Cluster, throwaway_cluster
from tests.support.processes import free_port, running_server_process
from tests.support.readiness import (
    NOT_SERVING,
    SERVING,
    Servers,
    health_check,
    health_statuses,
    livez,
    readiness_metrics,
    readyz,
    serving_with_a2a,
    until_status,
)
from tests.support.waiting import within

pytestmark = [pytest.mark.timeout(120), pytest.mark.postgres, pytest.mark.subprocess]  # PostgreSQL, serve
UNREACHABLE = "task store's database is unreachable"
ANSWERS_AGAIN = "task store's database answers again"
#: Probed this often where the tests wait for the probe (the default is 5 s).
QUICK_PROBE_SECONDS = 0.2
STORE_LOGGER = "e2a_grpc.a2a_server.store_outage"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with throwaway_cluster() as running:
        yield running


def store_lines(logs: LogRecords) -> list[int]:
    """The levels of the lines about the task store's availability, at INFO and above."""
    return [record.levelno for record in logs.records if record.name == STORE_LOGGER and record.levelno >= logging.INFO]


@contextlib.asynccontextmanager
async def watched(servers: Servers) -> AsyncIterator[list[AsyncIterator[int]]]:
    """Health Watch streams of the server and the A2A service, on the E2A port and the A2A gRPC port."""
    async with contextlib.AsyncExitStack() as stack:
        watches: list[AsyncIterator[int]] = []
        for address in (servers.e2a_address, servers.a2a_grpc_address):
            channel = await stack.enter_async_context(grpc.aio.insecure_channel(address))
            for service in (WHOLE_SERVER, A2A_SERVICE_NAME):
                watches.append(await stack.enter_async_context(contextlib.aclosing(health_statuses(channel, service))))
        yield watches


async def all_until(watches: list[AsyncIterator[int]], wanted: int) -> None:
    for statuses in watches:
        await within(until_status(statuses, wanted))


async def send_message(http: httpx.AsyncClient, servers: Servers, text: str) -> dict[str, Any]:
    """A blocking JSON-RPC SendMessage; its JSON-RPC response."""
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    response = await http.post(
        servers.a2a_url + "/",
        headers={"A2A-Version": "1.0"},
        json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}},
    )
    body: dict[str, Any] = response.json()
    return body


async def unaffected_statuses(servers: Servers) -> dict[str, int]:
    async with grpc.aio.insecure_channel(servers.e2a_address) as channel:
        return {name: await health_check(channel, name) for name in SERVICE_NAMES}


@pytest.mark.asyncio
async def test_a_postgresql_outage_flips_readiness_and_back(cluster: Cluster) -> None:
    with log_records() as logs:
        async with (
            serving_with_a2a(
                a2a_postgres_url=cluster.url, a2a_store_probe_interval_seconds=QUICK_PROBE_SECONDS, metrics_port=0
            ) as servers,
            watched(servers) as watches,
            httpx.AsyncClient(timeout=10) as http,
        ):
            await all_until(watches, SERVING)
            assert "result" in await send_message(http, servers, "before")
            ready = await readyz(http, servers.a2a_url)
            assert (ready.status_code, ready.json()) == (
                200,
                {"ready": True, "draining": False, "dependencies": {"a2a_task_store": True}},
            )
            try:
                await asyncio.to_thread(cluster.stop)
                await all_until(watches, NOT_SERVING)
                not_ready = await readyz(http, servers.a2a_url)
                assert (not_ready.status_code, not_ready.json()) == (
                    503,
                    {"ready": False, "draining": False, "dependencies": {"a2a_task_store": False}},
                )
                assert (await readyz(http, servers.a2a_url, A2A_SERVICE_NAME)).status_code == 503
                assert (await readyz(http, servers.a2a_url, SERVICE_NAMES[0])).status_code == 200
                assert (await livez(http, servers.a2a_url)).status_code == 200
                assert await unaffected_statuses(servers) == dict.fromkeys(SERVICE_NAMES, SERVING)
                metrics = await readiness_metrics(http, servers.e2a.metrics_port)
                assert metrics == {"e2a_ready": 0, "e2a_dependency_ready{a2a_task_store}": 0}
            finally:
                await asyncio.to_thread(cluster.start)
            await all_until(watches, SERVING)
            assert (await readyz(http, servers.a2a_url)).status_code == 200
            metrics = await readiness_metrics(http, servers.e2a.metrics_port)
            assert metrics == {"e2a_ready": 1, "e2a_dependency_ready{a2a_task_store}": 1}
    # Many probes failed during the outage: one line said so, and one that it was over.
    (warning,) = logs.matching(logging.WARNING, UNREACHABLE)
    # The reason is the driver's, in one line, as the outage showed itself first (refused, shutting
    # down, the connection cut mid-query: the moment the probe ran decides).
    assert re.search(r"unreachable \(\w+: [^\n]+\): calls", warning), warning
    assert len(logs.matching(logging.INFO, ANSWERS_AGAIN)) == 1
    assert store_lines(logs) == [logging.WARNING, logging.INFO]  # the outage's one pair, from its one owner


@pytest.mark.asyncio
async def test_a_call_that_loses_its_connection_flips_readiness_at_once(cluster: Cluster) -> None:
    """The probe's interval is an hour: only the call's lost connection can have the database checked."""
    with log_records() as logs:
        async with (
            serving_with_a2a(a2a_postgres_url=cluster.url, a2a_store_probe_interval_seconds=3600) as servers,
            watched(servers) as watches,
            httpx.AsyncClient(timeout=10) as http,
        ):
            await all_until(watches, SERVING)
            assert "result" in await send_message(http, servers, "before")  # the pool keeps its connection
            try:
                await asyncio.to_thread(cluster.stop)
                assert "error" in await send_message(http, servers, "during")
                await all_until(watches, NOT_SERVING)
                assert (await readyz(http, servers.a2a_url)).status_code == 503
            finally:
                await asyncio.to_thread(cluster.start)
    assert len(logs.matching(logging.WARNING, UNREACHABLE)) == 1
    assert store_lines(logs)[0] == logging.WARNING


@pytest.mark.asyncio
async def test_a_sqlite_database_that_cannot_be_opened_flips_readiness_and_back(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    directory.mkdir()
    with log_records() as logs:
        async with (
            serving_with_a2a(
                a2a_sqlite_path=directory / "tasks.db", a2a_store_probe_interval_seconds=QUICK_PROBE_SECONDS
            ) as servers,
            watched(servers) as watches,
            httpx.AsyncClient(timeout=10) as http,
        ):
            await all_until(watches, SERVING)
            directory.rename(tmp_path / "away")  # a new connection cannot open the file
            try:
                await all_until(watches, NOT_SERVING)
                assert (await readyz(http, servers.a2a_url)).status_code == 503
                assert await unaffected_statuses(servers) == dict.fromkeys(SERVICE_NAMES, SERVING)
            finally:
                (tmp_path / "away").rename(directory)
            await all_until(watches, SERVING)
            assert (await readyz(http, servers.a2a_url)).status_code == 200
    (warning,) = logs.matching(logging.WARNING, UNREACHABLE)
    assert "unable to open database file" in warning, warning
    assert len(logs.matching(logging.INFO, ANSWERS_AGAIN)) == 1
    assert store_lines(logs) == [logging.WARNING, logging.INFO]  # the outage's one pair, from its one owner


@pytest.mark.asyncio
async def test_a_database_that_never_answers_counts_as_unreachable_once_the_probe_times_out() -> None:
    """A server that accepts the connection and says nothing (a hung database, a black-holing proxy)."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    engine = create_async_engine(f"postgresql+asyncpg://e2a@127.0.0.1:{port}/postgres")
    probe = TaskStoreProbe(engine, StoreHealth(), interval=3600, timeout=0.3)
    try:
        assert await within(probe.check()) == "no answer within 0.3 s"
        assert accepted, "the probe never connected"
    finally:
        await probe.stop()
        await engine.dispose()
        for writer in accepted:
            writer.close()
        listener.close()
        await listener.wait_closed()


@pytest.mark.asyncio
async def test_the_probe_endpoints_answer_whatever_the_a2a_request_checks_say() -> None:
    async with serving_with_a2a() as servers, httpx.AsyncClient(timeout=10) as http:
        url = servers.a2a_url
        # A version the A2A transports refuse, and a media type they refuse: no A2A check applies here.
        odd = {"A2A-Version": "9.9", "Content-Type": "text/csv"}
        ready = await http.get(url + READINESS_PATH, headers=odd)
        assert (ready.status_code, ready.json()) == (200, {"ready": True, "draining": False, "dependencies": {}})
        assert ready.headers["cache-control"] == "no-store"
        alive = await livez(http, url)
        assert (alive.status_code, alive.json()) == (200, {"alive": True})
        for_a2a = await readyz(http, url, A2A_SERVICE_NAME)
        assert (for_a2a.status_code, for_a2a.json()["service"]) == (200, A2A_SERVICE_NAME)
        unknown = await readyz(http, url, "no.such.Service")
        assert unknown.status_code == 404
        assert "no service 'no.such.Service'" in unknown.json()["error"] and A2A_SERVICE_NAME in unknown.json()["error"]
        posted = await http.post(url + READINESS_PATH, json={})
        assert (posted.status_code, posted.headers["allow"]) == (405, "GET, HEAD")
        head = await http.head(url + READINESS_PATH)
        assert (head.status_code, head.content) == (200, b"")
        # The memory store has no database: the A2A service needs nothing, on either gRPC port.
        for address in (servers.e2a_address, servers.a2a_grpc_address):
            async with grpc.aio.insecure_channel(address) as channel:
                assert await health_check(channel, A2A_SERVICE_NAME) == SERVING
                assert await health_check(channel, WHOLE_SERVER) == SERVING


def test_readyz_is_503_from_sigterm_on_while_livez_stays_200(tmp_path: Path) -> None:
    """The real drain (``serve``, SIGTERM): health and /readyz turn together, at once, and the lame-duck
    period leaves time to see it."""
    a2a_port = free_port()
    args = ("--a2a-port", str(a2a_port), "--grace-seconds", "5", "--lame-duck-seconds", "3")
    with (
        running_server_process(*args, log=tmp_path / "server.log") as (address, process, _),
        grpc.insecure_channel(address) as channel,
        httpx.Client(timeout=10) as http,
    ):
        url = f"http://127.0.0.1:{a2a_port}"
        assert http.get(url + READINESS_PATH).status_code == 200
        watch = health_pb2_grpc.HealthStub(channel).Watch  # type: ignore[attr-defined]  # the stubs list no methods
        statuses = watch(health_pb2.HealthCheckRequest(service=WHOLE_SERVER), timeout=10)
        assert next(statuses).status == SERVING
        process.send_signal(signal.SIGTERM)
        assert next(statuses).status == NOT_SERVING
        statuses.cancel()
        draining = http.get(url + READINESS_PATH)
        assert (draining.status_code, draining.json()["draining"]) == (503, True)
        assert http.get(url + "/livez").status_code == 200
        assert process.wait(10) == 0
