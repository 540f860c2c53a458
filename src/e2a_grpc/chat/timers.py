"""Timers for the time limits of agent turns, kept off the event loop's own timer heap.

While an asyncio timer is pending, every iteration of the event loop waits in epoll with a timeout,
which arms and disarms a kernel timer each time; a streaming server's loop iterates once or twice per
frame, and on this VM that costs a Chat stream 3-7 % of its frames/s (docs/design-notes.md, "Chat's
work per frame"). A turn's time limit is a timer pending for the whole turn, so it is kept here: one
thread per process waits for the earliest deadline and hands each callback that is due to the event
loop that set it (``call_soon_threadsafe``). The loop itself then waits without a timeout.

Use it for timers that are pending for long and rarely fire; short ones (a grace period after the
limit) belong on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

#: Cancelled timers are dropped from the heap when they are due, or all at once when at least this
#: many (and half the heap) are waiting there: the heap stays within twice its live timers.
_COMPACT_AT = 64


class OffLoopTimer:
    """A pending call; ``cancel`` it on the loop that set it (as an ``asyncio.TimerHandle``)."""

    __slots__ = ("_args", "_callback", "_loop", "_owner", "cancelled", "in_heap", "when")

    def __init__(
        self,
        when: float,
        loop: asyncio.AbstractEventLoop,
        callback: Callable[..., object],
        args: tuple[Any, ...],
        owner: OffLoopTimers,
    ) -> None:
        #: ``time.monotonic()`` at which the callback is due.
        self.when = when
        self.cancelled = False
        #: Until the thread takes it out (due, or dropped when cancelled); set under the owner's lock.
        self.in_heap = True
        self._loop = loop
        self._callback = callback
        self._args = args
        self._owner = owner

    def cancel(self) -> None:
        if not self.cancelled:
            self._owner._cancel(self)

    def _hand_to_loop(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to call
            self._loop.call_soon_threadsafe(self._run)

    def _run(self) -> None:
        # On the loop's thread, as ``cancel``: a timer cancelled after it was handed over does not run.
        if not self.cancelled:
            self.cancelled = True
            self._callback(*self._args)


class OffLoopTimers:
    """Timers run by one daemon thread (started with the first timer), for any number of event loops."""

    def __init__(self) -> None:
        self._start_over()
        # A forked child has no thread, and its parent's timers are for loops it does not run: without
        # this, its own timers would wait for ever for a thread that call_later thinks is running.
        start_over = weakref.WeakMethod(self._start_over)  # registered for good: it must not keep self

        def start_over_in_child() -> None:
            method = start_over()
            if method is not None:
                method()

        os.register_at_fork(after_in_child=start_over_in_child)

    def _start_over(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, OffLoopTimer]] = []
        self._order = itertools.count()
        self._cancelled_in_heap = 0
        self._thread: threading.Thread | None = None

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> OffLoopTimer:
        """Call ``callback(*args)`` on the running event loop ``delay`` seconds from now."""
        timer = OffLoopTimer(time.monotonic() + delay, asyncio.get_running_loop(), callback, args, self)
        with self._lock:
            heapq.heappush(self._heap, (timer.when, next(self._order), timer))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="e2a-turn-timers", daemon=True)
                self._thread.start()
            elif self._heap[0][2] is timer:  # due before the one the thread waits for
                self._changed.notify()
        return timer

    @property
    def pending(self) -> int:
        """Timers in the heap, cancelled ones not yet dropped included."""
        with self._lock:
            return len(self._heap)

    def _cancel(self, timer: OffLoopTimer) -> None:
        with self._lock:  # the thread reads ``cancelled`` of the timers in the heap
            timer.cancelled = True
            if not timer.in_heap:  # handed to its loop already, whose run of it checks ``cancelled``
                return
            self._cancelled_in_heap += 1
            if self._cancelled_in_heap >= _COMPACT_AT and 2 * self._cancelled_in_heap >= len(self._heap):
                for _, _, dropped in self._heap:
                    dropped.in_heap = not dropped.cancelled
                self._heap = [entry for entry in self._heap if not entry[2].cancelled]
                heapq.heapify(self._heap)
                self._cancelled_in_heap = 0

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._heap:
                    self._changed.wait()
                when, _, timer = self._heap[0]
                delay = when - time.monotonic()
                if delay > 0:
                    self._changed.wait(delay)
                    continue  # the earliest timer may have changed meanwhile
                heapq.heappop(self._heap)
                timer.in_heap = False
                if timer.cancelled:
                    self._cancelled_in_heap -= 1
                    continue
            timer._hand_to_loop()


#: The process's turn timers (Chat calls and A2A tasks).
TURN_TIMERS = OffLoopTimers()
