"""grpc/streams.py: ``read_ahead`` keeps order, stays within its window, passes errors on, and stops its reader."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.grpc.streams import read_ahead


class Source:
    """An endless stream that counts the items taken from it, and can be told to fail."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.taken = 0
        self.fail_at = fail_at
        self.closed = False

    async def items(self) -> AsyncIterator[int]:
        try:
            while True:
                if self.taken == self.fail_at:
                    raise ValueError(f"bad item {self.taken}")
                self.taken += 1
                yield self.taken - 1
        finally:
            self.closed = True


async def _settle() -> None:
    """Let every ready task run until none can go on (the reader only waits on the queue).

    Not a timing guess: the reader never waits on anything but the queue, so a few loop turns let
    it run as far as it can."""
    for _ in range(50):
        await asyncio.sleep(0)


@given(window=st.integers(min_value=1, max_value=20), consumed=st.integers(min_value=1, max_value=30))
def test_the_reader_stays_within_the_window_and_keeps_order(window: int, consumed: int) -> None:
    async def run() -> None:
        source = Source()
        async with contextlib.aclosing(read_ahead(source.items(), window)) as items:
            got = [await anext(items) for _ in range(consumed)]
            await _settle()
            assert got == list(range(consumed))
            # The queue holds ``window`` items and the reader one more, waiting to put it.
            assert source.taken == consumed + window + 1
        await _settle()
        assert source.closed  # closing stopped the reader, which closed the source

    asyncio.run(run())


def test_an_error_of_the_stream_comes_after_the_items_before_it() -> None:
    async def run() -> list[int]:
        got: list[int] = []
        with pytest.raises(ValueError, match="bad item 3"):
            async for item in read_ahead(Source(fail_at=3).items(), 2):
                got.append(item)
        return got

    assert asyncio.run(run()) == [0, 1, 2]


def test_a_finite_stream_ends() -> None:
    async def three() -> AsyncIterator[str]:
        for item in "abc":
            yield item

    async def run() -> list[str]:
        return [item async for item in read_ahead(three(), 1)]

    assert asyncio.run(run()) == ["a", "b", "c"]


def test_a_window_below_one_is_refused() -> None:
    async def first() -> int:
        return await anext(read_ahead(Source().items(), 0))

    with pytest.raises(ValueError, match="at least 1"):
        asyncio.run(first())
