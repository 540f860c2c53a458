"""The brokers of this folder's tests: a real nats-server with JetStream (file storage in a temporary
directory) on loopback, one per test module; and a three-node cluster, one per test that asks for it
(its tests kill nodes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.nats_server import NatsCluster, NatsServer, running_nats_cluster, running_nats_server


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path_factory.mktemp("jetstream")) as server:
        yield server


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    with running_nats_cluster(tmp_path / "jetstream") as running:
        yield running
