"""A real nats-server with JetStream (file storage in a directory of the test's), on a free loopback
port, that a test can stop and start again on the same port and storage (a broker restart); and
``NatsCluster``, three of them routed into one JetStream cluster, for R3 streams and buckets.

nats-server is Debian's ``nats-server`` package (.ci/run installs it) or, where that is missing, the
pinned build that ``make test`` installs into .bin/ (``make nats-server``). A cluster always runs the
pinned build: Debian's 2.9.10 places a new consumer of an R3 stream on a node that is down (about
half of them, measured), so that while a node is lost, creating a reader's consumer, a KV watch (the
registry's reads) or an ordered consumer times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import nats
import nats.errors
import nats.js.errors

from tests.support.processes import REPO_ROOT, free_port, process_output, stop_process, wait_until

#: Debian's package (in /usr/sbin, which is not on every PATH), else the build `make nats-server` pins.
NATS_SERVER = shutil.which("nats-server") or shutil.which(
    "nats-server",
    path=os.pathsep.join(["/usr/sbin", "/usr/local/sbin", *map(str, REPO_ROOT.glob(".bin/nats-server-*"))]),
)


def _pinned_build() -> Path | None:
    """The newest nats-server ``make nats-server`` built into .bin/nats-server-<version>/."""
    builds = REPO_ROOT.glob(".bin/nats-server-v*/nats-server")
    return max(builds, key=lambda path: [int(part) for part in re.findall(r"\d+", path.parent.name)], default=None)


#: What a cluster's nodes run (see the module docstring).
PINNED_NATS_SERVER = _pinned_build()
STARTUP_TIMEOUT_SECONDS = 20.0
_READY_LINE = b"Server is ready"


class NatsServer:
    """``nats-server -js`` on 127.0.0.1; ``start`` returns once it accepts clients.

    ``cluster_options`` (``NatsCluster``'s) make it a node of a cluster; its ports stay the same across
    restarts, so that the other nodes' routes find it again.
    """

    def __init__(
        self, store_dir: Path, cluster_options: Sequence[str] = (), binary: str | Path | None = NATS_SERVER
    ) -> None:
        if binary is None:
            raise RuntimeError("nats-server is not installed: apt-get install nats-server, or make nats-server")
        self._binary = binary
        self.store_dir = store_dir
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self._cluster_options = list(cluster_options)
        self._process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None

    def start(self) -> None:
        assert self._process is None, "already running"
        self._output = tempfile.TemporaryFile("w+b")  # noqa: SIM115  # lives until stop(), across restarts
        command = [
            str(self._binary),
            *("-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.store_dir)),
            *self._cluster_options,
        ]
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

    def kill(self) -> None:
        """SIGKILL: the node is gone at once, without writing its state out (a crashed machine)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None
        if self._output is not None:
            self._output.close()
            self._output = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log(self) -> str:
        """What the running server has written so far (empty once stopped)."""
        return "" if self._output is None else process_output(self._output)


#: The cluster's nodes: three, the fewest for R3 streams that outlive the loss of one node.
CLUSTER_SIZE = 3
CLUSTER_NAME = "e2a-test"
#: Bounds the wait for the cluster's JetStream to elect its leaders (a few seconds on a loaded machine).
CLUSTER_READY_TIMEOUT_SECONDS = 30.0
#: How often the cluster is asked again while it elects its leaders (another process's state: no event).
_CLUSTER_POLL_SECONDS = 0.1


class NatsCluster:
    """Three ``NatsServer`` nodes on loopback, routed to each other into one JetStream cluster (each node
    named, with its own file storage); a node can be stopped, SIGKILLed and started again on its ports
    and storage."""

    def __init__(self, store_dir: Path) -> None:
        if PINNED_NATS_SERVER is None:
            raise RuntimeError("a NATS cluster runs the pinned nats-server build: make nats-server")
        route_ports = [free_port() for _ in range(CLUSTER_SIZE)]
        routes = ",".join(f"nats-route://127.0.0.1:{port}" for port in route_ports)
        self.nodes = [
            NatsServer(
                store_dir / f"n{index}",
                (
                    *("--name", f"n{index}", "--cluster_name", CLUSTER_NAME),
                    *("--cluster", f"nats://127.0.0.1:{route_port}", "--routes", routes),
                ),
                PINNED_NATS_SERVER,
            )
            for index, route_port in enumerate(route_ports)
        ]

    @property
    def urls(self) -> list[str]:
        """Every node's client URL."""
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """The nodes' URLs, comma-separated: what ``--publish-nats`` and the other NATS options take."""
        return ",".join(self.urls)

    def start(self) -> None:
        """Start every node and return once the cluster's JetStream answers (a metadata leader elected)."""
        for node in self.nodes:
            node.start()
        asyncio.run(self.wait_jetstream())

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def node_of(self, url: str) -> NatsServer:
        """The node whose client URL is ``url`` (say, the one a client is connected to)."""
        return next(node for node in self.nodes if node.url == url)

    async def wait_jetstream(self, timeout: float = CLUSTER_READY_TIMEOUT_SECONDS) -> None:
        """Return once JetStream answers through the running nodes; raise with their logs if it does not
        within ``timeout``."""
        urls = [node.url for node in self.nodes if node.running]
        nc = await nats.connect(urls, connect_timeout=2, max_reconnect_attempts=-1)
        try:
            js = nc.jetstream(timeout=2)
            async with asyncio.timeout(timeout):
                while True:
                    with contextlib.suppress(nats.errors.Error, nats.js.errors.Error, TimeoutError):
                        await js.account_info()
                        return
                    await asyncio.sleep(_CLUSTER_POLL_SECONDS)
        except TimeoutError:
            logs = "\n".join(f"--- {node.url}\n{node.log()}" for node in self.nodes)
            raise RuntimeError(f"the NATS cluster's JetStream did not answer within {timeout:g} s:\n{logs}") from None
        finally:
            await nc.close()


async def stored_messages(url: str, stream: str, subject_filter: str) -> int:
    """How many messages JetStream's ``stream`` holds on the subjects of ``subject_filter`` (``url``: a
    server's, or a cluster's comma-separated)."""
    nc = await nats.connect(url.split(","))
    try:
        info = await nc.jetstream().stream_info(stream, subjects_filter=subject_filter)
        return sum((info.state.subjects or {}).values())
    finally:
        await nc.close()


async def wait_stream_current(urls: list[str], stream: str, followers: int, timeout: float) -> None:
    """Return once ``stream`` has a leader and ``followers`` current followers (after a node came back, or
    was lost: the stream takes writes again); raise TimeoutError if not within ``timeout``."""
    nc = await nats.connect(urls)
    try:
        js = nc.jetstream(timeout=2)
        async with asyncio.timeout(timeout):
            while True:
                # JetStream may not answer at all while it elects leaders: ask again.
                with contextlib.suppress(nats.errors.Error, nats.js.errors.Error, TimeoutError):
                    cluster = (await js.stream_info(stream)).cluster
                    if cluster is not None and cluster.leader:
                        current = sum(1 for peer in cluster.replicas or [] if peer.current)
                        if current == followers:
                            return
                await asyncio.sleep(_CLUSTER_POLL_SECONDS)
    finally:
        await nc.close()


@contextlib.contextmanager
def running_nats_cluster(store_dir: Path) -> Iterator[NatsCluster]:
    cluster = NatsCluster(store_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@contextlib.contextmanager
def running_nats_server(store_dir: Path) -> Iterator[NatsServer]:
    server = NatsServer(store_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
