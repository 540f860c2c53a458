"""Push notification delivery: each task update POSTed to the task's webhooks, in order, in the background.

The payload is the update as a ``StreamResponse`` (A2A 1.0 section 4.3.3), with the config's token in
``X-A2A-Notification-Token`` and its ``authentication`` as ``Authorization: <scheme> <credentials>``,
as the SDK's ``BasePushNotificationSender`` sends them. That sender is not used, for what it does
around the POST: the SDK awaits ``send_notification`` inside the task's event consumer, so a slow
webhook would hold the task up for every update; it logs each failure twice, once at ERROR with a
traceback and the whole URL (which may carry a secret in its query or user info). Here a task's
updates queue up and one worker per task delivers them, in order, each POST bounded by the timeout;
a failure is one WARNING line naming the task, the config and the webhook's origin.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.server.tasks import PushNotificationConfigStore, PushNotificationEvent, PushNotificationSender
from a2a.types.a2a_pb2 import TaskPushNotificationConfig
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict

from e2a_grpc.a2a_server.push_targets import PushTargets
from e2a_grpc.settings import ServerSettings

log = logging.getLogger(__name__)

#: The header of a config's ``token`` (A2A 1.0 section 6.6; the SDK's sender and client use it too).
TOKEN_HEADER = "X-A2A-Notification-Token"


def notification_headers(config: TaskPushNotificationConfig) -> dict[str, str]:
    """The headers a webhook POST carries for ``config``: its token and its authentication."""
    headers = {}
    if config.token:
        headers[TOKEN_HEADER] = config.token
    if config.authentication.scheme and config.authentication.credentials:
        headers["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}"
    return headers


def webhook_origin(url: str) -> str:
    """The part of a webhook URL a log line shows: scheme, host and port, never its user info, path or query."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "an unreadable URL"
    host = parts.hostname or ""
    return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}{port}"


class WebhookSender(PushNotificationSender):
    """Delivers the updates of each task to the webhooks its configs name, in order and in the background."""

    def __init__(
        self, configs: PushNotificationConfigStore, targets: PushTargets, timeout_seconds: float, grace_seconds: float
    ) -> None:
        self._configs = configs
        self._targets = targets
        self._timeout = timeout_seconds
        self._grace = grace_seconds
        # Redirects are not followed: one could lead to a target the URL check refuses.
        self._http = httpx.AsyncClient(timeout=timeout_seconds, follow_redirects=False)
        self._backlogs: dict[str, deque[dict[str, Any]]] = {}
        self._workers: set[asyncio.Task[None]] = set()

    async def send_notification(self, task_id: str, event: PushNotificationEvent) -> None:
        """Queue the update (as it is now: the SDK goes on changing its task) and return at once."""
        payload = MessageToDict(to_stream_response(event))
        backlog = self._backlogs.get(task_id)
        if backlog is not None:  # its worker is running and takes it in turn
            backlog.append(payload)
            return
        self._backlogs[task_id] = deque([payload])
        worker = asyncio.create_task(self._deliver(task_id), name=f"push notifications of task {task_id}")
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)

    async def _deliver(self, task_id: str) -> None:
        backlog = self._backlogs[task_id]
        try:
            while backlog:
                payload = backlog.popleft()
                try:
                    configs = await self._configs.get_info_for_dispatch(task_id)
                except Exception as exc:  # the store's database is down: the next update tries again
                    log.warning("push notification of task %s not sent: reading its configs failed: %r", task_id, exc)
                    continue
                await asyncio.gather(*(self._post(task_id, config, payload) for config in configs))
        finally:
            # No await between the empty check and this: an update queued later starts a new worker.
            del self._backlogs[task_id]

    async def _post(self, task_id: str, config: TaskPushNotificationConfig, payload: dict[str, Any]) -> None:
        origin = webhook_origin(config.url)
        # Checked again at each POST, not only when registered: the host's DNS answer may have changed,
        # and a config kept in the database may predate the operator's networks.
        reason = await self._targets.refusal(config.url)
        if reason is not None:
            log.warning(
                "push notification of task %s not sent to %s (config %s): %s", task_id, origin, config.id, reason
            )
            return
        try:
            response = await self._http.post(config.url, json=payload, headers=notification_headers(config))
        except httpx.TimeoutException:
            failure = f"no answer within {self._timeout:g} s"
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        else:
            if response.is_success:
                return
            failure = f"it answered HTTP {response.status_code}"
        log.warning("push notification of task %s to %s (config %s) failed: %s", task_id, origin, config.id, failure)

    async def aclose(self) -> None:
        """Let the queued updates go out for up to the grace period, then stop."""
        if self._workers:
            _, late = await asyncio.wait(set(self._workers), timeout=self._grace)
            for worker in late:
                worker.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await self._http.aclose()


@dataclass(frozen=True)
class PushNotifications:
    """What the request handler needs to offer push notifications: the configs, the URL policy, the sender."""

    configs: PushNotificationConfigStore
    targets: PushTargets
    sender: WebhookSender


def push_notifications(
    settings: ServerSettings, configs: PushNotificationConfigStore | None
) -> PushNotifications | None:
    """Push notifications over ``configs`` as the settings say; None when they are not offered (no store)."""
    if configs is None:
        return None
    targets = PushTargets(settings.a2a_push_networks, settings.a2a_push_timeout_seconds)
    sender = WebhookSender(configs, targets, settings.a2a_push_timeout_seconds, settings.grace_seconds)
    return PushNotifications(configs, targets, sender)
