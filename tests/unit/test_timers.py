"""``OffLoopTimers``: the turns' time limits, run by a thread of their own and called on the event loop
that set them. Each test waits for the callbacks it expects (events), never for a time."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from e2a_grpc.chat.timers import _COMPACT_AT, OffLoopTimers

pytestmark = pytest.mark.asyncio

#: Long enough that a timer set this far ahead never fires while a test runs.
LATER = 3600.0
#: How long a test waits for a callback that is due at once before it fails.
PATIENCE = 10.0


async def test_a_due_timer_calls_back_on_the_loop_thread_that_set_it() -> None:
    timers = OffLoopTimers()
    called: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()
    timers.call_later(0.0, lambda name: called.set_result((name, threading.get_ident())), "limit")
    assert await asyncio.wait_for(called, PATIENCE) == ("limit", threading.get_ident())
    assert timers.pending == 0


async def test_timers_fire_in_the_order_of_their_deadlines_and_a_cancelled_one_never() -> None:
    timers = OffLoopTimers()
    order: list[str] = []
    done = asyncio.Event()
    timers.call_later(LATER, order.append, "much later")
    timers.call_later(0.02, order.append, "second")
    cancelled = timers.call_later(0.01, order.append, "cancelled")
    timers.call_later(0.0, order.append, "first")
    timers.call_later(0.03, done.set)
    cancelled.cancel()
    await asyncio.wait_for(done.wait(), PATIENCE)
    assert order == ["first", "second"]
    assert timers.pending == 1  # the one much later


async def test_an_earlier_timer_wakes_the_thread_waiting_for_a_later_one() -> None:
    timers = OffLoopTimers()
    timers.call_later(LATER, pytest.fail, "the later timer fired")
    await asyncio.sleep(0)  # the thread may start waiting for it
    fired = asyncio.Event()
    timers.call_later(0.0, fired.set)
    await asyncio.wait_for(fired.wait(), PATIENCE)


async def test_a_timer_cancelled_after_it_was_due_but_before_the_loop_ran_it_is_not_called() -> None:
    """The loop runs a due timer in a later callback; a cancel in between (on the loop) still wins."""
    timers = OffLoopTimers()
    calls: list[str] = []
    timer = timers.call_later(0.0, calls.append, "late")
    # The loop is held here (no await), so the thread takes the timer out before the loop can run it.
    deadline = time.monotonic() + PATIENCE
    while timer.in_heap:
        assert time.monotonic() < deadline, "the thread never took the due timer"
        time.sleep(0.001)
    timer.cancel()
    done = asyncio.Event()
    timers.call_later(0.0, done.set)
    await asyncio.wait_for(done.wait(), PATIENCE)
    assert calls == []


async def test_cancelled_timers_do_not_pile_up() -> None:
    timers = OffLoopTimers()
    live = timers.call_later(LATER, pytest.fail, "the live timer fired")
    for _ in range(10 * _COMPACT_AT):
        timers.call_later(LATER, pytest.fail, "a cancelled timer fired").cancel()
    assert timers.pending <= 2 * _COMPACT_AT
    live.cancel()


async def test_a_timer_of_a_closed_loop_does_not_stop_the_others() -> None:
    timers = OffLoopTimers()

    async def set_one() -> None:
        timers.call_later(0.05, pytest.fail, "ran on a closed loop")

    await asyncio.to_thread(asyncio.run, set_one())  # a loop of another thread, closed on return
    fired = asyncio.Event()
    timers.call_later(0.1, fired.set)
    await asyncio.wait_for(fired.wait(), PATIENCE)


async def test_a_forked_child_runs_its_own_timers() -> None:
    """The parent's thread is not in the child; the child starts one of its own for its timers."""
    timers = OffLoopTimers()
    parent_fired = asyncio.Event()
    timers.call_later(0.0, parent_fired.set)
    await asyncio.wait_for(parent_fired.wait(), PATIENCE)  # the parent's thread runs
    timers.call_later(LATER, pytest.fail, "pending in the parent")

    async def child_timer() -> None:
        fired = asyncio.Event()
        timers.call_later(0.0, fired.set)
        await asyncio.wait_for(fired.wait(), PATIENCE)

    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if its timer fired
        try:
            asyncio.set_event_loop(None)
            asyncio.run(child_timer())
            code = 0 if timers.pending == 0 else 2
        except BaseException:
            code = 1
        os._exit(code)
    _, status = await asyncio.to_thread(os.waitpid, pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
