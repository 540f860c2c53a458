"""The bounds on the work of one Chat request (``ServerSettings.chat_max_*``), in process.

Each limit is set small through the settings; when it is hit the stream ends with a clear final
``e2a.error`` frame (checked with the section 12 invariants by ``achat``) and the backend is stopped.
The fake backends (tests/support/fakes.py) never finish on their own, so only a limit ends them.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import grpc
import pytest

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.backends.echo import EchoBackend
from e2a_grpc.chat.events import Delta
from e2a_grpc.chat.prompt import read_prompt
from e2a_grpc.client.chat import achat
from e2a_grpc.grpc import chat_servicer
from e2a_grpc.model import ErrorCode
from tests.conftest import in_process_server
from tests.support.fakes import ControlledBackend, EndlessBackend
from tests.support.waiting import within


def _envelope(text: str = "hello", **params: Any) -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", request_id="req-limit", params={"text": text, **params})


async def _frames(envelope: E2AEnvelope, backend: Any = None, **settings: Any) -> list[E2AResponse]:
    """Every frame of one Chat call to a server with these settings (invariants checked by ``achat``)."""

    async def every_frame(channel: grpc.aio.Channel) -> list[E2AResponse]:
        return [frame async for frame in achat(channel, envelope, timeout=30)]

    async with in_process_server(backend, **settings) as running, grpc.aio.insecure_channel(running.address) as channel:
        return await within(every_frame(channel))


def _assert_limit_error(frame: E2AResponse, code: ErrorCode, details: dict[str, Any]) -> None:
    assert (frame.response_kind, frame.status, frame.is_final) == ("e2a.error", "failed", True)
    assert frame.body["code"] == code and frame.body["details"] == details
    assert "limit" in frame.body["message"] or "at most" in frame.body["message"]


# --- prompt size ------------------------------------------------------------------------------------


#: A text prompt reaches an agent as one text block: the limit counts these bytes around its text.
TEXT_BLOCK_BYTES = len('[{"type":"text","text":""}]')


@pytest.mark.asyncio
async def test_a_prompt_over_the_limit_gets_one_error_frame_and_reaches_no_backend() -> None:
    backend = ControlledBackend()
    # 51 characters but 102 UTF-8 bytes: the limit is on bytes.
    limit = TEXT_BLOCK_BYTES + 100
    (final,) = await _frames(_envelope("é" * 51), backend, chat_max_prompt_bytes=limit)
    _assert_limit_error(
        final, ErrorCode.PROMPT_TOO_LARGE, {"prompt_bytes": TEXT_BLOCK_BYTES + 102, "max_prompt_bytes": limit}
    )
    assert final.request_id == "req-limit" and final.sequence == 0
    assert backend.turns == []


@pytest.mark.asyncio
async def test_a_prompt_at_the_limit_is_answered() -> None:
    text = "é" * 50  # 100 bytes
    frames = await _frames(_envelope(text), chat_max_prompt_bytes=TEXT_BLOCK_BYTES + 100)
    assert frames[-1].body == {"result": {"content": text}}


def test_the_prompt_is_measured_as_the_acp_agent_is_sent_it() -> None:
    # The E2A spelling of a key (mime_type) reaches the agent in ACP's camelCase, as orjson writes it.
    blocks = [{"type": "text", "text": "hé"}, {"type": "image", "data": "AAAA", "mime_type": "image/png"}]
    sent = '[{"type":"text","text":"hé"},{"type":"image","data":"AAAA","mimeType":"image/png"}]'
    envelope = E2AEnvelope(method="session/prompt", params={"content_blocks": blocks})
    assert read_prompt(envelope).size_bytes == len(sent.encode())  # images count: the ACP agent gets them
    assert read_prompt(_envelope("hé")).size_bytes == len('[{"type":"text","text":"hé"}]'.encode())
    # A float as orjson writes it (the json module would write 1e-06).
    with_float = E2AEnvelope(params={"prompt": [{"type": "text", "text": "x", "_meta": {"w": 1e-6}}]})
    assert read_prompt(with_float).size_bytes == len('[{"type":"text","text":"x","_meta":{"w":1e-6}}]')


# --- frames per stream ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_frame_limit_stops_a_backend_that_never_ends() -> None:
    backend = EndlessBackend()
    frames = await _frames(_envelope(), backend, chat_max_frames=5)
    *chunks, final = frames
    assert len(frames) == 5 and all(frame.response_kind == "e2a.chunk" for frame in chunks)
    _assert_limit_error(final, ErrorCode.STREAM_FRAME_LIMIT, {"max_frames": 5})
    await within(backend.stopped.wait())  # its generator was closed
    assert backend.yielded == 5  # the fifth delta found no room and was not written


@pytest.mark.asyncio
async def test_a_stream_that_fits_the_frame_limit_completes() -> None:
    frames = await _frames(_envelope("a b c d"), chat_max_frames=5)  # 4 chunks and the result
    assert len(frames) == 5 and frames[-1].body == {"result": {"content": "a b c d"}}
    frames = await _frames(_envelope("a b c d e"), chat_max_frames=5)
    assert len(frames) == 5
    _assert_limit_error(frames[-1], ErrorCode.STREAM_FRAME_LIMIT, {"max_frames": 5})


# --- stream duration --------------------------------------------------------------------------------

#: Small enough to keep the tests fast; the tests wait for nothing but the limit.
TIME_LIMIT_SECONDS = 0.3


@pytest.mark.asyncio
async def test_the_time_limit_cancels_a_backend_that_never_ends() -> None:
    backend = EndlessBackend(deltas=1)
    chunk, final = await _frames(_envelope(), backend, chat_max_stream_seconds=TIME_LIMIT_SECONDS)
    assert chunk.response_kind == "e2a.chunk"
    _assert_limit_error(final, ErrorCode.STREAM_TIME_LIMIT, {"max_stream_seconds": TIME_LIMIT_SECONDS})
    await within(backend.stopped.wait())
    assert backend.cancelled.is_set()  # stopped at its await


@pytest.mark.asyncio
async def test_the_time_limit_stops_a_backend_that_never_awaits() -> None:
    """A backend that yields without ever awaiting gives a timer no chance: the servicer checks the clock."""
    backend = EndlessBackend()
    frames = await _frames(_envelope(), backend, chat_max_stream_seconds=TIME_LIMIT_SECONDS)
    assert len(frames) > 1
    _assert_limit_error(frames[-1], ErrorCode.STREAM_TIME_LIMIT, {"max_stream_seconds": TIME_LIMIT_SECONDS})
    await within(backend.stopped.wait())


@pytest.mark.asyncio
async def test_the_time_limit_ends_a_stream_whose_client_stopped_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that reads none could not get a final frame: once the time limit (and a grace) is up,
    the backend is stopped, and the call ends with a status the client sees after the frames gRPC held."""
    monkeypatch.setattr(chat_servicer, "STALLED_WRITE_GRACE_SECONDS", TIME_LIMIT_SECONDS)
    backend = EndlessBackend(delta_bytes=64 * 1024)  # flow control stops the writes within a few frames
    async with (
        in_process_server(backend, chat_max_stream_seconds=TIME_LIMIT_SECONDS) as running,
        # No BDP probing: the client's window stays at its initial size instead of growing with the
        # frames it gets (by how much depends on timing).
        grpc.aio.insecure_channel(running.address, options=[("grpc.http2.bdp_probe", 0)]) as channel,
    ):
        call = pb_grpc.AgentServiceStub(channel).Chat(pb.ChatRequest(envelope=_envelope().to_proto()), timeout=30)
        await within(call.read())  # one frame, then the client reads no more
        await within(backend.stopped.wait())
        yielded = backend.yielded
        held = []
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            while (reply := await within(call.read())) is not grpc.aio.EOF:
                assert isinstance(reply, pb.ChatResponse)
                held.append(E2AResponse.from_proto(reply.response))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert str(caught.value.details()).startswith("stream_time_limit: ")
    assert all(frame.response_kind == "e2a.chunk" for frame in held)
    assert yielded < 100  # flow control held the backend back: far fewer than the time allowed


# --- the echo backend's memory ----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_echo_backend_holds_one_piece_of_a_big_prompt_not_all_of_them() -> None:
    text = "word " * (1024 * 1024 // 5)  # 1 MiB: 209,715 pieces
    envelope = _envelope(text)
    stream = EchoBackend().stream(envelope, read_prompt(envelope))
    tracemalloc.start()
    try:
        first = await anext(stream)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await stream.aclose()
    assert isinstance(first, Delta) and first.delta == "word "
    # A list of every piece would take over 10 MB (a str object per piece, plus the list).
    assert peak < 64 * 1024, peak
