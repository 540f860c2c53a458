"""A webhook receiver for push notification tests: a Starlette app under uvicorn on 127.0.0.1, port 0."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import uvicorn
from a2a.types.a2a_pb2 import StreamResponse
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.waiting import within


@dataclass
class Notification:
    """One POST the receiver took: its path, headers and body (a ``StreamResponse``)."""

    path: str
    headers: dict[str, str]
    body: StreamResponse


@dataclass
class WebhookReceiver:
    """Records every POST; answers ``status``, after ``release`` is set when ``hold`` is on."""

    port: int = 0
    status: int = 200
    hold: bool = False
    release: asyncio.Event = field(default_factory=asyncio.Event)
    received: asyncio.Queue[Notification] = field(default_factory=asyncio.Queue)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _take(self, request: Request) -> Response:
        body = json_format.Parse(await request.body(), StreamResponse())
        self.received.put_nowait(Notification(request.url.path, dict(request.headers), body))
        self.arrived.set()
        if self.hold:
            await self.release.wait()
        return Response(status_code=self.status)

    async def next(self) -> Notification:
        """The next notification, in arrival order (bounded: a missing one fails the test)."""
        return await within(self.received.get())

    async def until_final(self) -> list[Notification]:
        """The notifications up to and including the one that ends the task."""
        from e2a_grpc.a2a_server.executor import TERMINAL_STATES

        taken = []
        while True:
            notification = await self.next()
            taken.append(notification)
            body = notification.body
            state = body.task.status.state if body.HasField("task") else body.status_update.status.state
            if (body.HasField("task") or body.HasField("status_update")) and state in TERMINAL_STATES:
                return taken


@contextlib.asynccontextmanager
async def webhook_receiver(*, status: int = 200, hold: bool = False) -> AsyncIterator[WebhookReceiver]:
    """A running receiver on a loopback port the OS picks; always stopped."""
    receiver = WebhookReceiver(status=status, hold=hold)
    app = Starlette(routes=[Route("/{path:path}", receiver._take, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    receiver.port = sock.getsockname()[1]
    sock.listen(64)  # listening now: a POST sent before uvicorn is up waits in the backlog
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield receiver
    finally:
        receiver.release.set()
        server.should_exit = True
        await serving
        sock.close()
