"""The broker the tests of this folder share: a real nats-server with JetStream (file storage in a
temporary directory) on loopback, one per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.nats_server import NatsServer, running_nats_server


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path_factory.mktemp("jetstream")) as server:
        yield server
