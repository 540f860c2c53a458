"""The SDK's registry of the tasks this server runs, with the clean-ups a2a-sdk 1.3 misses when its
task store fails.

- An ``ActiveTask`` whose ``start()`` fails (its first read of the task store raised) is dropped from
  the registry without closing its two ``EventQueueSource``\\ s, created with it: their dispatcher
  tasks stay pending until garbage collection logs "Task was destroyed but it is pending!" (and
  OpenTelemetry "Failed to detach context"). Here the dropped task is closed (``ActiveTask.aclose``).
- A task's consumer whose write of the FAILED status fails too (the store is down) ends with that
  exception, which nothing awaits: asyncio logs "Task exception was never retrieved". Here it is
  retrieved; a store outage is logged once by ``store_outage``, any other error here.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

from a2a.server.agent_execution.active_task import ActiveTask
from a2a.server.agent_execution.active_task_registry import ActiveTaskRegistry
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Message

from e2a_grpc.a2a_server.errors import TaskStoreUnavailableError

log = logging.getLogger(__name__)


class ActiveTasks(ActiveTaskRegistry):
    """``ActiveTaskRegistry`` with the clean-ups of the module's docstring; ``holds`` for the sweeper."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The consumers whose failure ``_retrieve_failure`` retrieves.
        self._watched: weakref.WeakSet[asyncio.Task[None]] = weakref.WeakSet()

    async def get_or_create(
        self,
        task_id: str,
        call_context: ServerCallContext,
        context_id: str | None = None,
        create_task_if_missing: bool = False,
        initial_message: Message | None = None,
    ) -> ActiveTask:
        try:
            active = await super().get_or_create(
                task_id,
                call_context,
                context_id=context_id,
                create_task_if_missing=create_task_if_missing,
                initial_message=initial_message,
            )
        except Exception:
            # Still registered: the SDK removes it in a task of its own, which has not run yet.
            dropped = self._active_tasks.get(task_id)
            if dropped is not None and dropped.is_finished and dropped._producer_task is None:  # never started
                await dropped.aclose()
            raise
        consumer = active._consumer_task
        if consumer is not None and consumer not in self._watched:
            self._watched.add(consumer)
            consumer.add_done_callback(_retrieve_failure)
        return active

    async def holds(self, task_id: str) -> bool:
        """Whether this server runs the task (or keeps it waiting for input): the SDK's own test
        before it cancels a task here rather than through the store."""
        return await self.get(task_id) is not None


def _retrieve_failure(consumer: asyncio.Task[None]) -> None:
    if consumer.cancelled():
        return
    failure = consumer.exception()  # retrieved: asyncio no longer reports it
    if failure is not None and not isinstance(failure, TaskStoreUnavailableError):
        log.error("the consumer of an A2A task failed", exc_info=failure)
