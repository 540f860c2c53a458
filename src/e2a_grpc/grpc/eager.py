"""Starting a coroutine at once, in the caller's task, and awaiting its end later.

A Chat call builds its next frame while the frame before it is being written (``chat_servicer``), so
it must start a write without awaiting it yet. A task would start the write only on a later turn of
the event loop, after the next frame is built, and would cost a task per frame. ``EagerStart`` instead
runs the coroutine (grpc's ``context.write``) right away, up to its first suspension: grpc's write has
then handed the frame to gRPC core and waits for core to report it written. Awaiting the
``EagerStart`` runs the rest of the coroutine in the awaiting task, exactly as ``await coroutine``
would have: the task waits on the same future, and a cancellation of the task reaches the coroutine
at that future. Python 3.12's eager tasks do the same first step; this runs on 3.11.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any

#: What ``next`` returns for a coroutine that ended (a coroutine returning None raises no StopIteration there).
_ENDED = object()


class EagerStart:
    """``coroutine``, run up to its first suspension on construction (an exception it raises before
    then is raised here); await it once to run the rest, or ``abandon`` it."""

    __slots__ = ("_coroutine", "_waiting_on")

    def __init__(self, coroutine: Coroutine[Any, Any, None]) -> None:
        #: What the coroutine waits on: an asyncio future, or None for a bare yield to the event loop.
        self._waiting_on: Any = None
        self._coroutine: Coroutine[Any, Any, None] | None = None
        waiting_on = next(coroutine.__await__(), _ENDED)
        if waiting_on is not _ENDED:
            self._coroutine = coroutine
            self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, None]:
        coroutine, self._coroutine = self._coroutine, None
        if coroutine is None:
            return
        waiting_on = self._waiting_on
        # A future done while the caller did other work costs no turn of the event loop.
        while not (isinstance(waiting_on, asyncio.Future) and waiting_on.done()):
            try:
                yield waiting_on  # the task waits on it as it would under ``await coroutine``
                break
            except BaseException as exc:  # a cancellation: the coroutine gets it where it waits
                try:
                    waiting_on = coroutine.throw(exc)
                except StopIteration:
                    return
        # The rest as ``await coroutine`` runs it: resumed where it waits, any later waits passed on.
        yield from coroutine.__await__()

    def abandon(self) -> None:
        """Stop the coroutine where it waits, as a cancelled task would (its future cancelled), without
        awaiting it: for when the caller's work ends before it got to await the coroutine."""
        coroutine, self._coroutine = self._coroutine, None
        if coroutine is not None:
            if isinstance(self._waiting_on, asyncio.Future):
                self._waiting_on.cancel()
            coroutine.close()
