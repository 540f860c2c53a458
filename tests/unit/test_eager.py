"""``EagerStart``: a coroutine run up to its first wait at once, and finished in the task that awaits it
(how Chat builds its next frame while grpc writes the one before it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from e2a_grpc.grpc.eager import EagerStart

pytestmark = pytest.mark.asyncio


class Write:
    """A coroutine as grpc's write is: work, a wait on a future that something else completes, more work."""

    def __init__(self, waits: int = 1) -> None:
        self.steps: list[str] = []
        self.futures: list[asyncio.Future[None]] = []
        self._waits = waits

    async def run(self) -> None:
        self.steps.append("started")
        try:
            for _ in range(self._waits):
                future = asyncio.get_running_loop().create_future()
                self.futures.append(future)
                await future
            self.steps.append("finished")
        except BaseException as exc:
            self.steps.append(type(exc).__name__)
            raise


async def test_the_coroutine_runs_up_to_its_wait_at_once_and_the_rest_when_awaited() -> None:
    write = Write()
    started = EagerStart(write.run())
    assert write.steps == ["started"]  # before any turn of the event loop
    asyncio.get_running_loop().call_soon(write.futures[0].set_result, None)
    await started
    assert write.steps == ["started", "finished"]


async def test_a_wait_already_over_costs_no_turn_of_the_event_loop() -> None:
    write = Write()
    started = EagerStart(write.run())
    write.futures[0].set_result(None)
    other_ran: list[bool] = []
    asyncio.get_running_loop().call_soon(other_ran.append, True)
    await started
    assert write.steps == ["started", "finished"]
    assert not other_ran


async def test_every_wait_of_the_coroutine_is_awaited_in_turn() -> None:
    write = Write(waits=3)
    started = EagerStart(write.run())
    awaiting = asyncio.create_task(_await(started))
    for index in range(3):
        await _until(lambda index=index: len(write.futures) > index)  # type: ignore[misc]
        assert not awaiting.done()
        write.futures[index].set_result(None)
    await awaiting
    assert write.steps == ["started", "finished"]


async def test_a_coroutine_that_never_waits_is_done_at_once() -> None:
    steps = []

    async def at_once() -> None:
        steps.append("ran")

    started = EagerStart(at_once())
    assert steps == ["ran"]
    await started


async def test_an_error_before_the_wait_is_raised_by_the_start() -> None:
    async def refused() -> None:
        raise ValueError("the call is over")

    with pytest.raises(ValueError, match="the call is over"):
        EagerStart(refused())


async def test_an_error_after_the_wait_is_raised_by_the_await() -> None:
    write = Write()
    started = EagerStart(write.run())
    write.futures[0].set_exception(ConnectionError("write failed"))
    with pytest.raises(ConnectionError, match="write failed"):
        await started
    assert write.steps == ["started", "ConnectionError"]


async def test_a_cancel_of_the_awaiting_task_reaches_the_coroutine_where_it_waits() -> None:
    write = Write()
    started = EagerStart(write.run())
    awaiting = asyncio.create_task(_await(started))
    await asyncio.sleep(0)  # the task's first step: it waits on the coroutine's future now
    awaiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await awaiting
    assert write.steps == ["started", "CancelledError"]
    assert write.futures[0].cancelled()  # as a task awaiting the coroutine itself cancels it


async def test_an_abandoned_coroutine_is_closed_and_its_wait_cancelled() -> None:
    write = Write()
    started = EagerStart(write.run())
    started.abandon()
    assert write.steps == ["started", "GeneratorExit"]
    assert write.futures[0].cancelled()
    await started  # nothing left to run
    started.abandon()  # and nothing left to stop


async def _await(started: EagerStart) -> None:
    await started


async def _until(condition: Callable[[], bool]) -> None:
    """Let the event loop run until ``condition()`` holds (bounded)."""
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")
