"""The bus route's frames when its plain subscription misses some (against a real nats-server).

The gateway reads a request's frames on a plain NATS subscription, which misses what is published
while its connection is away (or what it drops as a slow consumer). The loss is injected here (the
subscription's callback drops frames); the gateway must read the request's frames from JetStream and
give the client each frame once, in order, with the request run once. nats-py's ordered consumer,
which then reads them, has its own loss (it checks its sequence only on idle heartbeats), injected
the same way."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import grpc
import nats.errors
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from e2a_grpc.backends.bus import BusBackend
from e2a_grpc.broker.agent_requests import MISSED_NOTICES, read_notice
from e2a_grpc.client import achat
from e2a_grpc.settings import AgentWorkerSettings
from tests.broker.test_agent_worker import PROGRESS, CountingEcho, _agent, _gateway, _request, _settings
from tests.conftest import in_process_server
from tests.support.agent_bus import running_worker
from tests.support.nats_server import NatsServer

pytestmark = [pytest.mark.timeout(60), pytest.mark.asyncio]
WORDS = 12
Callback = Callable[[Msg], Awaitable[None]]


class _Losses:
    """Counts the subscriptions to frame subjects of each kind (plain, JetStream), and drops the
    frames ``lost(delivery number, sequence)`` names on the first one of the kind ``stored`` says."""

    def __init__(self, config: AgentWorkerSettings, lost: Callable[[int, int], bool], stored: bool) -> None:
        self._prefix = f"{config.nats_subject_prefix}."
        self._lost = lost
        self._stored = stored
        self.plain = 0
        self.stored = 0

    def wrap(self, subject: str, callback: Callback | None, *, stored: bool) -> Callback | None:
        if not subject.startswith(self._prefix) or callback is None:
            return callback
        if stored:
            self.stored += 1
        else:
            self.plain += 1
        if stored is not self._stored or (self.stored if stored else self.plain) != 1:
            return callback
        delivered = 0

        async def losing(message: Msg) -> None:
            nonlocal delivered
            if read_notice(message.headers) is None:
                delivered += 1
                if self._lost(delivered, int((message.headers or {})["ce-seq"])):
                    return
            await callback(message)

        return losing


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[AgentWorkerSettings, Any, bool], _Losses]]:
    def patch(config: AgentWorkerSettings, lost: Callable[[int, int], bool], stored: bool) -> _Losses:
        losses = _Losses(config, lost, stored)
        plain, js = NatsClient.subscribe, JetStreamContext.subscribe

        async def plain_subscribe(self: NatsClient, subject: str, *args: Any, **options: Any) -> Any:
            options["cb"] = losses.wrap(subject, options.get("cb"), stored=False)
            return await plain(self, subject, *args, **options)

        async def js_subscribe(self: JetStreamContext, subject: str, **options: Any) -> Any:
            options["cb"] = losses.wrap(subject, options.get("cb"), stored=True)
            return await js(self, subject, **options)

        monkeypatch.setattr(NatsClient, "subscribe", plain_subscribe)
        monkeypatch.setattr(JetStreamContext, "subscribe", js_subscribe)
        return losses

    yield patch


async def test_frames_the_plain_subscription_missed_are_read_from_jetstream_at_once_and_reach_the_client_once(
    broker: NatsServer, patched: Callable[[AgentWorkerSettings, Any, bool], _Losses]
) -> None:
    config = _settings(broker, _agent())
    losses = patched(config, lambda delivered, sequence: delivered in {2, 3, 4}, False)
    backend = CountingEcho()
    async with running_worker(config, backend), _gateway(config) as channel:
        started = time.monotonic()
        got = [frame async for frame in achat(channel, _request(WORDS))]
        took = time.monotonic() - started
    assert [frame.sequence for frame in got] == list(range(WORDS + 1))
    assert got[-1].response_kind == "e2a.complete"
    assert (losses.plain, losses.stored) == (1, 1)  # read from JetStream once, on the first gap
    assert took < PROGRESS  # at the gap, not after a progress interval's wait
    assert backend.turns == 1


async def test_a_final_frame_the_plain_subscription_missed_is_read_from_jetstream_after_the_silence(
    broker: NatsServer, patched: Callable[[AgentWorkerSettings, Any, bool], _Losses]
) -> None:
    config = _settings(broker, _agent())
    # Nothing comes after the final frame to show the gap: the worker's silence does, once its
    # stored final frame says it was not lost.
    losses = patched(config, lambda delivered, sequence: sequence == WORDS, False)
    backend = CountingEcho()
    async with running_worker(config, backend), _gateway(config) as channel:
        got = [frame async for frame in achat(channel, _request(WORDS))]
    assert [frame.sequence for frame in got] == list(range(WORDS + 1))
    assert got[-1].response_kind == "e2a.complete"
    assert (losses.plain, losses.stored) == (1, 1)
    assert backend.turns == 1


async def test_frames_an_ordered_consumer_skipped_are_read_again_and_each_reaches_the_client_once(
    broker: NatsServer, patched: Callable[[AgentWorkerSettings, Any, bool], _Losses]
) -> None:
    config = _settings(broker, _agent())
    # The plain subscription loses frame 1 (the gateway turns to JetStream); the first ordered
    # consumer then skips frames 1-3 as nats-py's does after a reconnect.
    plain_losses = patched(config, lambda delivered, sequence: sequence == 1, False)
    stored_losses = patched(config, lambda delivered, sequence: sequence in {1, 2, 3}, True)
    backend = CountingEcho()
    async with running_worker(config, backend), _gateway(config) as channel:
        got = [frame async for frame in achat(channel, _request(WORDS))]
    assert [frame.sequence for frame in got] == list(range(WORDS + 1))
    assert got[-1].response_kind == "e2a.complete"
    assert plain_losses.plain == stored_losses.plain == 1
    assert plain_losses.stored == stored_losses.stored == 2  # read again once, on a second consumer
    assert backend.turns == 1


@pytest.mark.parametrize("sign", ["reconnected", "slow consumer"])
async def test_a_sign_of_loss_reads_a_lost_final_frame_from_jetstream_without_waiting_for_the_silence(
    broker: NatsServer, monkeypatch: pytest.MonkeyPatch, sign: str
) -> None:
    config = _settings(broker, _agent(), bus_progress_seconds=2.0, bus_ack_wait_seconds=6.0)
    route = BusBackend(config.agent_id, config)
    plain = NatsClient.subscribe
    told: list[asyncio.Task[None]] = []

    async def subscribe(self: NatsClient, subject: str, *args: Any, **options: Any) -> Any:
        callback: Callback | None = options.get("cb")
        if not subject.startswith(f"{config.nats_subject_prefix}.") or callback is None:
            return await plain(self, subject, *args, **options)
        subscription: Subscription | None = None

        async def losing(message: Msg) -> None:
            if (message.headers or {}).get("ce-seq") != str(WORDS):
                await callback(message)
                return
            # The final frame is lost, as to a connection that was away; nats-py then tells the bus.
            assert subscription is not None
            if sign == "reconnected":
                told.append(asyncio.create_task(route.bus._reconnected()))
            else:
                error = nats.errors.SlowConsumerError(message.subject, message.reply, subscription._id, subscription)
                told.append(asyncio.create_task(route.bus._connection_error(error)))

        options["cb"] = losing
        subscription = await plain(self, subject, *args, **options)
        return subscription

    monkeypatch.setattr(NatsClient, "subscribe", subscribe)
    backend = CountingEcho()
    async with (
        running_worker(config, backend),
        in_process_server(backend=route) as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        started = time.monotonic()
        got = [frame async for frame in achat(channel, _request(WORDS))]
        took = time.monotonic() - started
    assert [frame.sequence for frame in got] == list(range(WORDS + 1))
    assert got[-1].response_kind == "e2a.complete"
    assert len(told) == 1
    assert took < MISSED_NOTICES * config.bus_progress_seconds  # read at the sign, not after the silence
    assert backend.turns == 1
