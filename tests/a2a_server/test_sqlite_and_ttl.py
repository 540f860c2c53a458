"""Task storage: the SQLite store keeps tasks across a restart; ended tasks are deleted after their TTL."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    ListTasksRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import TaskNotFoundError

from e2a_grpc.a2a_server.stores import delete_ended_tasks
from tests.a2a_server.conftest import (
    a2a_client,
    a2a_server,
    artifact_text,
    send_request,
    stream_events,
    task_of,
    user_message,
)


@pytest.mark.asyncio
async def test_sqlite_tasks_survive_a_restart(transport: str, tmp_path: Path) -> None:
    database = tmp_path / "tasks.sqlite"
    async with a2a_server(a2a_sqlite_path=database) as server, a2a_client(server, transport, streaming=False) as client:
        task = task_of(await stream_events(client, send_request(user_message("remember me"))))
    assert database.stat().st_size > 0
    async with a2a_server(a2a_sqlite_path=database) as server, a2a_client(server, transport) as client:
        read = await client.get_task(GetTaskRequest(id=task.id))
        listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
    assert read.status.state == TaskState.TASK_STATE_COMPLETED and artifact_text(read) == "remember me"
    assert [listed_task.id for listed_task in listed.tasks] == [task.id]


def _task(task_id: str, state: TaskState, ended_seconds_ago: float) -> Task:
    status = TaskStatus(state=state)
    status.timestamp.FromMicroseconds(int((time.time() - ended_seconds_ago) * 1e6))
    return Task(id=task_id, context_id="c", status=status)


@pytest.mark.asyncio
async def test_only_tasks_that_ended_longer_ago_than_the_ttl_are_deleted() -> None:
    store = InMemoryTaskStore()
    context = ServerCallContext()
    tasks = [
        _task("old-completed", TaskState.TASK_STATE_COMPLETED, 100),
        _task("old-failed", TaskState.TASK_STATE_FAILED, 100),
        _task("old-canceled", TaskState.TASK_STATE_CANCELED, 100),
        _task("recent-completed", TaskState.TASK_STATE_COMPLETED, 1),
        _task("old-but-working", TaskState.TASK_STATE_WORKING, 100),
    ]
    # More than a page of old tasks: every page is swept.
    tasks += [_task(f"old-{index}", TaskState.TASK_STATE_COMPLETED, 100) for index in range(150)]
    for task in tasks:
        await store.save(task, context)
    assert await delete_ended_tasks(store, older_than_seconds=50) == 153
    left = await store.list(ListTasksRequest(page_size=100), context)
    assert {task.id for task in left.tasks} == {"recent-completed", "old-but-working"}


@pytest.mark.asyncio
async def test_the_push_notification_configs_of_deleted_tasks_are_deleted_with_them() -> None:
    store, configs, context = InMemoryTaskStore(), InMemoryPushNotificationConfigStore(), ServerCallContext()
    for task in (_task("old", TaskState.TASK_STATE_COMPLETED, 100), _task("recent", TaskState.TASK_STATE_COMPLETED, 1)):
        await store.save(task, context)
        await configs.set_info(task.id, TaskPushNotificationConfig(id="hook", url="http://8.8.8.8/"), context)
    assert await delete_ended_tasks(store, older_than_seconds=50, push_configs=configs) == 1
    assert await configs.get_info("old", context) == []
    assert [config.id for config in await configs.get_info("recent", context)] == ["hook"]


@pytest.mark.asyncio
async def test_the_sweeper_deletes_ended_tasks_of_a_running_server(transport: str) -> None:
    async with a2a_server(a2a_task_ttl_seconds=0.2) as server, a2a_client(server, transport, streaming=False) as client:
        task = task_of(await stream_events(client, send_request(user_message("short-lived"))))
        storage = server.storage
        assert storage is not None

        async def deleted() -> None:  # the sweeper runs on a timer (every ttl/4): there is no event to await
            while await storage.store.get(task.id, ServerCallContext()) is not None:
                await asyncio.sleep(0.05)

        await asyncio.wait_for(deleted(), 10.0)
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=task.id))
