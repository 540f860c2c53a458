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
#: A linger no test outlives (the settings allow at most 1 s; the publisher itself takes any): a frame
#: that waited for it would never be stored within the test's bounded waits, however slow the machine,
#: and one that did not is stored as soon as the broker answers.
LINGER_SECONDS = 3600.0
SETTINGS = ServerSettings()


def _frames(request_id: str, words: int) -> list[bytes]:
    envelope = E2AEnvelope(method="chat.send", request_id=request_id, is_stream=True, params={"text": "x"})
    builder = FrameBuilder(envelope, FAKE_INFO, UtcClock())
    return [*(builder.delta(Delta(DeltaKind.TEXT, f"w{n} ")) for n in range(words)), builder.complete({})]


def _publisher(url: str) -> FramePublisher:
    """The publisher ``serve --publish-nats`` runs with the default settings, but its linger (past the
    settings' bound: ``model_copy`` does not validate)."""
    return FramePublisher.from_settings(
        SETTINGS.model_copy(update={"nats_publish_linger_seconds": LINGER_SECONDS}), url
    )


@pytest.mark.asyncio
async def test_frames_wait_for_the_linger_only_behind_frames_in_flight_and_only_until_their_acks(
    broker: NatsServer,
) -> None:
    publisher = _publisher(broker.url)
    await publisher.start()
    try:
        lone = _frames("linger-lone", 0)[0]
        stored = publisher.when_stored(lone)
        await publisher.put(lone)
        assert await within(stored)  # sent at once: nothing was in flight

        frames = _frames("linger-stream", 5)
        stored_all = [publisher.when_stored(frame) for frame in frames]
        for frame in frames:
            await publisher.put(frame)
            # The publisher sends it (and no ack can come back within one pass of the event loop), so
            # that the next one comes while it is in flight, and the broker acknowledges it at once.
            await asyncio.sleep(0)
        assert all(await within(asyncio.gather(*stored_all)))
        assert publisher.published == 1 + len(frames)
    finally:
        await publisher.close(1.0)
