"""Nothing an A2A agent says is lost on its way through E2A (property tests with the SDK's own types).

* A ``StreamResponse`` of any kind, as the a2a backend passes it on (an ``a2a.stream_event`` frame),
  projects back (ToA2AStream) to the same message.
* A sequence of them, as the A2A server publishes them for its client, is the same sequence but for
  the documented re-addressing: every task and context id is the server's.
* An A2A part sent to any backend as an ACP content block, and back to A2A, is the same part.
"""

from __future__ import annotations

from typing import Any

import pytest
from a2a.server.events import EventQueue
from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf import json_format, struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2a_grpc import E2AEnvelope, conversion
from e2a_grpc.a2a_server.executor import _Publisher
from e2a_grpc.chat.events import BackendInfo, Complete, Delta, Passthrough
from e2a_grpc.chat.frames import FrameBuilder, UtcClock, frame_record
from e2a_grpc.model import DeltaKind, ResponseKind
from e2a_grpc.protocols import parts as content
from e2a_grpc.protocols.a2a import STREAM_RESPONSE_KEYS
from tests.conftest import fewer_examples
from tests.support.agents.a2a_agent import json_struct

names = st.text(max_size=8)  # valid Unicode: protobuf strings are
ids = st.text("abcdef0123456789-", min_size=1, max_size=12)
media_types = st.sampled_from(["", "text/plain", "application/json", "image/png", "audio/wav", "application/pdf"])
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40).map(float), names)
structs = st.dictionaries(names, json_leaves, max_size=3).map(json_struct)


def _part(kind: str, value: Any, media_type: str, filename: str, metadata: struct_pb2.Struct) -> Part:
    part = Part(media_type=media_type, filename=filename, metadata=metadata)
    if kind == "data":
        part.data.CopyFrom(struct_pb2.Value(struct_value=value))
    else:
        setattr(part, kind, value)
    return part


parts = st.one_of(
    st.tuples(st.just("text"), names),
    st.tuples(st.just("raw"), st.binary(max_size=16)),
    st.tuples(st.just("url"), names.map(lambda name: f"https://example.com/{name}")),
    st.tuples(st.just("data"), structs),
).flatmap(
    lambda content_and_value: st.builds(
        _part, st.just(content_and_value[0]), st.just(content_and_value[1]), media_types, names, structs
    )
)
messages = st.builds(
    Message,
    message_id=ids,
    context_id=ids,
    task_id=ids,
    role=st.sampled_from([Role.ROLE_AGENT, Role.ROLE_USER]),
    parts=st.lists(parts, min_size=1, max_size=3),
    metadata=structs,
)
states = st.sampled_from([state for state in TaskState.values() if state != TaskState.TASK_STATE_UNSPECIFIED])
statuses = st.builds(TaskStatus, state=states, message=st.none() | messages)
artifacts = st.builds(
    Artifact, artifact_id=ids, name=names, parts=st.lists(parts, min_size=1, max_size=3), metadata=structs
)
status_updates = st.builds(TaskStatusUpdateEvent, task_id=ids, context_id=ids, status=statuses, metadata=structs)
artifact_updates = st.builds(
    TaskArtifactUpdateEvent,
    task_id=ids,
    context_id=ids,
    artifact=artifacts,
    append=st.booleans(),
    last_chunk=st.booleans(),
    metadata=structs,
)
tasks = st.builds(
    Task,
    id=ids,
    context_id=ids,
    status=statuses.filter(lambda status: status.state == TaskState.TASK_STATE_SUBMITTED),
    history=st.lists(messages, max_size=2),
    metadata=structs,
)
stream_responses = st.one_of(
    st.builds(StreamResponse, task=tasks),
    st.builds(StreamResponse, message=messages),
    st.builds(StreamResponse, status_update=status_updates),
    st.builds(StreamResponse, artifact_update=artifact_updates),
)


def _passthrough(response: StreamResponse) -> Passthrough:
    """The event the a2a backend makes of one event of its agent."""
    branch = response.WhichOneof("payload")
    assert branch is not None
    payload = json_format.MessageToDict(response)[STREAM_RESPONSE_KEYS[branch]]
    return Passthrough(ResponseKind.A2A_STREAM_EVENT, {"branch": branch, "payload": payload}, native=response)


def _frame_of(response: StreamResponse, builder: FrameBuilder) -> bytes:
    return builder.passthrough(_passthrough(response))


async def _publish(publisher: _Publisher, response: StreamResponse, builder: FrameBuilder, native: bool) -> None:
    """Write the frame of an agent's event, with the event as the backend made it, or (``native``
    false) without its SDK message, as from a backend that names none: the publisher projects the
    frame's record."""
    event = _passthrough(response)
    await publisher.write(builder.passthrough(event), ResponseKind.A2A_STREAM_EVENT, event if native else None)


def _builder() -> FrameBuilder:
    envelope = E2AEnvelope(method="message/send", params={"text": "hi"}, request_id="server-task")
    return FrameBuilder(envelope, BackendInfo("a2a", "a2a"), UtcClock())


