"""A NATS outage as an operator meets it (``serve --publish-nats``, a real nats-server stopped and started
again mid-stream): one WARNING when publishing starts failing and one INFO when it recovers, each with
the number of frames queued; ``e2a_nats_frames_*`` metrics of queued, published and dropped frames;
and gRPC health NOT_SERVING for Chat (and the server) while the publisher's queue is full, SERVING
again once it drained, ConversionService SERVING throughout; with ``--a2a-port``, ``/readyz`` 503 for
the server meanwhile, 200 for the A2A service, which never publishes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from e2a_grpc.a2a_server.server import A2A_SERVICE_NAME
from e2a_grpc.grpc.server import CHAT_SERVICE_NAME, SERVICE_NAMES
from tests.broker.test_jetstream import PhasedBackend, _chat, _request, _stored
from tests.conftest import in_process_server
from tests.support.log_records import log_records
from tests.support.nats_server import NatsServer, running_nats_server
from tests.support.readiness import (
    NOT_SERVING,
    SERVING,
    health_check,
    health_statuses,
    readiness_metrics,
    readyz,
    serving_with_a2a,
    until_status,
)
from tests.support.waiting import within

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio]
WORDS = 40
FAILING = "NATS publishing is failing"
RECOVERED = "NATS publishing recovered"
CONVERSION_SERVICE = SERVICE_NAMES[0]


@pytest.fixture
def restartable_broker(tmp_path: Path) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path / "jetstream") as server:
        yield server


async def _metrics(port: int | None) -> dict[str, float]:
    """The ``e2a_nats_frames_*`` samples /metrics serves, by name."""
    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("e2a_nats_frames_") and not sample.name.endswith("_created")
    }


async def test_an_outage_is_one_warning_one_info_and_the_metrics_count_the_frames_queued(
    restartable_broker: NatsServer,
) -> None:
    broker = restartable_broker
    backend = PhasedBackend(phases=3, words_per_phase=WORDS)
    with log_records(lambda record: FAILING in record.getMessage()) as logs:
        async with (
            in_process_server(
                backend, publish_nats=broker.url, metrics_port=0, nats_ack_timeout_seconds=0.5
            ) as running,
            grpc.aio.insecure_channel(running.address) as channel,
        ):
            publisher = running.server.publisher
            assert publisher is not None
            chat = asyncio.create_task(_chat(channel, _request("outage", 1)))
            backend.go[0].set()
            await within(backend.phase_done[0].wait())
            await within(publisher.flush())
            before = await _metrics(running.server.metrics_port)
            await asyncio.to_thread(broker.stop)  # the broker goes away mid-stream ...
            await within(logs.seen.wait())
            backend.go[1].set()
            await within(backend.phase_done[1].wait())  # ... while the next frames are written to the client
            during = await _metrics(running.server.metrics_port)
            await asyncio.to_thread(broker.start)  # (same port, same JetStream directory)
            backend.go[2].set()
            sent = await within(chat)
            await within(publisher.flush())
            after = await _metrics(running.server.metrics_port)
    assert before == {
        "e2a_nats_frames_queued": 0,
        "e2a_nats_frames_published_total": WORDS,
        "e2a_nats_frames_dropped_total": 0,
    }
    # Phase 1's frames wait (all but at most the one the servicer was handing over when the backend said done).
    assert WORDS - 1 <= during["e2a_nats_frames_queued"] <= WORDS
    assert during["e2a_nats_frames_published_total"] == WORDS
    assert after == {
        "e2a_nats_frames_queued": 0,
        "e2a_nats_frames_published_total": len(sent),
        "e2a_nats_frames_dropped_total": 0,
    }
    assert await _stored(broker, "outage") == len(sent) == 3 * WORDS + 1
    (warning,) = logs.matching(logging.WARNING, FAILING)
    assert "disconnected from the broker" in warning and "(0 queued now" in warning
    (recovered,) = logs.matching(logging.INFO, RECOVERED)
    assert "Chat frames queued" in recovered
    assert not logs.at_least(logging.ERROR), logs.at_least(logging.ERROR)


async def test_chat_is_not_serving_while_the_publish_queue_is_full_and_serving_once_it_drained(
    restartable_broker: NatsServer,
) -> None:
    broker = restartable_broker
    queue = 10
    backend = PhasedBackend(phases=2, words_per_phase=WORDS)
    backend.words[0] = backend.words[0][: queue // 2]  # phase 0 cannot fill the queue; phase 1 does, in the outage
    with log_records() as logs:
        async with (
            in_process_server(
                backend,
                publish_nats=broker.url,
                nats_publish_queue=queue,
                nats_publish_window=1,
                nats_ack_timeout_seconds=0.5,
            ) as running,
            grpc.aio.insecure_channel(running.address) as channel,
            contextlib.aclosing(health_statuses(channel, CHAT_SERVICE_NAME)) as chat_health,
            contextlib.aclosing(health_statuses(channel, "")) as server_health,
        ):
            publisher = running.server.publisher
            assert publisher is not None
            await within(until_status(chat_health, SERVING))
            await within(until_status(server_health, SERVING))
            chat = asyncio.create_task(_chat(channel, _request("backlog", 1)))
            backend.go[0].set()
            await within(backend.phase_done[0].wait())
            await within(publisher.flush())
            await asyncio.to_thread(broker.stop)
            backend.go[1].set()  # 40 frames for a queue of 10 and a window of 1: the queue fills
            await within(until_status(chat_health, NOT_SERVING))
            await within(until_status(server_health, NOT_SERVING))
            assert publisher.backlogged and publisher.queued >= queue
            assert await health_check(channel, CONVERSION_SERVICE) == SERVING
            await asyncio.to_thread(broker.start)
            await within(until_status(chat_health, SERVING))
            await within(until_status(server_health, SERVING))
            sent = await within(chat)
            await within(publisher.flush())
            assert not publisher.backlogged and publisher.dropped == 0
    assert await _stored(broker, "backlog") == len(sent) == queue // 2 + WORDS + 1
    assert len(logs.matching(logging.WARNING, "publish queue is full")) == 1
    assert len(logs.matching(logging.INFO, "publish queue has room again")) == 1
    assert len(logs.matching(logging.WARNING, FAILING)) == 1


async def test_with_the_a2a_server_readyz_is_503_while_the_publish_queue_is_full_and_200_once_it_drained(
    restartable_broker: NatsServer,
) -> None:
    """The broker's rule is readiness's one rule: /readyz on the A2A port follows the server's health."""
    broker = restartable_broker
    queue = 10
    backend = PhasedBackend(phases=2, words_per_phase=WORDS)
    backend.words[0] = backend.words[0][: queue // 2]
    async with (
        serving_with_a2a(
            backend,
            publish_nats=broker.url,
            nats_publish_queue=queue,
            nats_publish_window=1,
            nats_ack_timeout_seconds=0.5,
            metrics_port=0,
        ) as servers,
        grpc.aio.insecure_channel(servers.e2a_address) as channel,
        contextlib.aclosing(health_statuses(channel, "")) as server_health,
        httpx.AsyncClient(timeout=10) as http,
    ):
        publisher = servers.e2a.publisher
        assert publisher is not None
        await within(until_status(server_health, SERVING))
        assert (await readyz(http, servers.a2a_url)).json()["dependencies"] == {"nats_broker": True}
        chat = asyncio.create_task(_chat(channel, _request("readyz", 1)))
        backend.go[0].set()
        await within(backend.phase_done[0].wait())
        await within(publisher.flush())
        await asyncio.to_thread(broker.stop)
        backend.go[1].set()  # 40 frames for a queue of 10 and a window of 1: the queue fills
        await within(until_status(server_health, NOT_SERVING))
        not_ready = await readyz(http, servers.a2a_url)
        assert (not_ready.status_code, not_ready.json()) == (
            503,
            {"ready": False, "draining": False, "dependencies": {"nats_broker": False}},
        )
        assert (await readyz(http, servers.a2a_url, CHAT_SERVICE_NAME)).status_code == 503
        assert (await readyz(http, servers.a2a_url, A2A_SERVICE_NAME)).status_code == 200
        assert await readiness_metrics(http, servers.e2a.metrics_port) == {
            "e2a_ready": 0,
            "e2a_dependency_ready{nats_broker}": 0,
        }
        await asyncio.to_thread(broker.start)
        await within(until_status(server_health, SERVING))
        assert (await readyz(http, servers.a2a_url)).status_code == 200
        await within(chat)
        await within(publisher.flush())
