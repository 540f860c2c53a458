"""Server processes for tests and benchmarks: a free loopback port, start with the output in a file,
wait until the health service says SERVING, always stop (SIGTERM, then SIGKILL).

Used by tests/conftest.py (``running_server``: ``e2a-grpc serve`` as a subprocess) and by
bench/serverproc.py (the bench servers). Nothing here imports pytest, so bench can use it too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import grpc
from grpc_health.v1 import health_pb2

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_SECONDS = 20.0
STOP_TIMEOUT_SECONDS = 15.0
_HEALTH_WATCH = "/grpc.health.v1.Health/Watch"
#: How long one health Watch waits before the helper checks again that the process is still alive.
_WATCH_SLICE_SECONDS = 0.5
#: Reconnect quickly while the server is still starting (gRPC's default first backoff is 1 s).
_FAST_RECONNECT = (
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 200),
)


def free_port() -> int:
    """A TCP port on the loopback interface that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def open_fds(pid: int) -> int:
    """How many file descriptors a process has open (Linux ``/proc``; for leak checks)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def connections_to(pid: int, port: int) -> int:
    """How many of a process's sockets are TCP connections to ``port`` on IPv4 loopback (Linux ``/proc``).

    Lets a leak check tell a connection pool's idle keep-alive connections from other open files.
    """
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):  # closed since listdir
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    remote = f"0100007F:{port:04X}"
    lines = Path(f"/proc/{pid}/net/tcp").read_text(encoding="ascii").splitlines()[1:]
    # Columns: sl, local_address, rem_address, st, queues, tr, retrnsmt, uid, timeout, inode, ...
    return sum(1 for line in lines if (fields := line.split())[2] == remote and fields[9] in inodes)


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; return its last value.

    For state only another process can change (its log, its open files), where no event can be awaited.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(interval)
    return True


def stop_process(process: subprocess.Popen[Any], timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within ``timeout``; reaps it either way."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def process_output(output: IO[bytes]) -> str:
    """Everything a process started by ``logged_process`` has written so far."""
    output.flush()
    output.seek(0)
    return output.read().decode(errors="replace")


@contextlib.contextmanager
def logged_process(
    command: Sequence[str],
    *,
    cwd: Path | None = REPO_ROOT,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], IO[bytes]]]:
    """Start ``command`` with stdout and stderr in ``log`` (else a temporary file), never a pipe that
    could fill up and block it; always stop it, also when the body raises.

    ``env`` is added to this process's environment.
    """
    with contextlib.ExitStack() as stack:
        output: IO[bytes] = (
            stack.enter_context(tempfile.TemporaryFile("w+b")) if log is None else stack.enter_context(log.open("w+b"))
        )
        process = subprocess.Popen(
            list(command), cwd=cwd, env={**os.environ, **(env or {})}, stdout=output, stderr=subprocess.STDOUT
        )
        try:
            yield process, output
        finally:
            stop_process(process)


def _raise_if_exited(process: subprocess.Popen[Any], output: IO[bytes]) -> None:
    if process.poll() is not None:
        raise RuntimeError(f"server exited with {process.returncode}:\n{process_output(output)}")


def _is_serving(reply: health_pb2.HealthCheckResponse) -> bool:
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def wait_serving(
    address: str,
    process: subprocess.Popen[Any],
    output: IO[bytes],
    tls_ca: Path | None = None,
    timeout: float = STARTUP_TIMEOUT_SECONDS,
) -> None:
    """Return once the server's health service reports SERVING; raise with its output if it exits.

    Watches the health status (a stream: no polling interval) in short slices, between which it
    checks that the process is still alive.
    """
    deadline = time.monotonic() + timeout
    if tls_ca is None:
        channel = grpc.insecure_channel(address, options=_FAST_RECONNECT)
    else:
        credentials = grpc.ssl_channel_credentials(tls_ca.read_bytes())
        channel = grpc.secure_channel(address, credentials, options=_FAST_RECONNECT)
    with channel:
        watch = channel.unary_stream(
            _HEALTH_WATCH,
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        while time.monotonic() < deadline:
            _raise_if_exited(process, output)
            call = watch(health_pb2.HealthCheckRequest(), timeout=_WATCH_SLICE_SECONDS, wait_for_ready=True)
            try:
                if any(_is_serving(reply) for reply in call):
                    return
            except grpc.RpcError:
                pass  # not listening yet, or the slice ended: check the process, then watch again
            finally:
                call.cancel()
    _raise_if_exited(process, output)
    raise TimeoutError(f"server on {address} did not become healthy within {timeout} s")


async def wait_serving_async(
    channel: grpc.aio.Channel,
    process: subprocess.Popen[Any],
    output: IO[bytes],
    timeout: float = STARTUP_TIMEOUT_SECONDS,
) -> None:
    """``wait_serving`` on the caller's ``grpc.aio`` channel (which it also connects)."""
    deadline = time.monotonic() + timeout
    watch = channel.unary_stream(
        _HEALTH_WATCH,
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString,
    )
    while time.monotonic() < deadline:
        _raise_if_exited(process, output)
        call = watch(health_pb2.HealthCheckRequest(), timeout=_WATCH_SLICE_SECONDS, wait_for_ready=True)
        try:
            async for reply in call:
                if _is_serving(reply):
                    return
        except grpc.aio.AioRpcError:
            pass  # not listening yet, or the slice ended: check the process, then watch again
        finally:
            call.cancel()
    _raise_if_exited(process, output)
    raise TimeoutError(f"server did not become healthy within {timeout} s")


class ServerAddress(str):
    """ "127.0.0.1:PORT" of a test server, which also knows the server's process id."""

    pid: int

    def __new__(cls, address: str, pid: int) -> ServerAddress:
        value = super().__new__(cls, address)
        value.pid = pid
        return value


@contextlib.contextmanager
def running_server(
    *args: str, env: Mapping[str, str] | None = None, log: Path | None = None, health_tls_ca: Path | None = None
) -> Iterator[ServerAddress]:
    """``e2a-grpc serve ARGS`` as a subprocess on a free loopback port; yields "127.0.0.1:PORT".

    Returns once the health service answers SERVING, and always stops the process. Its output goes
    to ``log`` (else a temporary file).
    """
    with running_server_process(*args, env=env, log=log, health_tls_ca=health_tls_ca) as (address, _, _):
        yield address


@contextlib.contextmanager
def running_server_process(
    *args: str, env: Mapping[str, str] | None = None, log: Path | None = None, health_tls_ca: Path | None = None
) -> Iterator[tuple[ServerAddress, subprocess.Popen[bytes], IO[bytes]]]:
    """``running_server`` that also yields the process (to signal it) and its output file."""
    port = free_port()
    # One process unless ARGS say otherwise (a later --workers wins): the tests that look at the
    # server's process (its file descriptors, its signals) look at the one that serves.
    command = [
        sys.executable,
        "-m",
        "e2a_grpc",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        *args,
    ]
    with logged_process(command, env=env, log=log) as (process, output):
        address = ServerAddress(f"127.0.0.1:{port}", process.pid)
        wait_serving(address, process, output, health_tls_ca)
        yield address, process, output