@given(stream_responses)
def test_an_agents_event_through_a_frame_is_the_same_event(response: StreamResponse) -> None:
    payload = conversion.to_a2a_stream(frame_record(_frame_of(response, _builder())))
    assert isinstance(payload, dict)
    assert json_format.ParseDict(payload, StreamResponse()) == response


class _Captured(EventQueue):
    """The events a publisher enqueues, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def enqueue_event(self, event: Any) -> None:
        self.events.append(event)


def _readdress_message(message: Message, task_id: str, context_id: str) -> None:
    """A message names the task and context it named before, as the server's (an unset id stays unset)."""
    if message.task_id:
        message.task_id = task_id
    if message.context_id:
        message.context_id = context_id


def _readdressed(event: Any, task_id: str, context_id: str) -> Any:
    copy = type(event)()
    copy.CopyFrom(event)
    if isinstance(copy, Task):
        copy.id = task_id
        for message in copy.history:
            _readdress_message(message, task_id, context_id)
        if copy.status.HasField("message"):
            _readdress_message(copy.status.message, task_id, context_id)
    elif isinstance(copy, Message):
        copy.task_id = ""
    else:
        copy.task_id = task_id
        if isinstance(copy, TaskStatusUpdateEvent) and copy.status.HasField("message"):
            _readdress_message(copy.status.message, task_id, context_id)
    copy.context_id = context_id
    return copy


task_sequences = st.tuples(
    tasks,
    st.lists(
        st.one_of(
            status_updates.filter(
                lambda update: update.status.state in (TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_SUBMITTED)
            ),
            artifact_updates,
        ),
        max_size=5,
    ),
    status_updates,
)


@pytest.mark.asyncio
@settings(fewer_examples(2), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(task_sequences, st.booleans())
async def test_a_task_stream_reaches_the_a2a_client_as_sent_but_for_the_ids(
    sequence: tuple[Task, list[Any], TaskStatusUpdateEvent], native: bool
) -> None:
    first, middle, last = sequence
    user = Message(message_id="user-1", role=Role.ROLE_USER, parts=[Part(text="hi")])
    first.history.insert(0, user)  # the agent's snapshot holds the message it was sent
    queue = _Captured()
    builder = _builder()
    publisher = _Publisher("server-task", "server-context", queue, user, builder, task_exists=False)
    sent: list[Any] = [first, *middle, last]
    for event in sent:
        branch = {
            Task: "task",
            TaskStatusUpdateEvent: "status_update",
            TaskArtifactUpdateEvent: "artifact_update",
        }[type(event)]
        await _publish(publisher, StreamResponse(**{branch: event}), builder, native)
    assert queue.events == [_readdressed(event, "server-task", "server-context") for event in sent]
    assert publisher.agent_task_id == last.task_id


@pytest.mark.asyncio
@settings(fewer_examples(4), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages, st.booleans())
async def test_a_message_reply_reaches_the_a2a_client_as_a_message(reply: Message, native: bool) -> None:
    queue = _Captured()
    user = Message(message_id="user-1", role=Role.ROLE_USER, parts=[Part(text="hi")])
    builder = _builder()
    publisher = _Publisher("server-task", "server-context", queue, user, builder, task_exists=False)
    await _publish(publisher, StreamResponse(message=reply), builder, native)
    await publisher.write(builder.complete({"content": ""}), ResponseKind.E2A_COMPLETE, Complete({"content": ""}))
    assert queue.events == [_readdressed(reply, "server-task", "server-context")]


@given(parts)
def test_a_part_through_an_acp_block_is_the_same_part(part: Part) -> None:
    wire = json_format.MessageToDict(part)
    block = content.acp_block(wire, "part")
    assert json_format.ParseDict(content.a2a_part(block, "part"), Part()) == part


deltas = st.builds(
    Delta,
    st.sampled_from(list(DeltaKind)),
    st.one_of(names, st.dictionaries(names, json_leaves, max_size=3), st.lists(json_leaves, max_size=3)),
    st.none() | media_types,
)


@pytest.mark.asyncio
@settings(fewer_examples(2), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(deltas, min_size=1, max_size=4))
async def test_a_chunk_is_published_from_its_event_as_from_its_frame(chunks: list[Delta]) -> None:
    """The publisher builds a chunk's artifact update from the backend's event; the frame's record
    projected (ToA2AStream) gives the same update."""
    user = Message(message_id="user-1", role=Role.ROLE_USER, parts=[Part(text="hi")])
    queues = (_Captured(), _Captured())
    builder = _builder()
    publishers = [
        _Publisher("server-task", "server-context", queue, user, builder, task_exists=True) for queue in queues
    ]
    for chunk in chunks:
        frame = builder.delta(chunk)
        await publishers[0].write(frame, ResponseKind.E2A_CHUNK, chunk)
        await publishers[1].write(frame, ResponseKind.E2A_CHUNK, None)
    assert queues[0].events == queues[1].events and len(queues[0].events) == len(chunks)
