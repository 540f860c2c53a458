"""The JetStream key-value buckets of the bus (the agent registry, session ownership): opened, or
created when missing, with a bucket-wide TTL (nats-py, the ``nats`` extra).

The TTL is the bucket's ``max_age`` (every entry expires that long after it was last written), not
a per-key TTL: those need nats-server 2.11 and a stream with ``allow_msg_ttl``, while Debian's
package is 2.9, and a bucket-wide TTL is what these buckets need (every entry lives by the same
heartbeat). The bucket is created with the TTL of whoever creates it first; one whose TTL differs
says so once and keeps the bucket's (docs/agent-registry.md).
"""

from __future__ import annotations

import datetime
import logging

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from e2a_grpc.broker.jetstream_setup import JetStreamSetupError, keep_replicas

log = logging.getLogger(__name__)

#: The longest one request to a bucket (a write, a delete, reading the entries) waits for JetStream.
REQUEST_TIMEOUT_SECONDS = 5.0
#: What a bucket request raises when the broker is away or does not answer in time.
BROKER_ERRORS = (nats.errors.Error, OSError, TimeoutError)


async def open_bucket(
    nc: NatsClient, bucket: str, *, ttl: float, replicas: int, timeout: float, role: str
) -> tuple[KeyValue, float]:
    """``bucket`` and the TTL its entries live by: created with ``ttl`` and ``replicas`` (file storage,
    one value per key) if missing, several processes racing to create it; an existing bucket keeps its
    own TTL (``ttl`` when it has none) and replicas (``jetstream_setup``). ``role`` names the bucket in
    the log ("agent registry")."""
    js = nc.jetstream(timeout=timeout)
    try:
        kv = await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        config = KeyValueConfig(bucket=bucket, history=1, ttl=ttl, storage=StorageType.FILE, replicas=replicas)
        try:
            return await js.create_key_value(config), ttl
        except nats.js.errors.BadRequestError:
            kv = await js.key_value(bucket)  # another process created it first; anything else fails here
        except nats.js.errors.APIError as exc:
            raise JetStreamSetupError.refused(f"{role}'s bucket", bucket, replicas, exc) from exc
    status = await kv.status()
    keep_replicas(f"{role}'s bucket", bucket, status.stream_info.config.num_replicas or 1, replicas)
    bucket_ttl = status.ttl
    if bucket_ttl != ttl:
        log.warning(
            "the %s's bucket %s has a TTL of %s, not the %g s configured: entries expire with the bucket's (it is "
            "set by whoever creates the bucket)",
            role,
            bucket,
            f"{bucket_ttl:g} s" if bucket_ttl else "none",
            ttl,
        )
    return kv, bucket_ttl or ttl


def expired(written_at: datetime.datetime, ttl: float, moment: datetime.datetime) -> bool:
    """Whether an entry written at ``written_at`` (its value's own time) is past a bucket's ``ttl`` at
    ``moment``: the broker removes it about then, silently on nats-server 2.9 (no delete marker reaches a
    watch), so readers that keep entries drop it themselves. Writers' and readers' clocks are taken to
    agree (NTP), as the value's time is the writer's."""
    return (moment - written_at).total_seconds() >= ttl
