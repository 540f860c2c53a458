"""The streams and buckets a process creates on JetStream when they are missing (nats-py, the ``nats``
extra), by one rule: whoever creates one first sets its configuration (several processes may race to;
the others use what the first made), and a process configured otherwise keeps the existing one and
says so once (its replicas here; a bucket's TTL in ``kv_buckets``), since changing a live stream is
an operator's decision (``nats stream edit``). A creation JetStream refuses (more replicas than the
cluster has servers, a single server asked for replicas) is a ``JetStreamSetupError`` that names what
was asked for and gives the server's reason.
"""

from __future__ import annotations

import logging

import nats.js.errors
from nats.js import JetStreamContext
from nats.js.api import StreamConfig

log = logging.getLogger(__name__)


class JetStreamSetupError(Exception):
    """JetStream refused to create a stream or bucket this process needs."""

    @classmethod
    def refused(cls, kind: str, name: str, replicas: int, exc: nats.js.errors.APIError) -> JetStreamSetupError:
        reason = exc.description or f"error {exc.err_code or exc.code}"
        return cls(
            f"the NATS server refused to create the {kind} {name} with {replicas} replicas (--nats-replicas): {reason}"
        )


def keep_replicas(kind: str, name: str, existing: int, configured: int) -> None:
    """Say once that an existing stream or bucket has other replicas than configured (it is kept)."""
    if existing != configured:
        log.warning(
            "the %s %s has %d replicas, not the %d configured (--nats-replicas): it is kept as it is (replicas are "
            "set by whoever creates it)",
            kind,
            name,
            existing,
            configured,
        )


async def ensure_stream(js: JetStreamContext, config: StreamConfig, *, kind: str) -> None:
    """Create the stream ``config`` describes unless one of its name exists. ``kind`` names it in the
    log and in errors ("frames' stream")."""
    name = config.name or ""
    replicas = config.num_replicas or 1
    try:
        info = await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        try:
            await js.add_stream(config)
        except nats.js.errors.BadRequestError:
            info = await js.stream_info(name)  # another process created it first; anything else fails here
        except nats.js.errors.APIError as exc:
            raise JetStreamSetupError.refused(kind, name, replicas, exc) from exc
        else:
            return
    keep_replicas(kind, name, info.config.num_replicas or 1, replicas)
