"""Helpers for request streams of the E2A services."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

Item = TypeVar("Item")


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
