"""Bounded waits for tests driven by events: a wait that never ends fails the test instead of hanging it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

#: Bounds every wait on an event; far longer than any of them takes.
EVENT_TIMEOUT_SECONDS = 10.0
T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float = EVENT_TIMEOUT_SECONDS) -> T:
    """``awaitable``'s result, or TimeoutError after ``seconds``."""
    return await asyncio.wait_for(awaitable, seconds)
