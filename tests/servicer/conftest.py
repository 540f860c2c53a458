"""Fixtures of the servicer tests: one in-process server per module, with the default settings.

A test module that needs other settings or another backend defines its own ``server`` fixture.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest_asyncio

from tests.conftest import InProcessServer, in_process_server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[InProcessServer]:
    async with in_process_server() as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def channel(server: InProcessServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(server.address) as opened:
        yield opened
