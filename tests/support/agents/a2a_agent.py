"""A scripted A2A agent built on the official a2a-sdk (JSON-RPC over HTTP + SSE), for the a2a backend tests.

Run as ``python -m tests.support.agents.a2a_agent --port PORT --log FILE [--grpc-port PORT]``. It serves
its agent card at ``/.well-known/agent-card.json`` and JSON-RPC at ``/``; with ``--grpc-port`` also A2A's
gRPC transport (the SDK's ``GrpcHandler`` on the same request handler), offered after JSON-RPC in its card. What it does depends on the user's text:

* ``fail``  - a task that works, produces a partial artifact, then ends ``TASK_STATE_FAILED``;
* ``raise`` - a task whose executor raises (the SDK turns that into an error on the stream);
* ``reply`` - no task: a single agent ``Message``;
* ``slow``  - a task that streams an artifact chunk every 0.1 s for a minute (for cancel tests);
* ``ask``   - (the word) a task that asks for the user's name (``TASK_STATE_INPUT_REQUIRED``, the question as its
  status message with a text and a data part); the next message on the task is the answer, and the
  task completes with an artifact greeting that name (an answer with the word ``more`` leaves it
  waiting; it ends canceled when cancelled while it waits);
* ``login`` - the same with ``TASK_STATE_AUTH_REQUIRED``;
* ``parts`` - a task with metadata on its events, whose artifacts hold every part kind (text with a
  media type, raw bytes with a media type and file name, a URL, structured data) and a text
  artifact sent in three chunks (``append``, ``lastChunk`` on the last);
* ``large`` - a task whose one artifact is ``LARGE_ARTIFACT_CHARS`` characters, more than grpc's 4 MiB
  default bound on a message received;
* anything else: a task with a working status carrying an agent message, two artifact updates
  (the second appended to the first) and a completed status carrying an agent message.

Every event it sends is written to the log, one JSON line each, as the A2A ``StreamResponse`` JSON
the SDK puts on the wire (``{"kind": "event", "context_id": ..., "event": {...}}``), so a test can
compare what reached the client with what the agent sent. It also logs each request it gets
(``"kind": "request"``: message, configuration, metadata) and records, with wall-clock
times, when a running ``execute`` is cancelled, when ``cancel`` is called (A2A CancelTask), when an SSE
response starts (with the client's port: a connection reused or a new one) and when it ends (the client
went away or the stream finished). Every HTTP response sets a cookie, as an agent's session cookie would,
and the log has the ``Cookie`` header of each HTTP request (``"kind": "http_request"``), and the method of each gRPC call
(``"kind": "grpc_call"``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
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
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from google.protobuf import json_format, struct_pb2
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

_BRANCH_FOR = {
    Task: "task",
    Message: "message",
    TaskStatusUpdateEvent: "status_update",
    TaskArtifactUpdateEvent: "artifact_update",
}


_WAITING_STATES = (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED)


def json_struct(value: dict[str, Any]) -> struct_pb2.Struct:
    """A protobuf ``Struct`` holding ``value`` (parts' data and metadata are Structs)."""
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


class EventLog:
    """Appends one JSON line per record, with the wall-clock time, to a file the test reads."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def write(self, record: dict[str, Any]) -> None:
        with self._path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({**record, "at": time.time()}) + "\n")


#: The artifact of the ``large`` script: over grpc's default 4 MiB per message received.
LARGE_ARTIFACT_CHARS = 5 * 1024 * 1024


class ScriptedExecutor(AgentExecutor):
    def __init__(self, log: EventLog) -> None:
        self._log = log

    async def _emit(self, queue: EventQueue, context: RequestContext, event: Any) -> None:
        wire = json_format.MessageToDict(StreamResponse(**{_BRANCH_FOR[type(event)]: event}))
        self._log.write({"kind": "event", "context_id": context.context_id, "event": wire})
        await queue.enqueue_event(event)

    def _agent_message(self, context: RequestContext, text: str, *, in_task: bool = True) -> Message:
        return Message(
            message_id=f"agent-{time.monotonic_ns()}",
            role=Role.ROLE_AGENT,
            context_id=context.context_id or "",
            task_id=context.task_id if in_task else None,
            parts=[Part(text=text)],
        )

    def _status(
        self, context: RequestContext, state: TaskState, message: Message | None = None
    ) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(
            task_id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=state, message=message),
        )

    def _chunk(self, context: RequestContext, text: str, *, append: bool, last: bool) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=context.task_id,
            context_id=context.context_id,
            artifact={"artifact_id": "answer", "name": "answer", "parts": [{"text": text}]},
            append=append,
            last_chunk=last,
        )

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        self._log.write(
            {
                "kind": "request",
                "context_id": context.context_id,
                "message": json_format.MessageToDict(context.message) if context.message else None,
                "configuration": json_format.MessageToDict(context.configuration) if context.configuration else None,
                "metadata": context.metadata,
            }
        )
        try:
            waiting = context.current_task
            if waiting is not None and waiting.status.state in _WAITING_STATES:
                await self._answered(event_queue, context, text)
                return
            if "reply" in text:
                await self._emit(event_queue, context, self._agent_message(context, f"direct: {text}", in_task=False))
                return
            assert context.task_id and context.context_id and context.message
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            await self._emit(event_queue, context, task)
            thinking = self._agent_message(context, "thinking")
            await self._emit(event_queue, context, self._status(context, TaskState.TASK_STATE_WORKING, thinking))
            if "raise" in text:
                raise RuntimeError("the test agent raised on purpose")
            if "fail" in text:
                await self._emit(event_queue, context, self._chunk(context, "partial", append=False, last=True))
                failure = self._agent_message(context, "the test agent failed on purpose")
                await self._emit(event_queue, context, self._status(context, TaskState.TASK_STATE_FAILED, failure))
                return
            words = set(re.findall(r"\w+", text))  # whole words: "task" does not ask
            if "ask" in words or "login" in words:
                state = TaskState.TASK_STATE_INPUT_REQUIRED if "ask" in words else TaskState.TASK_STATE_AUTH_REQUIRED
                question = self._agent_message(context, "what is your name?")
                question.parts.append(Part(data=struct_pb2.Value(struct_value=json_struct({"expects": "name"}))))
                await self._emit(event_queue, context, self._status(context, state, question))
                return
            if "parts" in words:
                await self._parts(event_queue, context)
                return
            if "large" in words:
                await self._emit(
                    event_queue, context, self._chunk(context, "x" * LARGE_ARTIFACT_CHARS, append=False, last=True)
                )
                await self._emit(event_queue, context, self._status(context, TaskState.TASK_STATE_COMPLETED))
                return
            if "slow" in text:
                for index in range(600):
                    await self._emit(
                        event_queue, context, self._chunk(context, f"{index} ", append=index > 0, last=False)
                    )
                    await asyncio.sleep(0.1)
            await self._emit(event_queue, context, self._chunk(context, "Hello, ", append=False, last=False))
            await self._emit(event_queue, context, self._chunk(context, text, append=True, last=True))
            done = self._agent_message(context, "done")
            await self._emit(event_queue, context, self._status(context, TaskState.TASK_STATE_COMPLETED, done))
        except asyncio.CancelledError:
            self._log.write({"kind": "execute_cancelled", "context_id": context.context_id})
            raise

    async def _answered(self, queue: EventQueue, context: RequestContext, answer: str) -> None:
        """The answer to a question the task asked: greet the name, complete; an answer with the word
        ``more`` leaves the task waiting (as the SDK's ``requires_input`` writes it: no message)."""
        if "more" in re.findall(r"\w+", answer):
            await self._emit(queue, context, self._status(context, TaskState.TASK_STATE_INPUT_REQUIRED))
            return
        await self._emit(queue, context, self._status(context, TaskState.TASK_STATE_WORKING))
        await self._emit(queue, context, self._chunk(context, f"hello, {answer}", append=False, last=True))
        await self._emit(queue, context, self._status(context, TaskState.TASK_STATE_COMPLETED))

    async def _parts(self, queue: EventQueue, context: RequestContext) -> None:
        metadata = json_struct({"agent": "scripted", "step": 1})
        working = self._status(context, TaskState.TASK_STATE_WORKING)
        working.metadata.CopyFrom(metadata)
        await self._emit(queue, context, working)
        files = Artifact(
            artifact_id="files",
            name="every part kind",
            metadata=metadata,
            parts=[
                Part(text="# notes", media_type="text/markdown"),
                Part(raw=bytes(range(256)), media_type="application/octet-stream", filename="bytes.bin"),
                Part(raw=b"\x89PNG\r\n", media_type="image/png", filename="dot.png"),
                Part(url="https://example.com/report.pdf", media_type="application/pdf", filename="report.pdf"),
                Part(data=struct_pb2.Value(struct_value=json_struct({"answer": 42, "list": ["a", True, None]}))),
            ],
        )
        event = TaskArtifactUpdateEvent(task_id=context.task_id, context_id=context.context_id, artifact=files)
        event.metadata.CopyFrom(metadata)
        await self._emit(queue, context, event)
        for index, chunk in enumerate(("one ", "two ", "three")):
            await self._emit(
                queue,
                context,
                TaskArtifactUpdateEvent(
                    task_id=context.task_id,
                    context_id=context.context_id,
                    artifact=Artifact(artifact_id="chunks", parts=[Part(text=chunk)]),
                    append=index > 0,
                    last_chunk=index == 2,
                ),
            )
        await self._emit(queue, context, self._status(context, TaskState.TASK_STATE_COMPLETED))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self._log.write({"kind": "cancel_called", "context_id": context.context_id, "task_id": context.task_id})
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class GrpcCallRecorder(grpc.aio.ServerInterceptor):
    """Logs the method of each gRPC call (``"kind": "grpc_call"``): a streaming send or a blocking one."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        self._log.write({"kind": "grpc_call", "method": handler_call_details.method})
        return await continuation(handler_call_details)


class SseCloseRecorder:
    """ASGI middleware: logs when each SSE response ends, which is when the agent sees the stream closed,
    each fetch of the agent card, and the cookie each HTTP request carries; sets a cookie on each response."""

    def __init__(self, app: ASGIApp, log: EventLog) -> None:
        self._app = app
        self._log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope["path"] == AGENT_CARD_WELL_KNOWN_PATH:
                self._log.write({"kind": "card_served"})
            cookies = [value.decode("latin-1") for name, value in scope["headers"] if name == b"cookie"]
            self._log.write({"kind": "http_request", "path": scope["path"], "cookies": cookies})
        is_sse = False

        async def watch(message: ASGIMessage) -> None:
            nonlocal is_sse
            if message["type"] == "http.response.start":
                message["headers"] = [*message["headers"], (b"set-cookie", f"session={uuid.uuid4()}; Path=/".encode())]
                is_sse = any(k == b"content-type" and v.startswith(b"text/event-stream") for k, v in message["headers"])
                if is_sse:
                    # The client's port tells one connection from another (reused or new).
                    self._log.write({"kind": "sse_opened", "client_port": scope["client"][1]})
            await send(message)

        try:
            await self._app(scope, receive, watch)
        finally:
            if is_sse:
                self._log.write({"kind": "sse_closed"})


def _card(port: int, grpc_port: int | None) -> AgentCard:
    interfaces = [AgentInterface(url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0")]
    if grpc_port is not None:
        interfaces.append(AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"))
    return AgentCard(
        name="e2a test agent",
        description="Scripted A2A agent for the e2a-grpc a2a backend tests",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json", "image/png", "application/octet-stream"],
        default_output_modes=["text/plain", "application/json", "image/png", "application/octet-stream"],
        skills=[AgentSkill(id="script", name="script", description="scripted replies", tags=["test"])],
    )


async def serve(port: int, grpc_port: int | None, log: EventLog) -> None:
    card = _card(port, grpc_port)
    handler = DefaultRequestHandler(
        agent_executor=ScriptedExecutor(log), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    grpc_server = None
    if grpc_port is not None:
        grpc_server = grpc.aio.server(interceptors=[GrpcCallRecorder(log)])
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)  # type: ignore[no-untyped-call]
        grpc_server.add_insecure_port(f"127.0.0.1:{grpc_port}")
        await grpc_server.start()
    config = uvicorn.Config(SseCloseRecorder(app, log), host="127.0.0.1", port=port, log_level="warning")
    await uvicorn.Server(config).serve()
    if grpc_server is not None:
        await grpc_server.stop(None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, help="serve A2A's gRPC transport on this port too")
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.grpc_port, EventLog(args.log)))


if __name__ == "__main__":
    main()
