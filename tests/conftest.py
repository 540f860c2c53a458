"""Shared test fixtures and helpers: the repository's test data, servers on loopback."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Test data kept in the repository (testdata/README.md says where each part came from).
TESTDATA = REPO_ROOT / "testdata"
VECTORS_DIR = TESTDATA / "vectors"
SPEC_EXAMPLES_DIR = TESTDATA / "spec"


def free_port() -> int:
    """A TCP port on the loopback interface that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerAddress(str):
    """ "127.0.0.1:PORT" of a test server, which also knows the server's process id."""

    pid: int

    def __new__(cls, address: str, pid: int) -> ServerAddress:
        value = super().__new__(cls, address)
        value.pid = pid
        return value


def open_fds(pid: int) -> int:
    """How many file descriptors a process has open (for leak checks)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.contextmanager
def running_server(
    *args: str, env: dict[str, str] | None = None, log: Path | None = None, health_tls_ca: Path | None = None
) -> Iterator[ServerAddress]:
    """Start ``e2a-grpc serve`` as a subprocess on a free loopback port; yield "127.0.0.1:PORT".

    Waits until the health service answers SERVING, and always stops the process (SIGTERM, then
    SIGKILL). Its output goes to ``log`` (a file, so a chatty server never blocks on a full pipe).
    """
    port = free_port()
    command = [sys.executable, "-m", "e2a_grpc", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    with contextlib.ExitStack() as stack:
        if log is None:
            output = stack.enter_context(tempfile.TemporaryFile("w+"))
        else:
            output = stack.enter_context(log.open("w+"))
        process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=output, stderr=subprocess.STDOUT)
        address = ServerAddress(f"127.0.0.1:{port}", process.pid)
        try:
            _wait_serving(address, process, output, health_tls_ca)
            yield address
        finally:
            stop_process(process)


def stop_process(process: subprocess.Popen[Any], timeout: float = 15) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_serving(
    address: str, process: subprocess.Popen[Any], output: IO[str], tls_ca: Path | None, timeout: float = 20.0
) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout
    if tls_ca is None:
        channel = grpc.insecure_channel(address)
    else:
        channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(tls_ca.read_bytes()))
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                output.seek(0)
                raise RuntimeError(f"server exited with {process.returncode}:\n{output.read()}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise TimeoutError(f"server on {address} did not become healthy within {timeout} s")


@pytest.fixture(scope="session")
def server_address() -> Iterator[ServerAddress]:
    """A real ``e2a-grpc serve`` (default configuration) on a free loopback port, for the session."""
    with running_server() as address:
        yield address
