"""Chat streams through a real nats-server (JetStream, file storage in a temporary directory) on
loopback: ``serve --publish-nats`` wiring in process (E2AServer with ``publish_nats``), the echo
backend, and subscribers rebuilding the streams with ``read_streams``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import nats
import nats.js.errors
import pytest
import pytest_asyncio

from e2a_grpc.broker import frame_messages, frame_publisher, stream_reader
from e2a_grpc.broker.frame_messages import NOT_PUBLISHED_DELTA
from e2a_grpc.chat.events import Complete, Delta, Event, TurnsNeverWait
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.client import achat
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse
from e2a_grpc.protocols import cloudevent_formats, cloudevents
from e2a_grpc.settings import ServerSettings
from tests.conftest import InProcessServer, in_process_server
from tests.support.fakes import FAKE_INFO
from tests.support.nats_server import NatsServer, running_nats_server, stored_messages

pytestmark = pytest.mark.timeout(120)
in_module_loop = pytest.mark.asyncio(loop_scope="module")
DEFAULTS = ServerSettings()
STREAM, PREFIX = DEFAULTS.nats_stream, DEFAULTS.nats_subject_prefix


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(broker: NatsServer) -> AsyncIterator[InProcessServer]:
    async with in_process_server(publish_nats=broker.url, echo_delay_seconds=0.0) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def channel(server: InProcessServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(server.address) as channel:
        yield channel


def _request(request_id: str, words: int, session_id: str | None = None) -> E2AEnvelope:
    text = " ".join(f"w{n}" for n in range(words))
    return E2AEnvelope(
        method="chat.send", request_id=request_id, session_id=session_id, is_stream=True, params={"text": text}
    )


async def _chat(channel: grpc.aio.Channel, envelope: E2AEnvelope) -> list[str]:
    return [frame.to_json() async for frame in achat(channel, envelope)]


async def _subscribe(broker: NatsServer, request_id: str, idle_timeout: float = 20.0) -> list[str]:
    frames = stream_reader.read_streams(
        broker.url, stream=STREAM, subject_prefix=PREFIX, request_id=request_id, idle_timeout=idle_timeout
    )
    return [frame.to_json() async for frame in frames]


async def _stored(broker: NatsServer, request_id: str) -> int:
    """How many messages the stream holds for one request (de-duplicated by the broker)."""
    return await stored_messages(broker.url, STREAM, stream_reader.streams_filter(PREFIX, request_id=request_id))


@in_module_loop
async def test_two_subscribers_get_the_same_stream_from_one_publish(
    broker: NatsServer, channel: grpc.aio.Channel
) -> None:
    subscribers = [asyncio.create_task(_subscribe(broker, "fan-out")) for _ in range(2)]
    sent = await _chat(channel, _request("fan-out", 40, session_id="s 1"))
    first, second = await asyncio.gather(*subscribers)
    assert first == second == sent
    assert len(sent) == 41  # a frame per word and the final one
    assert await _stored(broker, "fan-out") == len(sent)


@in_module_loop
async def test_a_subscriber_that_joins_after_the_stream_ended_gets_all_of_it(
    broker: NatsServer, server: InProcessServer, channel: grpc.aio.Channel
) -> None:
    sent = await _chat(channel, _request("late-join", 25))
    assert server.server.publisher is not None
    await server.server.publisher.flush()
    assert await _subscribe(broker, "late-join") == sent


@in_module_loop
async def test_a_slow_subscriber_holds_back_neither_chat_nor_the_publisher(
    broker: NatsServer, server: InProcessServer, channel: grpc.aio.Channel
) -> None:
    took_first = asyncio.Event()
    go_on = asyncio.Event()
    seen: list[E2AResponse] = []

    async def slow_reader() -> None:
        frames = stream_reader.read_streams(
            broker.url, stream=STREAM, subject_prefix=PREFIX, request_id="slow", idle_timeout=20.0
        )
        async for frame in frames:
            seen.append(frame)
            if len(seen) == 1:
                took_first.set()
                await go_on.wait()  # stops reading, without acking, until the stream is all out

    reader = asyncio.create_task(slow_reader())
    fast = asyncio.create_task(_subscribe(broker, "slow"))
    sent_task = asyncio.create_task(_chat(channel, _request("slow", 1500)))
    await took_first.wait()
    sent = await sent_task  # the Chat client got all 1,501 frames while the slow reader held one
    assert server.server.publisher is not None
    await server.server.publisher.flush()  # and the publisher got every ack
    assert len(seen) == 1
    assert await fast == sent  # a subscriber reading at full speed was not held back either
    go_on.set()
    await reader
    assert [frame.to_json() for frame in seen] == sent


@in_module_loop
async def test_a_frame_over_the_brokers_max_payload_has_a_stand_in_and_holds_back_no_later_frame(
    broker: NatsServer, server: InProcessServer, channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    # Just within the 1 MiB prompt limit (the text block the agent is sent, each '"' escaped), but a frame
    # echoing it, with its own fields around the text, is over NATS's 1 MiB default.
    quotes = (1024 * 1024 - len('[{"type":"text","text":""}]')) // 2
    too_big = E2AEnvelope(method="chat.send", request_id="too-big", is_stream=True, params={"text": '"' * quotes})
    sent = [json.loads(frame) for frame in await _chat(channel, too_big)]
    assert len(sent) == 2
    after = await _chat(channel, _request("after-too-big", 5))
    assert await _subscribe(broker, "after-too-big") == after
    chunk, final = [json.loads(frame) for frame in await _subscribe(broker, "too-big")]  # whole, and it ends
    assert [chunk["response_id"], final["response_id"]] == [frame["response_id"] for frame in sent]
    assert (chunk["sequence"], chunk["response_kind"], chunk["body"]["delta_kind"]) == (0, "e2a.chunk", "custom")
    assert "over the NATS server's max_payload" in chunk["body"]["delta"][NOT_PUBLISHED_DELTA]["reason"]
    assert (final["is_final"], final["status"], final["body"]["code"]) == (True, "failed", "frame_not_published")
    assert final["body"]["details"]["response_kind"] == "e2a.complete"
    assert sum("over the NATS server's max_payload" in record.message for record in caplog.records) == 2


@in_module_loop
async def test_a_frame_the_stream_refuses_for_good_has_a_stand_in_and_holds_back_no_later_frame(
    broker: NatsServer, server: InProcessServer, channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await nats.connect(broker.url)
    js = nc.jetstream()
    config = (await js.stream_info(STREAM)).config
    try:
        # Under NATS's max_payload, so sent, and refused by the stream with a 400 (message size).
        await js.update_stream(replace(config, max_msg_size=4096))
        refused = await _chat(channel, _request("refused-for-good", 2000))
        sent = await _chat(channel, _request("after-refused", 5))
        assert await _subscribe(broker, "after-refused") == sent
        assert server.server.publisher is not None
        await server.server.publisher.flush()  # returns: the refused frame no longer waits for an ack
    finally:
        await js.update_stream(config)
        await nc.close()
    published = await _subscribe(broker, "refused-for-good")
    assert published[:-1] == refused[:-1]  # every chunk; the final frame (the whole text) has a stand-in
    final = json.loads(published[-1])
    assert (final["response_id"], final["body"]["code"]) == (
        json.loads(refused[-1])["response_id"],
        "frame_not_published",
    )
    assert "the stream refused it" in final["body"]["details"]["reason"]
    assert sum("refused Chat frame" in record.message for record in caplog.records) == 1


@in_module_loop
async def test_a_publisher_that_cannot_make_its_stream_fails_to_start_and_disconnects(
    broker: NatsServer, server: InProcessServer
) -> None:
    # The server's stream already takes these subjects: a second stream over them is refused.
    publisher = frame_publisher.FramePublisher.from_settings(
        ServerSettings(publish_nats=broker.url, nats_stream="OVERLAPPING", nats_publish_queue=1)
    )
    with pytest.raises(nats.js.errors.NotFoundError):
        await publisher.start()
    assert publisher._nc is not None and publisher._nc.is_closed


@in_module_loop
async def test_a_stream_deleted_under_the_publisher_is_made_again(
    broker: NatsServer, server: InProcessServer, channel: grpc.aio.Channel
) -> None:
    nc = await nats.connect(broker.url)
    try:
        await nc.jetstream().delete_stream(STREAM)  # an operator removes it while the server runs
    finally:
        await nc.close()
    sent = await _chat(channel, _request("after-delete", 10))
    assert server.server.publisher is not None
    await server.server.publisher.flush()
    assert await _subscribe(broker, "after-delete") == sent


class PhasedBackend(TurnsNeverWait):
    """Streams ``words_per_phase`` words, then waits until the test lets the next phase go: so a test
    can stop the broker after phase 0, have phase 1's frames published into the outage, start the
    broker again and let phase 2 follow."""

    def __init__(self, phases: int, words_per_phase: int) -> None:
        self.info = FAKE_INFO
        self.words = [[f"p{phase}w{n} " for n in range(words_per_phase)] for phase in range(phases)]
        self.phase_done = [asyncio.Event() for _ in range(phases)]
        self.go = [asyncio.Event() for _ in range(phases)]

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        for phase, words in enumerate(self.words):
            await self.go[phase].wait()
            for word in words:
                yield Delta(DeltaKind.TEXT, word)
            self.phase_done[phase].set()
        yield Complete({"content": "".join(word for words in self.words for word in words)})

    async def aclose(self) -> None:
        pass


@pytest.fixture
def restartable_broker(tmp_path: Path) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path / "jetstream") as server:
        yield server


@pytest.mark.asyncio
async def test_a_broker_restart_during_a_stream_loses_no_frame(restartable_broker: NatsServer) -> None:
    broker = restartable_broker
    backend = PhasedBackend(phases=3, words_per_phase=40)
    async with (
        in_process_server(backend, publish_nats=broker.url) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        assert running.server.publisher is not None
        subscriber = asyncio.create_task(_subscribe(broker, "restart", idle_timeout=60.0))
        chat = asyncio.create_task(_chat(channel, _request("restart", 1)))
        backend.go[0].set()
        await backend.phase_done[0].wait()
        await asyncio.to_thread(broker.stop)  # the broker goes away in the middle of the stream ...
        backend.go[1].set()
        await backend.phase_done[1].wait()  # ... while the next 40 frames are written to the client
        await asyncio.to_thread(broker.start)  # (same port, same JetStream directory)
        backend.go[2].set()
        sent = await chat
        await running.server.publisher.flush()  # every frame acknowledged by the restarted broker
        assert len(sent) == 121
        assert await subscriber == sent  # the subscriber, connected across the restart, has them all
    assert await _stored(broker, "restart") == len(sent)  # each stored once


async def _store_shuffled_with_copies(broker: NatsServer, frames: list[E2AResponse]) -> None:
    """Store a stream's frames in the broker by hand, the second half first and backwards, some
    twice (under other message ids, so JetStream keeps both, as from a publisher that resent them)."""
    messages = [
        frame_messages.frame_message(frame, subject_prefix=PREFIX, type_prefix="io.e2a", source=None)
        for frame in frames
    ]
    order = [*reversed(messages[len(messages) // 2 :]), *messages, *messages[:3]]
    nc = await nats.connect(broker.url)
    try:
        js = nc.jetstream()
        for copy, message in enumerate(order):
            message_id = f"{message.headers[frame_messages.MSG_ID_HEADER]}-{copy}"
            await js.publish(
                message.subject, message.payload, headers={**message.headers, frame_messages.MSG_ID_HEADER: message_id}
            )
    finally:
        await nc.close()


@in_module_loop
async def test_a_subscriber_rebuilds_a_stream_stored_out_of_order_and_twice(broker: NatsServer) -> None:
    async with (
        in_process_server(echo_delay_seconds=0.0) as unpublished,  # a real stream, not published
        grpc.aio.insecure_channel(unpublished.address) as channel,
    ):
        frames = [frame async for frame in achat(channel, _request("shuffled", 12))]
    await _store_shuffled_with_copies(broker, frames)
    assert await _stored(broker, "shuffled") == len(frames) + len(frames) // 2 + 1 + 3
    assert await _subscribe(broker, "shuffled") == [frame.to_json() for frame in frames]


async def _publish_foreign_messages(broker: NatsServer, subject: str) -> int:
    """Messages another publisher puts on the frames' subjects: none is a frame of a Chat stream."""
    request = cloudevent_formats.to_http_binary(
        cloudevents.record_to_event(_request("foreign-request", 1), type_prefix="io.e2a")
    )
    response_without_request = cloudevent_formats.to_http_binary(
        cloudevents.record_to_event(E2AResponse(response_id="r-1", is_final=True), type_prefix="io.e2a")
    )
    messages: list[tuple[bytes, dict[str, str] | None]] = [
        (b"not a CloudEvent", None),
        (b"{not json", {**response_without_request.headers}),
        (request.body, request.headers),  # an E2A request: a Chat stream carries responses
        (response_without_request.body, response_without_request.headers),  # a response of no request
    ]
    nc = await nats.connect(broker.url)
    try:
        js = nc.jetstream()
        for payload, headers in messages:
            await js.publish(subject, payload, headers=headers)
    finally:
        await nc.close()
    return len(messages)


