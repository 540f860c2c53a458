"""Chat routed by agent: the routing table (``--agent``), NOT_FOUND for an unknown agent, the default
agent, and the ``grpc://`` route to an upstream E2A service.

The upstream is either the project's own server in process (a second ``E2AServer``, port 0) or a fake
``AgentService`` that records what it was sent (metadata, deadline, cancel) and writes the frames a
test gives it, broken ones included.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from e2a.v1 import agent_service_pb2 as pb
from e2a.v1 import agent_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.backends.upstream import CANCEL_TASK_TIMEOUT_SECONDS
from e2a_grpc.chat.events import AgentBackend, BackendError, BackendInfo, Complete, Delta, InputRequired, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.client.chat import achat
from e2a_grpc.errors import NoWaitingTaskError, UnknownAgentError
from e2a_grpc.grpc.chat_servicer import BACKEND_TURN_SPAN, ChatServicer, add_chat_service
from e2a_grpc.grpc.server import E2AServer
from e2a_grpc.grpc.status import AGENT_UNAVAILABLE_REASON, UNKNOWN_AGENT_REASON, no_waiting_task, unknown_agent
from e2a_grpc.model import DeltaKind, ErrorCode, WaitReason
from tests.conftest import InProcessServer, in_process_server, server_config
from tests.support.certificates import loopback_server_certificate, make_ca
from tests.support.fakes import ControlledBackend
from tests.support.processes import free_port
from tests.support.status import status_detail
from tests.support.waiting import within

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
UPSTREAM_TOKEN = "upstream-secret"
#: The deadline of the call that tests that a deadline ends the upstream call.
DEADLINE_SECONDS = 2.5


def _envelope(text: str = "route me", **fields: Any) -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", params={"text": text}, **fields)


async def _frames(address: str, envelope: E2AEnvelope, **options: Any) -> list[E2AResponse]:
    """Every frame of one Chat call; ``achat`` checks the section 12 invariants as they arrive."""
    async with grpc.aio.insecure_channel(address) as channel:
        return [frame async for frame in achat(channel, envelope, **options)]


async def _status_of(address: str, envelope: E2AEnvelope) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await _frames(address, envelope, timeout=30)
    return raised.value


def _content(frame: E2AResponse) -> E2AResponse:
    """A frame without what each service writes for itself: ids, time, provenance."""
    own = ("request_id", "response_id", "timestamp", "provenance", "metadata")
    return dataclasses.replace(frame, **{name: getattr(E2AResponse(), name) for name in own})


# --- routing by agent id -----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _two_agents(**overrides: Any) -> AsyncIterator[tuple[InProcessServer, ControlledBackend]]:
    """A gateway whose table has ``writer`` (echo) and ``reviewer`` (a fake backend that answers at once)."""
    async with in_process_server(agent=["writer=local:echo", "reviewer=local:echo"], **overrides) as gateway:
        reviewer = ControlledBackend(before=(), after=("reviewed",))
        reviewer.release.set()
        routes = gateway.server.chat.routes
        assert routes is not None
        routes.backends["reviewer"] = reviewer
        yield gateway, reviewer


@pytest.mark.asyncio
async def test_a_request_reaches_the_agent_it_names() -> None:
    async with _two_agents() as (gateway, reviewer):
        echoed = await _frames(gateway.address, _envelope("to the writer", agent_id="writer"), timeout=30)
        reviewed = await _frames(gateway.address, _envelope("to the reviewer", agent_id="reviewer"), timeout=30)
    assert echoed[-1].body == {"result": {"content": "to the writer"}}
    assert echoed[-1].provenance.converter == "e2a_grpc.chat:echo"
    assert reviewed[-1].body == {"result": {"content": "reviewed"}}
    assert reviewed[-1].provenance.converter == "e2a_grpc.chat:fake"
    assert [turn.envelope.agent_id for turn in reviewer.turns] == ["reviewer"]


@pytest.mark.asyncio
async def test_a_request_without_agent_id_reaches_the_default_agent() -> None:
    async with _two_agents(default_agent="reviewer") as (gateway, reviewer):
        frames = await _frames(gateway.address, _envelope(), timeout=30)
    assert frames[-1].body == {"result": {"content": "reviewed"}} and len(reviewer.turns) == 1


@pytest.mark.asyncio
async def test_without_default_agent_the_first_of_the_table_is_it() -> None:
    async with _two_agents() as (gateway, reviewer):
        frames = await _frames(gateway.address, _envelope("first"), timeout=30)
    assert frames[-1].body == {"result": {"content": "first"}} and not reviewer.turns


@pytest.mark.asyncio
async def test_an_unknown_agent_gets_not_found_naming_the_known_ones() -> None:
    async with _two_agents() as (gateway, reviewer):
        error = await _status_of(gateway.address, _envelope(agent_id="critic"))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert "'critic'" in (error.details() or "") and "writer, reviewer" in (error.details() or "")
    resource = status_detail(error, error_details_pb2.ResourceInfo)
    assert (resource.resource_type, resource.resource_name) == ("e2a agent", "critic")
    info = status_detail(error, error_details_pb2.ErrorInfo)
    assert info.reason == UNKNOWN_AGENT_REASON
    assert dict(info.metadata) == {"agent_id": "critic", "known_agent_ids": "writer,reviewer"}
    assert not reviewer.turns


@pytest.mark.asyncio
async def test_without_a_table_every_agent_id_reaches_the_one_backend_as_before() -> None:
    async with in_process_server() as server:
        frames = await _frames(server.address, _envelope("anyone", agent_id="no-such-table"), timeout=30)
    assert frames[-1].body == {"result": {"content": "anyone"}}


# --- the grpc:// route: a fake upstream ----------------------------------------------------------------


@dataclass
class _UpstreamCall:
    """One call as the fake upstream received it."""

    envelope: E2AEnvelope
    metadata: dict[str, str]
    time_remaining: float | None
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


FrameScript = Callable[[E2AEnvelope], Sequence[E2AResponse]]


class _FakeUpstream(pb_grpc.AgentServiceServicer):
    """Writes ``script(envelope)``'s frames; with ``hold``, then waits until the call is cancelled.
    CancelTask is recorded with its metadata and deadline, and answered OK or ``cancel_status``."""

    def __init__(self, script: FrameScript, *, hold: bool = False, cancel_status: grpc.Status | None = None) -> None:
        self.script = script
        self.hold = hold
        self.cancel_status = cancel_status
        self.calls: list[_UpstreamCall] = []
        self.called = asyncio.Event()
        self.cancels: list[tuple[pb.CancelTaskRequest, dict[str, str], float | None]] = []

    async def CancelTask(
        self,
        request: pb.CancelTaskRequest,
        context: grpc.aio.ServicerContext[pb.CancelTaskRequest, pb.CancelTaskResponse],
    ) -> pb.CancelTaskResponse:
        metadata = {key: str(value) for key, value in context.invocation_metadata() or ()}
        self.cancels.append((request, metadata, context.time_remaining()))
        if self.cancel_status is not None:
            await context.abort_with_status(self.cancel_status)
        return pb.CancelTaskResponse()

    async def Chat(
        self, request: pb.ChatRequest, context: grpc.aio.ServicerContext[pb.ChatRequest, pb.ChatResponse]
    ) -> AsyncIterator[pb.ChatResponse]:
        envelope = E2AEnvelope.from_proto(request.envelope)
        metadata = {key: str(value) for key, value in context.invocation_metadata() or ()}
        call = _UpstreamCall(envelope, metadata, context.time_remaining())
        self.calls.append(call)
        try:
            for frame in self.script(envelope):
                yield pb.ChatResponse(response=frame.to_proto())
            self.called.set()
            if self.hold:
                await asyncio.Event().wait()  # until the gateway cancels the call
        except asyncio.CancelledError:
            call.cancelled.set()
            raise


@contextlib.asynccontextmanager
async def _fake_upstream(servicer: _FakeUpstream) -> AsyncIterator[str]:
    server = grpc.aio.server()
    pb_grpc.add_AgentServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        await server.stop(None)


def _built(
    envelope: E2AEnvelope, events: Sequence[Delta | Passthrough | Complete | InputRequired]
) -> list[E2AResponse]:
    """The frames an E2A service writes for ``events`` (the upstream's own FrameBuilder)."""
    builder = FrameBuilder(envelope, BackendInfo("acp", "acp"), UtcClock())
    return [frame_record(builder.for_event(event)) for event in events]


UPSTREAM_EVENTS: list[Delta | Passthrough | Complete | InputRequired] = [
    Delta(DeltaKind.TEXT, "hel"),
    Passthrough("acp.session_update", {"sessionUpdate": "plan", "entries": []}),
    Delta(DeltaKind.REASONING, {"step": 1}, "application/json"),
    Complete({"content": "hello"}),
]


@contextlib.asynccontextmanager
async def _gateway_to(target: str, **overrides: Any) -> AsyncIterator[InProcessServer]:
    async with in_process_server(agent=[f"up={target}"], **overrides) as gateway:
        yield gateway


@pytest.mark.asyncio
async def test_upstream_frames_come_back_with_the_same_content_and_the_gateways_ids(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("E2A_TEST_UPSTREAM_TOKEN", UPSTREAM_TOKEN)
    upstream = _FakeUpstream(lambda envelope: _built(envelope, UPSTREAM_EVENTS))
    async with _fake_upstream(upstream) as target:
        table = tmp_path / "agents.toml"
        table.write_text(f'[agents.up]\ntarget = "{target}"\ntoken_env = "E2A_TEST_UPSTREAM_TOKEN"\n')
        async with in_process_server(agents=table) as gateway:
            request = _envelope(agent_id="up", session_id="s-1")
            frames = await _frames(gateway.address, request, timeout=30, metadata=(("traceparent", TRACEPARENT),))
    (call,) = upstream.calls
    assert call.metadata["authorization"] == f"Bearer {UPSTREAM_TOKEN}"  # its own token, from token_env
    assert call.metadata["traceparent"] == TRACEPARENT
    # The caller's deadline, sent on (grpc-timeout's encoding may round it up a little).
    assert call.time_remaining is not None and 0 < call.time_remaining <= 30.5
    # The upstream was sent the request id of the gateway's frames (one the gateway assigned here).
    assert call.envelope.request_id == frames[0].request_id
    assert dataclasses.replace(call.envelope, request_id=None) == request
    expected = _built(request, UPSTREAM_EVENTS)
    assert [_content(frame) for frame in frames] == [_content(frame) for frame in expected]
    assert all(frame.provenance.details == {"upstream": target} for frame in frames)


@pytest.mark.asyncio
async def test_a_waiting_upstream_turn_ends_the_gateways_turn_waiting_too() -> None:
    question = InputRequired(WaitReason.PERMISSION, "May I?", {"content": ""}, options=({"option_id": "yes"},))
    upstream = _FakeUpstream(lambda envelope: _built(envelope, [Delta(DeltaKind.TEXT, "x"), question]))
    async with _fake_upstream(upstream) as target, _gateway_to(target) as gateway:
        frames = await _frames(gateway.address, _envelope(agent_id="up", task_id="t-1"), timeout=30)
    assert frames[-1].response_kind == "e2a.input_required" and frames[-1].body == question.body()


@pytest.mark.asyncio
async def test_a_client_cancel_reaches_the_upstream() -> None:
    upstream = _FakeUpstream(lambda envelope: _built(envelope, [Delta(DeltaKind.TEXT, "first")]), hold=True)
    async with (
        _fake_upstream(upstream) as target,
        _gateway_to(target) as gateway,
        grpc.aio.insecure_channel(gateway.address) as channel,
    ):
        stub = pb_grpc.AgentServiceStub(channel)
        call = stub.Chat(pb.ChatRequest(envelope=_envelope(agent_id="up").to_proto()), timeout=30)
        first = await call.read()
        assert isinstance(first, pb.ChatResponse) and first.response.body
        await within(upstream.called.wait())
        call.cancel()
        await within(upstream.calls[0].cancelled.wait())


@pytest.mark.asyncio
async def test_the_callers_deadline_ends_the_upstream_call() -> None:
    upstream = _FakeUpstream(lambda envelope: _built(envelope, [Delta(DeltaKind.TEXT, "first")]), hold=True)
    async with _fake_upstream(upstream) as target, _gateway_to(target) as gateway:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            # Long enough for the upstream call to start on a busy machine; the test waits it out.
            await _frames(gateway.address, _envelope(agent_id="up"), timeout=DEADLINE_SECONDS)
        await within(upstream.calls[0].cancelled.wait())
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    remaining = upstream.calls[0].time_remaining
    assert remaining is not None and remaining <= DEADLINE_SECONDS


def _resequenced(frames: Sequence[E2AResponse], index: int, **changes: Any) -> list[E2AResponse]:
    return [
        dataclasses.replace(frame, **changes) if position == index else frame for position, frame in enumerate(frames)
    ]


@pytest.mark.parametrize(
    ("script", "code", "problem"),
    [
        (
            lambda envelope: _resequenced(_built(envelope, UPSTREAM_EVENTS), 1, sequence=7),
            ErrorCode.BACKEND_INVALID_OUTPUT,
            "sequence 7, expected 1",
        ),
        (
            lambda envelope: _resequenced(_built(envelope, UPSTREAM_EVENTS), 2, request_id="not-mine"),
            ErrorCode.BACKEND_INVALID_OUTPUT,
            "request_id 'not-mine'",
        ),
        (
            lambda envelope: _built(envelope, UPSTREAM_EVENTS[:2]),
            ErrorCode.BACKEND_INCOMPLETE,
            "without a final frame",
        ),
    ],
)
@pytest.mark.asyncio
async def test_a_broken_upstream_stream_ends_with_a_final_error_frame_naming_the_upstream(
    script: FrameScript, code: ErrorCode, problem: str
) -> None:
    upstream = _FakeUpstream(script)
    async with _fake_upstream(upstream) as target, _gateway_to(target) as gateway:
        frames = await _frames(gateway.address, _envelope(agent_id="up"), timeout=30)
    final = frames[-1]
    assert (final.response_kind, final.body["code"]) == ("e2a.error", code)
    assert target in final.body["message"] and problem in final.body["message"]
    assert final.body["details"]["upstream"] == target


@pytest.mark.asyncio
async def test_an_unreachable_upstream_gets_unavailable_naming_agent_and_upstream() -> None:
    target = f"grpc://127.0.0.1:{free_port()}"  # nothing listens there
    async with _gateway_to(target) as gateway:
        error = await _status_of(gateway.address, _envelope(agent_id="up"))
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert "agent 'up' is unavailable" in (error.details() or "") and target in (error.details() or "")
    info = status_detail(error, error_details_pb2.ErrorInfo)
    assert (info.reason, dict(info.metadata)) == (AGENT_UNAVAILABLE_REASON, {"agent_id": "up"})


@pytest.mark.asyncio
async def test_an_upstream_that_goes_away_mid_stream_ends_with_a_final_frame_naming_it() -> None:
    upstream = _FakeUpstream(lambda envelope: _built(envelope, [Delta(DeltaKind.TEXT, "first")]), hold=True)
    server = grpc.aio.server()
    pb_grpc.add_AgentServiceServicer_to_server(upstream, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    target = f"grpc://127.0.0.1:{port}"
    try:
        async with _gateway_to(target) as gateway:
            reading = asyncio.create_task(_frames(gateway.address, _envelope(agent_id="up"), timeout=30))
            await within(upstream.called.wait())
            await server.stop(None)  # the upstream is gone, its call with it
            frames = await within(reading)
    finally:
        await server.stop(None)
    final = frames[-1]
    assert [frame.body.get("delta") for frame in frames[:-1]] == ["first"]
    assert final.response_kind == "e2a.error"
    assert final.body["code"] in (ErrorCode.AGENT_UNAVAILABLE, ErrorCode.UPSTREAM_ERROR)
    assert target in final.body["message"] and "after 1 frames" in final.body["message"]


# --- the grpc:// route: the project's own server as the upstream -----------------------------------


@pytest.mark.asyncio
async def test_the_projects_own_server_as_upstream_takes_the_routes_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("E2A_TEST_UPSTREAM_TOKEN", UPSTREAM_TOKEN)
    table = tmp_path / "agents.toml"
    async with in_process_server(token=UPSTREAM_TOKEN) as upstream:
        target = f"grpc://{upstream.address}"
        table.write_text(f'[agents.up]\ntarget = "{target}"\ntoken_env = "E2A_TEST_UPSTREAM_TOKEN"\n')
        request = _envelope("two words", agent_id="up")
        bearer = (("authorization", f"Bearer {UPSTREAM_TOKEN}"),)
        direct = await _frames(upstream.address, request, timeout=30, metadata=bearer)
        async with in_process_server(agents=table) as gateway:
            routed = await _frames(gateway.address, request, timeout=30)
        async with _gateway_to(target) as tokenless_gateway:
            refused = await _frames(tokenless_gateway.address, request, timeout=30)
    assert [_content(frame) for frame in routed] == [_content(frame) for frame in direct]
    # Without its token the upstream refuses the call: a final frame says so, naming the upstream.
    (final,) = refused
    assert final.body["code"] == ErrorCode.UPSTREAM_ERROR and final.body["details"]["grpc_status"] == "UNAUTHENTICATED"
    assert target in final.body["message"]


@pytest.mark.asyncio
async def test_a_grpcs_upstream_is_trusted_by_the_routes_own_ca_and_refused_by_another(tmp_path: Path) -> None:
    ca, other_ca = make_ca(tmp_path, "upstream-ca"), make_ca(tmp_path, "other-ca")
    cert, key = loopback_server_certificate(ca, tmp_path)
    table = tmp_path / "agents.toml"
    request = _envelope("over tls", agent_id="up")
    async with in_process_server(tls_cert=cert, tls_key=key) as upstream:
        target = f"grpcs://{upstream.address}"
        # A relative tls_ca is the table's directory's, wherever the server runs.
        table.write_text(f'[agents.up]\ntarget = "{target}"\ntls_ca = "{ca.cert.name}"\n')
        async with in_process_server(agents=table) as gateway:
            trusted = await _frames(gateway.address, request, timeout=30)
        table.write_text(f'[agents.up]\ntarget = "{target}"\ntls_ca = "{other_ca.cert}"\n')
        async with in_process_server(agents=table) as gateway:
            refused = await _status_of(gateway.address, request)
    assert trusted[-1].response_kind == "e2a.complete", trusted[-1]
    assert refused.code() == grpc.StatusCode.UNAVAILABLE
    said = refused.details() or ""
    assert "agent 'up' is unavailable" in said and target in said
    assert f"(TLS, CA certificates: tls_ca {other_ca.cert})" in said and "CERTIFICATE_VERIFY_FAILED" in said
    info = status_detail(refused, error_details_pb2.ErrorInfo)
    assert info.reason == AGENT_UNAVAILABLE_REASON


@pytest.mark.asyncio
async def test_with_tracing_the_upstream_continues_the_gateways_backend_turn_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    upstream = _FakeUpstream(lambda envelope: _built(envelope, UPSTREAM_EVENTS))
    async with _fake_upstream(upstream) as target:
        gateway = E2AServer(server_config(tracing=True, agent=[f"up={target}"]), tracer_provider=provider)
        await gateway.start()
        try:
            await _frames(
                f"127.0.0.1:{gateway.port}",
                _envelope(agent_id="up"),
                timeout=30,
                metadata=(("traceparent", TRACEPARENT),),
            )
        finally:
            await gateway.stop()
    (turn,) = [span for span in exporter.get_finished_spans() if span.name == BACKEND_TURN_SPAN]
    _, trace_id, parent_id, _ = upstream.calls[0].metadata["traceparent"].split("-")
    assert trace_id == TRACEPARENT.split("-")[1] == format(turn.context.trace_id, "032x")
    assert parent_id == format(turn.context.span_id, "016x")  # the gateway's turn, not the caller's span
    assert dict(turn.attributes or {})["e2a.backend"] == "upstream"


# --- a backend whose frames are on the broker already ---------------------------------------------------


class _RecordingSink:
    """A frame sink (``serve --publish-nats``'s place) that keeps what it is given."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    async def put(self, frame: bytes) -> None:
        self.frames.append(frame)


class _SelfPublishingBackend(ControlledBackend):
    """As a bus route's backend: its workers published the turn's frames already."""

    publishes_frames = True


@pytest.mark.asyncio
@pytest.mark.parametrize("backend_class", [ControlledBackend, _SelfPublishingBackend])
async def test_the_frame_sink_takes_no_frame_of_a_backend_that_publishes_its_own(
    backend_class: type[ControlledBackend],
) -> None:
    backend = backend_class(before=(), after=("answer",))
    backend.release.set()
    sink = _RecordingSink()
    servicer = ChatServicer(backend, server_config(), frame_sink=sink)
    server = grpc.aio.server()
    add_chat_service(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        frames = await _frames(f"127.0.0.1:{port}", _envelope())
    finally:
        await server.stop(None)
    assert frames[-1].body == {"result": {"content": "answer"}}
    published = [E2AResponse.from_proto(pb.ChatResponse.FromString(frame).response) for frame in sink.frames]
    assert published == ([] if backend_class is _SelfPublishingBackend else frames)


# --- CancelTask through the grpc:// route --------------------------------------------------------------


def _upstream_route(gateway: InProcessServer) -> AgentBackend:
    routes = gateway.server.chat.routes
    assert routes is not None
    return routes.backend_for("up")


@pytest.mark.asyncio
async def test_the_upstream_route_cancels_a_waiting_task_with_its_token_and_a_deadline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("E2A_TEST_UPSTREAM_TOKEN", UPSTREAM_TOKEN)
    upstream = _FakeUpstream(lambda envelope: [])
    async with _fake_upstream(upstream) as target:
        table = tmp_path / "agents.toml"
        table.write_text(f'[agents.up]\ntarget = "{target}"\ntoken_env = "E2A_TEST_UPSTREAM_TOKEN"\n')
        async with in_process_server(agents=table) as gateway:
            assert await within(_upstream_route(gateway).cancel_task("task-7")) is True
    ((request, metadata, time_remaining),) = upstream.cancels
    assert (request.agent_id, request.task_id) == ("up", "task-7")  # the route's agent, as the upstream knows it
    assert metadata["authorization"] == f"Bearer {UPSTREAM_TOKEN}"
    # A deadline was sent: the route's own (gRPC rounds a timeout up as it sends it, by up to some 0.1 s).
    assert time_remaining is not None and 0 < time_remaining <= CANCEL_TASK_TIMEOUT_SECONDS + 1


@pytest.mark.asyncio
async def test_the_upstreams_no_waiting_task_means_nothing_was_cancelled() -> None:
    upstream = _FakeUpstream(lambda envelope: [], cancel_status=no_waiting_task(NoWaitingTaskError("up", "t-1")))
    async with _fake_upstream(upstream) as target, _gateway_to(target) as gateway:
        assert await within(_upstream_route(gateway).cancel_task("t-1")) is False


def _plain_status(code: int, message: str) -> grpc.Status:
    return rpc_status.to_status(status_pb2.Status(code=code, message=message))


@pytest.mark.parametrize(
    ("status", "code"),
    [
        # The upstream has no such agent: a misrouted cancel, not a task that ended.
        (unknown_agent(UnknownAgentError("up", ("other",))), ErrorCode.UPSTREAM_ERROR),
        # An upstream of a version without CancelTask.
        (_plain_status(code_pb2.UNIMPLEMENTED, "Method not found!"), ErrorCode.UPSTREAM_ERROR),
        (_plain_status(code_pb2.UNAVAILABLE, "restarting"), ErrorCode.AGENT_UNAVAILABLE),
    ],
)
@pytest.mark.asyncio
async def test_an_upstream_that_cannot_cancel_is_an_error_naming_it(status: grpc.Status, code: ErrorCode) -> None:
    upstream = _FakeUpstream(lambda envelope: [], cancel_status=status)
    async with _fake_upstream(upstream) as target, _gateway_to(target) as gateway:
        with pytest.raises(BackendError) as raised:
            await within(_upstream_route(gateway).cancel_task("t-1"))
    assert raised.value.code == code
    assert target.removeprefix("grpc://") in raised.value.message and "t-1" in raised.value.message
