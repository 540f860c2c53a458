"""The publisher's linger (``nats_publish_linger_seconds``) against a real nats-server: frames gather
only behind frames in flight, and only until those are acknowledged, so that a lone frame (a
stream's first) and the frames of a stream that the broker keeps up with never wait for it."""

from __future__ import annotations

import asyncio

import pytest

from e2a_grpc.broker.frame_publisher import FramePublisher
from e2a_grpc.chat.events import Delta
from e2a_grpc.chat.frames import FrameBuilder, UtcClock
from e2a_grpc.model import DeltaKind, E2AEnvelope
from e2a_grpc.settings import ServerSettings
from tests.support.fakes import FAKE_INFO
from tests.support.nats_server import NatsServer
from tests.support.waiting import within

pytestmark = pytest.mark.timeout(60)
#: The longest linger the settings allow: a frame that waited for it would be stored a second late.
LINGER_SECONDS = 1.0


def _frames(request_id: str, words: int) -> list[bytes]:
    envelope = E2AEnvelope(method="chat.send", request_id=request_id, is_stream=True, params={"text": "x"})
    builder = FrameBuilder(envelope, FAKE_INFO, UtcClock())
    return [*(builder.delta(Delta(DeltaKind.TEXT, f"w{n} ")) for n in range(words)), builder.complete({})]


@pytest.mark.asyncio
async def test_frames_wait_for_the_linger_only_behind_frames_in_flight_and_only_until_their_acks(
    broker: NatsServer,
) -> None:
    publisher = FramePublisher.from_settings(
        ServerSettings(publish_nats=broker.url, nats_publish_linger_seconds=LINGER_SECONDS)
    )
    await publisher.start()
    loop = asyncio.get_running_loop()
    try:
        lone = _frames("linger-lone", 0)[0]
        stored = publisher.when_stored(lone)
        started = loop.time()
        await publisher.put(lone)
        assert await within(stored)
        assert loop.time() - started < LINGER_SECONDS / 2  # sent at once: nothing was in flight

        frames = _frames("linger-stream", 5)
        stored_all = [publisher.when_stored(frame) for frame in frames]
        started = loop.time()
        for frame in frames:  # each behind the ones in flight, which the broker acknowledges at once
            await publisher.put(frame)
        assert all(await within(asyncio.gather(*stored_all)))
        assert loop.time() - started < LINGER_SECONDS / 2
        assert publisher.published == 1 + len(frames)
    finally:
        await publisher.close(1.0)
