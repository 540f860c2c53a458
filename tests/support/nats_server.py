"""A real nats-server with JetStream (file storage in a directory of the test's), on a free loopback
port, that a test can stop and start again on the same port and storage (a broker restart).

nats-server is Debian's ``nats-server`` package (.ci/run installs it) or, where that is missing, the
pinned build that ``make test`` installs into .bin/ (``make nats-server``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import nats

from tests.support.processes import REPO_ROOT, free_port, process_output, stop_process, wait_until

#: Debian's package (in /usr/sbin, which is not on every PATH), else the build `make nats-server` pins.
NATS_SERVER = shutil.which("nats-server") or shutil.which(
    "nats-server",
    path=os.pathsep.join(["/usr/sbin", "/usr/local/sbin", *map(str, REPO_ROOT.glob(".bin/nats-server-*"))]),
)
STARTUP_TIMEOUT_SECONDS = 20.0
_READY_LINE = b"Server is ready"


class NatsServer:
    """``nats-server -js`` on 127.0.0.1; ``start`` returns once it accepts clients."""

    def __init__(self, store_dir: Path) -> None:
        if NATS_SERVER is None:
            raise RuntimeError("nats-server is not installed: apt-get install nats-server, or make nats-server")
        self.store_dir = store_dir
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None

    def start(self) -> None:
        assert self._process is None, "already running"
        self._output = tempfile.TemporaryFile("w+b")  # noqa: SIM115  # lives until stop(), across restarts
        command = [str(NATS_SERVER), "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.store_dir)]
        self._process = subprocess.Popen(command, stdout=self._output, stderr=subprocess.STDOUT)
        output, process = self._output, self._process

        def ready() -> bool:  # another process's log: nothing to await but the line itself
            return process.poll() is not None or _READY_LINE in process_output(output).encode()

        wait_until(ready, STARTUP_TIMEOUT_SECONDS)
        if process.poll() is not None or _READY_LINE not in process_output(output).encode():
            log = process_output(output)
            self.stop()
            raise RuntimeError(f"nats-server did not start:\n{log}")

    def stop(self) -> None:
        """SIGTERM (JetStream writes its state out), then SIGKILL if it hangs."""
        if self._process is not None:
            stop_process(self._process)
            self._process = None
        if self._output is not None:
            self._output.close()
            self._output = None

    def restart(self) -> None:
        self.stop()
        self.start()


async def stored_messages(url: str, stream: str, subject_filter: str) -> int:
    """How many messages JetStream's ``stream`` holds on the subjects of ``subject_filter``."""
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(stream, subjects_filter=subject_filter)
        return sum((info.state.subjects or {}).values())
    finally:
        await nc.close()


@contextlib.contextmanager
def running_nats_server(store_dir: Path) -> Iterator[NatsServer]:
    server = NatsServer(store_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
