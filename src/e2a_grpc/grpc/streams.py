"""Helpers for request streams of the E2A services."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, TypeVar

import grpc

from e2a_grpc.grpc.status import status_for

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Request = TypeVar("Request")
Reply = TypeVar("Reply")


class _End:
    """Marks the end of the stream in the read-ahead queue."""


_END = _End()


async def read_ahead(stream: AsyncIterator[Item], window: int) -> AsyncGenerator[Item, None]:
    """``stream``'s items, read by a task of their own up to ``window`` items ahead of the consumer.

    A servicer then reads the next request while grpc writes its previous reply, instead of taking
    turns. At most ``window`` items wait in memory: beyond that the reader stops, and HTTP/2 flow
    control holds the client back. An error of the stream (a request that does not parse aborts the
    call) reaches the consumer after the items read before it. Closing this generator (the call ended
    or was cancelled) stops the reader.
    """
    if window < 1:
        raise ValueError(f"the read-ahead window must be at least 1, got {window}")
    queue: asyncio.Queue[Item | _End | BaseException] = asyncio.Queue(maxsize=window)

    async def read() -> None:
        try:
            async for item in stream:
                await queue.put(item)
        except Exception as exc:  # handed to the consumer, which raises it in the call's own task
            await queue.put(exc)
        else:
            await queue.put(_END)

    reader = asyncio.create_task(read())
    try:
        while True:
            item = await queue.get()
            if isinstance(item, _End):
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


async def reply_to_each(
    requests: AsyncIterator[Request],
    context: grpc.aio.ServicerContext[Any, Any],
    reply: Callable[[int, Request], Reply],
    *,
    items_of: Callable[[Request], int],
    window: int | None,
    method: str,
) -> AsyncGenerator[Reply, None]:
    """The replies of a bidirectional conversion stream (Transcode, ConvertStream): one per request, in
    order, ``reply(index, request)`` with ``index`` the number of items (``items_of``) of the requests
    before it. ``reply`` answers a bad item itself (an error reply, the stream goes on); an exception
    out of it is a bug of ours and ends the stream with INTERNAL.

    ``window``: requests read ahead of the reply being written (``read_ahead``); None reads the next
    request only once grpc has written this reply, so a client that does not read holds no more than
    the transport's windows in flight.
    """
    async with contextlib.AsyncExitStack() as closing:
        stream = requests
        if window is not None:  # closed when the call ends, early or not: that stops its reader
            stream = await closing.enter_async_context(contextlib.aclosing(read_ahead(requests, window)))
        index = 0
        async for request in stream:
            try:
                answer = reply(index, request)
            except Exception as exc:
                log.exception("unhandled error in %s at item %d", method, index)
                await context.abort_with_status(status_for(exc))
            yield answer
            index += items_of(request)
