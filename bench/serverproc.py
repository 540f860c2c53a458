"""A bench server process: started on a free loopback port, waited for, measured, always stopped.

Shared by the throughput sections, which run their server in its own process so that client and
server do not compete for one interpreter; ``add_bench_rpc`` is for those server processes.
Starting, waiting and stopping are tests/support/processes.py's, shared with the test suite.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import IO, Any

import grpc

from tests.support.processes import free_port, logged_process, wait_serving_async

STARTUP_TIMEOUT_SECONDS = 20.0


@contextlib.contextmanager
def server_process(module: str) -> Iterator[tuple[str, subprocess.Popen[bytes], IO[bytes]]]:
    """Run ``python -m MODULE --port N`` on a free loopback port; always stop it, also on errors.

    Its output goes to a temporary file (a full pipe would block it), shown if it fails to start.
    """
    port = free_port()
    with logged_process([sys.executable, "-m", module, "--port", str(port)]) as (process, log):
        yield f"127.0.0.1:{port}", process, log


async def wait_serving(channel: grpc.aio.Channel, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    """Return once the health service answers SERVING; raise with the server's output if it died."""
    await wait_serving_async(channel, process, log, STARTUP_TIMEOUT_SECONDS)


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


def add_bench_rpc(server: grpc.aio.Server, service: str, method: str, handler: grpc.RpcMethodHandler[Any, Any]) -> None:
    """Register a bench-only RPC both ways the generated ``add_*Servicer_to_server`` functions
    register the service's own (generic handler plus registered method), so both are dispatched alike.
    """
    handlers = {method: handler}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    server.add_registered_method_handlers(service, handlers)
