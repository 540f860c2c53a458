"""The bus route's frames when nats-py's ordered consumer skips some (against a real nats-server):
nats-py checks an ordered consumer's sequence only on idle heartbeats, so messages pushed while the
connection was away are lost to it and the next one is handed on. The loss is injected here (the
first consumer's callback drops three frames); the gateway must read the request's frames again and
give the client each frame once, in order, with the request run once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from e2a_grpc.client import achat
from tests.broker.test_agent_worker import CountingEcho, _agent, _gateway, _request, _settings
from tests.support.agent_bus import running_worker
from tests.support.nats_server import NatsServer

pytestmark = [pytest.mark.timeout(60), pytest.mark.asyncio]
WORDS = 12
#: The first frame consumer's deliveries (1-based) that never reach the gateway.
LOST = frozenset({2, 3, 4})


async def test_frames_an_ordered_consumer_skipped_are_read_again_and_each_reaches_the_client_once(
    broker: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _settings(broker, _agent())
    subscribe = JetStreamContext.subscribe
    consumers = 0

    async def losing_subscribe(self: JetStreamContext, subject: str, **options: Any) -> Any:
        nonlocal consumers
        callback: Callable[[Msg], Awaitable[None]] | None = options.get("cb")
        if subject.startswith(f"{config.nats_subject_prefix}.") and callback is not None:
            consumers += 1
            if consumers == 1:

                async def losing(message: Msg) -> None:
                    if message.metadata.sequence.consumer not in LOST:
                        await callback(message)

                options["cb"] = losing
        return await subscribe(self, subject, **options)

    monkeypatch.setattr(JetStreamContext, "subscribe", losing_subscribe)
    backend = CountingEcho()
    async with running_worker(config, backend), _gateway(config) as channel:
        got = [frame async for frame in achat(channel, _request(WORDS))]
    assert [frame.sequence for frame in got] == list(range(WORDS + 1))
    assert got[-1].response_kind == "e2a.complete"
    assert consumers == 2  # the frames were read again once, on a second consumer
    assert backend.turns == 1
