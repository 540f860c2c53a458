"""The waits of a shutdown end by their deadline under continuous churn of calls, on both event loops.

The load that lost the old drain's timeout (CPython 3.11's ``wait_for`` inside ``timeout``): calls of
about half a millisecond, one starting as soon as another ends, so that a wait's wake-up often lands
just as its timer fires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from e2a_grpc.grpc.calls import InFlightCalls

DEADLINE_SECONDS = 1.0
#: How late past its deadline a wait may return on a loaded machine.
LATENESS_SECONDS = 0.3
CHURNERS = 8
QUIET_SECONDS = 0.1


def _run(main: Callable[[], Coroutine[Any, Any, None]], event_loop: str) -> None:
    if event_loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


async def _churn(calls: InFlightCalls, stop: asyncio.Event) -> None:
    """One call after another, each about 0.5 ms, until ``stop`` (bounded by the test's deadline)."""
    while not stop.is_set():
        with calls:
            await asyncio.sleep(0.0005)


@pytest.mark.slow  # each waits for its deadline under churn: 1-5 s of real time
@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
@pytest.mark.parametrize("wait", ["quiet", "idle"])
def test_a_wait_under_continuous_churn_ends_at_its_deadline(event_loop: str, wait: str) -> None:
    async def main() -> None:
        calls = InFlightCalls()
        stop = asyncio.Event()
        churners = [asyncio.ensure_future(_churn(calls, stop)) for _ in range(CHURNERS)]
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0)  # each churner's first call starts
        assert calls.count == CHURNERS
        try:
            for _ in range(5):  # each run ends on time, not only the first
                started = loop.time()
                deadline = started + DEADLINE_SECONDS
                if wait == "quiet":
                    result = await calls.quiet(QUIET_SECONDS, deadline)
                    # No quiet period fits in what is left: no use waiting for the deadline itself.
                    earliest = deadline - QUIET_SECONDS
                else:
                    result = await calls.idle(deadline)
                    earliest = deadline
                ended = loop.time()
                assert result is False  # the calls never stopped
                assert earliest - 0.01 <= ended <= deadline + LATENESS_SECONDS, ended - started
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*churners), 10)
        assert calls.count == 0

    _run(main, event_loop)


def test_quiet_and_idle_return_at_once_when_nothing_runs() -> None:
    async def main() -> None:
        calls = InFlightCalls()
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await calls.idle(started + 10)
        assert await calls.quiet(0.05, started + 10)
        assert loop.time() - started < 5  # one quiet period, not the deadline

    asyncio.run(main())
