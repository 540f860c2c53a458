"""A bench server process: started on a free loopback port, waited for, measured, always stopped.

Shared by the throughput sections, which run their server in its own process so that client and
server do not compete for one interpreter; ``add_bench_rpc`` is for those server processes.
"""

from __future__ import annotations

import asyncio
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
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

STARTUP_TIMEOUT_SECONDS = 20.0
_REPO_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def server_process(module: str) -> Iterator[tuple[str, subprocess.Popen[bytes], IO[bytes]]]:
    """Run ``python -m MODULE --port N`` on a free loopback port; always stop it, also on errors.

    Its output goes to a temporary file (a full pipe would block it), shown if it fails to start.
    """
    port = free_port()
    with tempfile.TemporaryFile() as log:
        command = [sys.executable, "-m", module, "--port", str(port)]
        process = subprocess.Popen(command, cwd=_REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield f"127.0.0.1:{port}", process, log
        finally:
            stop(process)


async def wait_serving(channel: grpc.aio.Channel, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    """Return once the health service answers SERVING; raise with the server's output if it died."""
    stub = health_pb2_grpc.HealthStub(channel)
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"bench server exited with {process.returncode}:\n{log.read().decode(errors='replace')}")
        with contextlib.suppress(grpc.aio.AioRpcError):
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"bench server did not become healthy within {STARTUP_TIMEOUT_SECONDS} s")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process, all threads (Linux ``/proc``; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            # Fields after the parenthesised command name, which may itself contain spaces: utime, stime
            # are fields 14 and 15 of the whole line.
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def add_bench_rpc(server: grpc.aio.Server, service: str, method: str, handler: grpc.RpcMethodHandler) -> None:
    """Register a bench-only RPC both ways the generated ``add_*Servicer_to_server`` functions
    register the service's own (generic handler plus registered method), so both are dispatched alike.
    """
    handlers = {method: handler}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    server.add_registered_method_handlers(service, handlers)
