"""One server per port: a taken port fails the start with one clear line, and a started server shares
its port with no one (grpc's default SO_REUSEPORT would split the clients between two servers).

``e2a-grpc serve`` on a taken port, as a process: tests/e2e/test_server_process.py.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import grpc
import pytest

from e2a_grpc.grpc.server import E2AServer, ListenError
from e2a_grpc.settings import ServerSettings
from tests.conftest import in_process_server, server_config


def _on_port(port: int) -> ServerSettings:
    return server_config().model_copy(update={"port": port})


@pytest.fixture
def listening_socket() -> Iterator[int]:
    """A port another program holds: a plain socket listening on 127.0.0.1; yields the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_port_another_program_holds_is_a_clear_error(listening_socket: int) -> None:
    with pytest.raises(ListenError) as caught:
        E2AServer(_on_port(listening_socket))
    assert str(caught.value) == f"cannot listen on 127.0.0.1:{listening_socket}: address already in use"
    assert isinstance(caught.value, OSError)  # what the CLI prints as one line, exit 1


@pytest.mark.asyncio
async def test_a_second_server_on_the_same_port_fails_to_start() -> None:
    async with in_process_server() as first:
        with pytest.raises(
            ListenError, match=f"cannot listen on 127.0.0.1:{first.server.port}: address already in use"
        ):
            E2AServer(_on_port(first.server.port))


@pytest.mark.asyncio
async def test_no_other_grpc_server_can_share_the_port() -> None:
    """grpc servers set SO_REUSEPORT unless told not to; ours does not, so even a server that asks
    for port sharing cannot bind next to it."""
    async with in_process_server() as running:
        other = grpc.aio.server()  # grpc's defaults: SO_REUSEPORT on
        try:
            with pytest.raises(RuntimeError, match="Failed to bind"):
                other.add_insecure_port(running.address)
        finally:
            await other.stop(None)