@in_module_loop
async def test_a_subscriber_skips_messages_that_are_not_frames_and_reads_on(
    broker: NatsServer, channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    foreign_subject = frame_messages.frame_subject(PREFIX, "shared", "intruder")
    foreign = await _publish_foreign_messages(broker, foreign_subject)
    sent = await _chat(channel, _request("after-foreign", 5, session_id="shared"))
    frames = stream_reader.read_streams(
        broker.url, stream=STREAM, subject_prefix=PREFIX, session_id="shared", idle_timeout=20.0
    )
    assert [frame.to_json() async for frame in frames] == sent
    skipped = [record.getMessage() for record in caplog.records if "skipped message" in record.getMessage()]
    assert len(skipped) == foreign
    assert all(f"on {foreign_subject}: not a frame of a Chat stream" in message for message in skipped)
    assert "mcptype" in skipped[2] and "no request_id" in skipped[3]


class _WindowWatch(frame_publisher.FramePublisher):
    """Records the most frames ever sent and not yet acknowledged."""

    most_unacked = 0

    async def _send(self, publish: Any) -> None:
        self.most_unacked = max(self.most_unacked, len(self._unacked))
        await super()._send(publish)


@pytest.mark.asyncio
@pytest.mark.parametrize("window", [1, 4])
async def test_the_publish_window_setting_bounds_the_frames_awaiting_their_ack(
    broker: NatsServer, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    monkeypatch.setattr(frame_publisher, "FramePublisher", _WindowWatch)  # what serve --publish-nats starts
    request_id = f"window-{window}"
    async with (
        in_process_server(
            publish_nats=broker.url, nats_publish_window=window, nats_publish_linger_seconds=0
        ) as running,
        grpc.aio.insecure_channel(running.address) as channel,
    ):
        sent = await _chat(channel, _request(request_id, 60))
        publisher = running.server.publisher
        assert isinstance(publisher, _WindowWatch)
        await publisher.flush()
        assert 1 <= publisher.most_unacked <= window
        assert publisher.published == len(sent)
    assert await _subscribe(broker, request_id) == sent
