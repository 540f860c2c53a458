"""Two ``e2a-grpc serve --a2a-port`` processes on one real PostgreSQL (a throwaway cluster on loopback)
share their tasks: a task created on one is read, followed and cancelled on the other, and the cancel
reaches the ACP agent running the task on the first; a push notification config registered on one is
kept in the database, so the other lists it."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError

from e2a_grpc.a2a_server.push_delivery import TOKEN_HEADER
from tests.a2a_server.conftest import a2a_client, send_request, stream_events, streamed_text, task_of, user_message
from tests.support.postgres import throwaway_cluster
from tests.support.processes import free_port, running_server_process, wait_until
from tests.support.webhooks import webhook_receiver

pytestmark = [pytest.mark.postgres, pytest.mark.subprocess]  # PostgreSQL and e2a-grpc serve processes

AGENT = Path(__file__).resolve().parents[1] / "support" / "agents" / "acp_agent.py"


@dataclass(frozen=True)
class Instance:
    url: str
    agent_events: Path

    def events(self, event: str) -> list[dict[str, Any]]:
        lines = self.agent_events.read_text(encoding="utf-8").splitlines() if self.agent_events.exists() else []
        return [record for record in map(json.loads, lines) if record["event"] == event]


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Instance, Instance]]:
    directory = tmp_path_factory.mktemp("a2a-postgres")
    with throwaway_cluster() as cluster, contextlib.ExitStack() as stack:
        started = []
        for name in ("a", "b"):
            events = directory / f"agent-{name}.jsonl"
            a2a_port = free_port()
            stack.enter_context(
                running_server_process(
                    *(
                        "--backend",
                        "acp",
                        "--acp-command",
                        shlex.join([sys.executable, str(AGENT), "--events", str(events)]),
                    ),
                    *("--a2a-port", str(a2a_port), "--a2a-grpc-port", str(free_port())),
                    *("--a2a-postgres-url", cluster.url),
                    *("--a2a-push-notifications", "--a2a-push-allowed-networks", "127.0.0.1/32"),
                    log=directory / f"server-{name}.log",
                )
            )
            started.append(Instance(f"http://127.0.0.1:{a2a_port}", events))
        yield started[0], started[1]


@pytest.mark.asyncio
async def test_a_task_created_on_one_instance_is_read_followed_and_cancelled_on_the_other(
    instances: tuple[Instance, Instance], transport: str
) -> None:
    first, second = instances
    cancels_before = len(first.events("cancel"))
    async with (
        a2a_client(first.url, transport, streaming=False) as on_first,
        a2a_client(second.url, transport) as on_second,
    ):
        created = task_of(
            await stream_events(
                on_first, send_request(user_message("slow", str(uuid.uuid4())), return_immediately=True)
            )
        )
        read = await on_second.get_task(GetTaskRequest(id=created.id))
        assert read.id == created.id and read.context_id == created.context_id
        assert read.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)

        # The stream of a task running on the first instance, resubscribed on the second, goes on.
        subscription = on_second.subscribe(SubscribeToTaskRequest(id=created.id))
        snapshot = await anext(subscription)
        assert snapshot.task.id == created.id
        followed = []
        async for event in subscription:
            followed.append(event)
            if streamed_text(followed).count("tick") >= 3:
                break
        await subscription.aclose()  # type: ignore[attr-defined]

        cancelled = await on_second.cancel_task(CancelTaskRequest(id=created.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        # The first instance sees the canceled state at its next write and stops the turn: its agent
        # gets session/cancel.
        assert wait_until(lambda: len(first.events("cancel")) > cancels_before, 10.0), (
            "no session/cancel reached the agent"
        )
        assert (await on_first.get_task(GetTaskRequest(id=created.id))).status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelableError):
            await on_first.cancel_task(CancelTaskRequest(id=created.id))
    assert not second.events("cancel"), "the cancel reached the agent of the instance that did not run the task"


@pytest.mark.asyncio
async def test_tasks_of_both_instances_are_listed_on_either(
    instances: tuple[Instance, Instance], transport: str
) -> None:
    first, second = instances
    context_id = str(uuid.uuid4())
    async with (
        a2a_client(first.url, transport, streaming=False) as on_first,
        a2a_client(second.url, transport, streaming=False) as on_second,
    ):
        one = task_of(await stream_events(on_first, send_request(user_message("one", context_id))))
        two = task_of(await stream_events(on_second, send_request(user_message("two", context_id))))
        listed = await on_first.list_tasks(ListTasksRequest(context_id=context_id))
    assert {task.id for task in listed.tasks} == {one.id, two.id}
    assert one.status.state == two.status.state == TaskState.TASK_STATE_COMPLETED


@pytest.mark.asyncio
async def test_a_push_config_registered_on_one_instance_is_kept_for_both(
    instances: tuple[Instance, Instance], transport: str
) -> None:
    first, second = instances
    async with (
        webhook_receiver() as receiver,
        a2a_client(first.url, transport, streaming=False) as on_first,
        a2a_client(second.url, transport, streaming=False) as on_second,
    ):
        request = send_request(user_message("notify", str(uuid.uuid4())))
        config = TaskPushNotificationConfig(id="hook", url=receiver.url(), token="cluster-token")
        request.configuration.task_push_notification_config.CopyFrom(config)
        task = task_of(await stream_events(on_first, request))
        notifications = await receiver.until_final()
        listed = await on_second.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
    assert notifications[-1].body.status_update.status.state == task.status.state == TaskState.TASK_STATE_COMPLETED
    assert {notification.headers[TOKEN_HEADER.lower()] for notification in notifications} == {"cluster-token"}
    assert [(config.id, config.url) for config in listed.configs] == [("hook", receiver.url())]
