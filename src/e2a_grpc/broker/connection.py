"""The NATS connection of the broker's publisher and readers (nats-py, the ``nats`` extra)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import nats
from nats.aio.client import Client as NatsClient

log = logging.getLogger(__name__)

#: Connection attempts before a first connection gives up (a broker that is down now is an error);
#: once connected, reconnection never stops (a broker restart is not).
FIRST_CONNECT_ATTEMPTS = 3


async def _log_error(error: Exception) -> None:
    log.debug("nats: %r", error)  # connection troubles: the retries above say what matters


def _errors_to(error_cb: Callable[[Exception], Awaitable[None]]) -> Callable[[Exception], Awaitable[None]]:
    async def logged_then_handled(error: Exception) -> None:
        await _log_error(error)
        await error_cb(error)

    return logged_then_handled


async def connect(
    url: str,
    *,
    disconnected_cb: Callable[[], Awaitable[None]] | None = None,
    reconnected_cb: Callable[[], Awaitable[None]] | None = None,
    error_cb: Callable[[Exception], Awaitable[None]] | None = None,
) -> NatsClient:
    """A connection to ``url`` (or to any of comma-separated URLs, a cluster's nodes) that reconnects
    for as long as it is open; raises NoServersError (or OSError) when no broker can be reached now.
    ``error_cb`` hears the errors nats-py reports asynchronously (a slow consumer's dropped messages)."""
    nc = await nats.connect(
        [server.strip() for server in url.split(",") if server.strip()],
        connect_timeout=2,
        allow_reconnect=True,
        max_reconnect_attempts=FIRST_CONNECT_ATTEMPTS,
        reconnect_time_wait=0.25,
        name="e2a-grpc",
        error_cb=_log_error if error_cb is None else _errors_to(error_cb),
        disconnected_cb=disconnected_cb,
        reconnected_cb=reconnected_cb,
    )
    nc.options["max_reconnect_attempts"] = -1  # nats-py reads it on each reconnection
    return nc
