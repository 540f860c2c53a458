"""The plain a2a-sdk agent the "a2a-sdk" section measures: ``python -m bench.a2a_plain_agent --port N``.

An ``AgentExecutor`` that does what the A2A front door does on the echo backend, with nothing of
e2a-grpc in between: it opens the task (submitted, with the user's message), marks it working,
streams the user's text back as one artifact, a chunk per word (split as the echo backend splits
it, so both send as many events), and completes it. It runs on the front door's own stack: the
SDK's default request handler and in-memory task store, its JSON-RPC Starlette routes under
uvicorn, on uvloop, without the SDK's OpenTelemetry spans, its startup heap frozen. With
``--grpc-port`` it serves A2A's gRPC transport too (the SDK's ``GrpcHandler``), as the front door
does with ``--a2a-grpc-port``, and its card offers gRPC after JSON-RPC: the load client calls it over
JSON-RPC, the proxy's a2a backend over gRPC. Runs until SIGTERM or SIGINT (uvicorn's own handlers).
"""

from __future__ import annotations

import argparse
import asyncio
import os

# Before the SDK is imported, as `e2a-grpc serve` does without --tracing: the SDK reads it on import.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")

import grpc
import uvicorn
import uvloop
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
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from starlette.applications import Starlette

from e2a_grpc.backends.echo import piece_windows
from e2a_grpc.grpc.server import freeze_startup_heap

#: The one artifact each task gets.
ARTIFACT_ID = "echo"


class EchoExecutor(AgentExecutor):
    """Echoes the user's text as one artifact, a chunk per word, and completes the task."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id, message = context.task_id, context.context_id, context.message
        assert task_id and context_id and message is not None  # the SDK's request handler sets them
        if context.current_task is None:
            submitted = Task(
                id=task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[message],
            )
            await event_queue.enqueue_event(submitted)
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        first = True
        for pieces in piece_windows(context.get_user_input()):
            for piece in pieces:
                await updater.add_artifact([Part(text=piece)], artifact_id=ARTIFACT_ID, append=not first)
                first = False
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def build_card(port: int, grpc_port: int | None) -> AgentCard:
    interfaces = [
        AgentInterface(
            url=f"http://127.0.0.1:{port}/",
            protocol_binding=TransportProtocol.JSONRPC,
            protocol_version=PROTOCOL_VERSION_CURRENT,
        )
    ]
    if grpc_port is not None:
        interfaces.append(
            AgentInterface(
                url=f"127.0.0.1:{grpc_port}",
                protocol_binding=TransportProtocol.GRPC,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        )
    return AgentCard(
        name="plain a2a-sdk echo agent",
        description="The e2a-grpc bench's baseline: the a2a-sdk alone, echoing the text",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes the text", tags=["bench"])],
    )


async def serve(port: int, grpc_port: int | None) -> None:
    card = build_card(port, grpc_port)
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    grpc_server = None
    if grpc_port is not None:
        grpc_server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)  # type: ignore[no-untyped-call]
        grpc_server.add_insecure_port(f"127.0.0.1:{grpc_port}")
        await grpc_server.start()
    # The front door's uvicorn configuration (a2a_server/server.py).
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve())
    while not server.started and not serving.done():
        await asyncio.sleep(0.01)
    freeze_startup_heap()  # as `e2a-grpc serve` does
    await serving
    if grpc_server is not None:
        await grpc_server.stop(None)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.a2a_plain_agent", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="loopback port to listen on (JSON-RPC, the card)")
    parser.add_argument("--grpc-port", type=int, help="loopback port to serve A2A's gRPC transport on too")
    args = parser.parse_args()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(serve(args.port, args.grpc_port))


if __name__ == "__main__":
    main()
