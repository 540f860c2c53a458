"""What every call of the E2A services goes through: careful request parsing, and an in-flight count.

grpc parses request bytes before the servicer runs and answers a ``DecodeError`` with UNKNOWN. Here
each handler of the E2A services is registered with grpc's identity deserializer instead and parses
its request (every message of a request stream too) itself: bytes that are not the RPC's request
message get INVALID_ARGUMENT naming the message type, with a BadRequest violation for the whole
request (``$``). As this runs after the auth interceptor, a caller without a valid token never gets
its bytes parsed.

The same wrapper counts the calls in flight, so that a graceful shutdown can wait for them (and for
the calls grpc has accepted but not yet handed over, which its shutdown would cancel) before it
stops the server, and refuses new calls once the shutdown takes no more.

Handlers must read a request stream through the iterator they are given, not ``context.read()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn

import grpc
from google.protobuf.message import DecodeError, Message

from e2a_grpc.grpc.handlers import Context, Handler, WrappedHandlers, behavior_of, handler_like
from e2a_grpc.grpc.status import SHUTTING_DOWN_CODE, SHUTTING_DOWN_MESSAGE, undecodable_request


class InFlightCalls:
    """How many calls of the E2A services are being handled right now, and whether new ones are taken.

    The waits of a shutdown take a deadline on the event loop's clock (``loop.time()``) and check it
    themselves between waits that each have their own timeout: no ``wait_for`` inside ``timeout``, whose
    single cancel CPython 3.11 loses when it lands just as the inner wait completes (a drain under
    continuous load then never ended).
    """

    def __init__(self) -> None:
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._started = asyncio.Event()
        #: False once the shutdown refuses new calls (``refuse_new``).
        self.accepting = True

    @property
    def count(self) -> int:
        return self._count

    def __enter__(self) -> None:
        """``with calls:`` counts one call while the block runs (a class, not a generator: it runs per call)."""
        self._count += 1
        if self._count == 1:
            self._idle.clear()
        self._started.set()

    def __exit__(self, *exc_info: object) -> None:
        self._count -= 1
        if self._count == 0:
            self._idle.set()

    def refuse_new(self) -> None:
        """From now on a call that reaches a handler is refused with UNAVAILABLE (``SHUTTING_DOWN``)."""
        self.accepting = False

    async def idle(self, deadline: float) -> bool:
        """Whether no call is in flight by ``deadline`` (``loop.time()``); returns as soon as none is."""
        loop = asyncio.get_running_loop()
        while self._count and loop.time() < deadline:
            await _set_within(self._idle, deadline - loop.time())
        return self._count == 0

    async def quiet(self, quiet_seconds: float, deadline: float) -> bool:
        """Whether, by ``deadline``, ``quiet_seconds`` pass in which no call starts, on a loop that
        was not held up meanwhile.

        That lets grpc hand over the calls it accepted while the event loop was busy: each reaches a
        handler within a loop iteration or two once the loop is free. A wait that ends late (the
        loop was busy with a call, or the process did not run) is no quiet: calls may be waiting.
        """
        loop = asyncio.get_running_loop()
        while deadline - loop.time() >= quiet_seconds:
            self._started.clear()
            waited_from = loop.time()
            quiet = not await _set_within(self._started, quiet_seconds)
            if quiet and loop.time() - waited_from <= quiet_seconds + _QUIET_LATENESS_SECONDS:
                return True
        return False


#: How late a quiet period's timer may fire and still count (see ``InFlightCalls.quiet``).
_QUIET_LATENESS_SECONDS = 0.02


async def _set_within(event: asyncio.Event, seconds: float) -> bool:
    """Whether ``event`` is set within ``seconds``: ``asyncio.wait`` with its own timeout, which returns
    (it never cancels the caller) when the time is up."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait((waiter,), timeout=max(0.0, seconds))
    finally:
        waiter.cancel()
    return bool(done)


class RequestParsingInterceptor(grpc.aio.ServerInterceptor):
    """Parses the requests of ``services`` in their handlers and counts those calls in ``calls``."""

    def __init__(self, services: tuple[str, ...], calls: InFlightCalls) -> None:
        self._prefixes = tuple(f"/{service}/" for service in services)
        self._handlers = WrappedHandlers(lambda handler, _method: parsing_handler(handler, calls))

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or not method.startswith(self._prefixes):
            return handler
        return self._handlers.of(method, handler)


async def refuse_if_shutting_down(calls: InFlightCalls, context: Context) -> None:
    """Refuse the call (UNAVAILABLE: not run, retry elsewhere) once the shutdown takes no new calls."""
    if not calls.accepting:
        await context.abort(SHUTTING_DOWN_CODE, SHUTTING_DOWN_MESSAGE)


def parsing_handler(handler: Handler, calls: InFlightCalls) -> Handler:
    """``handler`` taking raw request bytes, which it parses itself, counted in ``calls`` while it runs."""
    parse = handler.request_deserializer
    if parse is None:
        raise TypeError("the handler has no request deserializer to parse its requests with")
    # The generated code registers each request class's FromString.
    type_name: str = parse.__self__.DESCRIPTOR.full_name  # type: ignore[attr-defined]

    async def refuse(context: Context, exc: DecodeError) -> NoReturn:
        await context.abort_with_status(undecodable_request(type_name, exc))
        raise AssertionError("unreachable: abort_with_status raises") from exc

    async def parsed_stream(stream: AsyncIterator[bytes], context: Context) -> AsyncIterator[Message]:
        async for data in stream:
            try:
                message: Message = parse(data)
            except DecodeError as exc:
                await refuse(context, exc)
            yield message

    def request_of(raw: Any, context: Context) -> Any:
        """The request (a stream parsed message by message); raises ``DecodeError`` for a single one."""
        return parsed_stream(raw, context) if handler.request_streaming else parse(raw)

    behavior = behavior_of(handler)
    if inspect.isasyncgenfunction(behavior):

        async def stream_replies(raw: Any, context: Context) -> AsyncIterator[Any]:
            await refuse_if_shutting_down(calls, context)
            with calls:
                try:
                    request = request_of(raw, context)
                except DecodeError as exc:
                    await refuse(context, exc)
                async with contextlib.aclosing(behavior(request, context)) as replies:
                    async for reply in replies:
                        yield reply

        new_behavior: Callable[..., Any] = stream_replies
    elif inspect.iscoroutinefunction(behavior):

        async def call(raw: Any, context: Context) -> Any:
            await refuse_if_shutting_down(calls, context)
            with calls:
                try:
                    request = request_of(raw, context)
                except DecodeError as exc:
                    await refuse(context, exc)
                return await behavior(request, context)

        new_behavior = call
    else:
        raise TypeError(f"{behavior!r} is not an asyncio handler; the E2A services have no other kind")
    return handler_like(
        handler, new_behavior, request_deserializer=None, response_serializer=handler.response_serializer
    )
