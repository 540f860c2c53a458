"""Push notifications end to end: the server POSTs task updates to a webhook receiver on loopback.

Loopback is a refused target by default, so these servers allow 127.0.0.1/32 through the operator's
setting (``a2a_push_allowed_networks``), as an operator would for a receiver on the same host.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, PushNotificationNotSupportedError, TaskNotFoundError

from e2a_grpc.a2a_server.push_delivery import TOKEN_HEADER
from e2a_grpc.settings import A2A_CARD_PATH
from tests.a2a_server.conftest import (
    TRANSPORTS,
    a2a_client,
    a2a_server,
    send_request,
    states,
    stream_events,
    streamed_text,
    task_of,
    user_message,
)
from tests.support.fakes import ControlledBackend
from tests.support.waiting import within
from tests.support.webhooks import Notification, webhook_receiver

TEXT = "notify me of every step"
LOOPBACK = "127.0.0.1/32"
PUSH_ON: dict[str, Any] = {"a2a_push_notifications": True, "a2a_push_allowed_networks": LOOPBACK}


def push_config(url: str, token: str, credentials: str, config_id: str = "") -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        id=config_id,
        url=url,
        token=token,
        authentication=AuthenticationInfo(scheme="Bearer", credentials=credentials),
    )


def with_push(request: SendMessageRequest, config: TaskPushNotificationConfig) -> SendMessageRequest:
    request.configuration.task_push_notification_config.CopyFrom(config)
    return request


def bodies(notifications: list[Notification]) -> list[StreamResponse]:
    return [notification.body for notification in notifications]


def task_ids(notifications: list[Notification]) -> set[str]:
    found = set()
    for body in bodies(notifications):
        kind = body.WhichOneof("payload")
        found.add(body.task.id if kind == "task" else getattr(body, str(kind)).task_id)
    return found


@pytest.mark.asyncio
async def test_a_send_with_a_push_config_notifies_each_update_in_order_with_token_and_auth(transport: str) -> None:
    async with (
        webhook_receiver() as receiver,
        a2a_server(**PUSH_ON) as server,
        a2a_client(server, transport, streaming=False) as client,
        a2a_client(server, transport) as streaming_client,
    ):
        config = push_config(receiver.url(), "token-1", "secret-1")
        task = task_of(await stream_events(client, with_push(send_request(user_message(TEXT)), config)))
        notifications = await receiver.until_final()
        # The same updates a streaming client sees, in the same order.
        streamed = await stream_events(streaming_client, send_request(user_message(TEXT)))
    assert states(bodies(notifications)) == states(streamed)
    assert states(bodies(notifications))[-1] == "TASK_STATE_COMPLETED"
    assert streamed_text(bodies(notifications)) == TEXT
    assert task_ids(notifications) == {task.id}
    for notification in notifications:
        assert notification.path == "/hook"
        assert notification.headers[TOKEN_HEADER.lower()] == "token-1"
        assert notification.headers["authorization"] == "Bearer secret-1"


@pytest.mark.asyncio
async def test_a_config_created_on_a_running_task_gets_its_later_updates(transport: str) -> None:
    backend = ControlledBackend(before=("first ",), after=("last",))
    async with (
        webhook_receiver() as receiver,
        a2a_server(backend, **PUSH_ON) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        task = task_of(await stream_events(client, send_request(user_message(TEXT), return_immediately=True)))
        await within(backend.waiting_turns(1))
        config = push_config(receiver.url("/created"), "token-2", "secret-2", config_id="created")
        config.task_id = task.id
        stored = await client.create_task_push_notification_config(config)
        assert (stored.id, stored.task_id, stored.url) == ("created", task.id, receiver.url("/created"))
        backend.release.set()
        notifications = await receiver.until_final()
    assert states(bodies(notifications)) == ["TASK_STATE_COMPLETED"]
    assert streamed_text(bodies(notifications)) == "last"
    assert task_ids(notifications) == {task.id}
    assert {(n.headers[TOKEN_HEADER.lower()], n.headers["authorization"]) for n in notifications} == {
        ("token-2", "Bearer secret-2")
    }


@pytest.mark.asyncio
async def test_configs_are_listed_read_and_deleted(transport: str) -> None:
    async with a2a_server(**PUSH_ON) as server, a2a_client(server, transport, streaming=False) as client:
        task = task_of(await stream_events(client, send_request(user_message(TEXT))))
        for config_id in ("a", "b"):
            config = push_config(f"http://127.0.0.1:9/{config_id}", f"token-{config_id}", "secret", config_id)
            config.task_id = task.id
            await client.create_task_push_notification_config(config)
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert sorted((config.id, config.url, config.token) for config in listed.configs) == [
            ("a", "http://127.0.0.1:9/a", "token-a"),
            ("b", "http://127.0.0.1:9/b", "token-b"),
        ]
        read = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="a")
        )
        assert (read.url, read.authentication.credentials) == ("http://127.0.0.1:9/a", "secret")
        delete = DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="a")
        await client.delete_task_push_notification_config(delete)
        await client.delete_task_push_notification_config(delete)  # deleting again is no error (A2A: idempotent)
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert [config.id for config in listed.configs] == ["b"]
        with pytest.raises(TaskNotFoundError):
            await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="a")
            )
        with pytest.raises(TaskNotFoundError):
            await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id="no-such"))


@pytest.mark.asyncio
async def test_without_the_operator_setting_a_loopback_webhook_is_refused(transport: str) -> None:
    async with (
        webhook_receiver() as receiver,
        a2a_server(a2a_push_notifications=True) as server,
        a2a_client(server, transport, streaming=False) as client,
    ):
        with pytest.raises(InvalidParamsError, match=r"127\.0\.0\.1 is not a public address \(loopback\)"):
            await stream_events(
                client, with_push(send_request(user_message(TEXT)), push_config(receiver.url(), "t", "c"))
            )
        task = task_of(await stream_events(client, send_request(user_message(TEXT))))
        for url, reason in (
            (receiver.url(), "loopback"),
            (f"http://[::ffff:127.0.0.1]:{receiver.port}/", "loopback"),
            ("http://169.254.169.254/latest/meta-data", "link-local"),
            ("ftp://example.org/hook", "scheme must be http or https"),
        ):
            config = push_config(url, "t", "c")
            config.task_id = task.id
            with pytest.raises(InvalidParamsError, match=reason):
                await client.create_task_push_notification_config(config)
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
    assert list(listed.configs) == [] and receiver.received.empty()


@pytest.mark.asyncio
async def test_with_the_setting_off_push_is_not_supported(transport: str) -> None:
    async with a2a_server() as server, a2a_client(server, transport, streaming=False) as client:
        async with httpx.AsyncClient() as http:
            card = (await http.get(f"http://127.0.0.1:{server.port}{A2A_CARD_PATH}")).json()
        assert not card["capabilities"].get("pushNotifications", False)
        task = task_of(await stream_events(client, send_request(user_message(TEXT))))
        config = push_config("http://203.0.113.7/hook", "t", "c", "x")
        config.task_id = task.id
        calls: list[Any] = [
            client.create_task_push_notification_config(config),
            client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id, id="x")),
            client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id)),
            client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="x")
            ),
            stream_events(client, with_push(send_request(user_message(TEXT)), config)),
        ]
        for call in calls:
            with pytest.raises(PushNotificationNotSupportedError):
                await call


@pytest.mark.asyncio
async def test_the_card_offers_push_notifications_when_the_setting_is_on() -> None:
    async with a2a_server(a2a_push_notifications=True) as server, httpx.AsyncClient() as http:
        card = (await http.get(f"http://127.0.0.1:{server.port}{A2A_CARD_PATH}")).json()
    assert card["capabilities"]["pushNotifications"] is True


@pytest.mark.asyncio
async def test_sqlite_keeps_the_configs_across_a_restart(transport: str, tmp_path: Path) -> None:
    database = tmp_path / "tasks.sqlite"
    settings: dict[str, Any] = {**PUSH_ON, "a2a_sqlite_path": database}
    async with a2a_server(**settings) as server, a2a_client(server, transport, streaming=False) as client:
        task = task_of(await stream_events(client, send_request(user_message(TEXT))))
        config = push_config("http://127.0.0.1:9/kept", "token-kept", "secret-kept", "kept")
        config.task_id = task.id
        await client.create_task_push_notification_config(config)
    async with a2a_server(**settings) as server, a2a_client(server, transport, streaming=False) as client:
        read = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="kept")
        )
    assert (read.url, read.token, read.authentication.scheme, read.authentication.credentials) == (
        "http://127.0.0.1:9/kept",
        "token-kept",
        "Bearer",
        "secret-kept",
    )


@pytest.mark.asyncio
async def test_a_failing_webhook_is_logged_once_per_update_without_secrets_and_the_task_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="e2a_grpc.a2a_server.push_delivery")
    async with (
        webhook_receiver(status=500) as receiver,
        a2a_server(**PUSH_ON) as server,
        a2a_client(server, TRANSPORTS[0], streaming=False) as client,
    ):
        url = f"http://user:pass-in-url@127.0.0.1:{receiver.port}/secret-path?sig=secret-query"
        request = with_push(send_request(user_message(TEXT)), push_config(url, "token-3", "secret-3"))
        task = task_of(await stream_events(client, request))
        posted = await receiver.until_final()
    # The server has stopped: every delivery has ended (within its grace period), so every failure is logged.
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    failures = [record for record in caplog.records if record.name == "e2a_grpc.a2a_server.push_delivery"]
    assert len(failures) == len(posted) and all(record.levelno == logging.WARNING for record in failures)
    for record in failures:
        text = record.getMessage()
        assert "HTTP 500" in text and f"127.0.0.1:{receiver.port}" in text and not record.exc_info
        for secret in ("token-3", "secret-3", "pass-in-url", "secret-path", "secret-query"):
            assert secret not in text


@pytest.mark.asyncio
async def test_a_webhook_that_does_not_answer_holds_up_neither_the_task_nor_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="e2a_grpc.a2a_server.push_delivery")
    # The timeout is longer than the test's bound on the send: a send that waited for a POST would fail.
    async with (
        webhook_receiver(hold=True) as silent,
        webhook_receiver() as answering,
        a2a_server(**PUSH_ON, a2a_push_timeout_seconds=60) as server,
        a2a_client(server, TRANSPORTS[0], streaming=False) as client,
    ):
        request = with_push(send_request(user_message(TEXT)), push_config(silent.url(), "t", "c"))
        task = task_of(await within(stream_events(client, request)))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        await within(silent.arrived.wait())
        other = with_push(send_request(user_message(TEXT)), push_config(answering.url(), "t", "c"))
        await within(stream_events(client, other))
        assert states(bodies(await answering.until_final()))[-1] == "TASK_STATE_COMPLETED"
        silent.release.set()
        await silent.until_final()


@pytest.mark.asyncio
async def test_a_post_past_the_timeout_fails_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="e2a_grpc.a2a_server.push_delivery")
    async with (
        webhook_receiver(hold=True) as silent,
        a2a_server(**PUSH_ON, a2a_push_timeout_seconds=0.2) as server,
        a2a_client(server, TRANSPORTS[0], streaming=False) as client,
    ):
        request = with_push(send_request(user_message(TEXT)), push_config(silent.url(), "t", "c"))
        await stream_events(client, request)
        await silent.until_final()
    warnings = [record.getMessage() for record in caplog.records if record.name.endswith("push_delivery")]
    assert warnings and all("no answer within 0.2 s" in warning for warning in warnings)
