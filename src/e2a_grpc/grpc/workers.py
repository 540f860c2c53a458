"""Serving on every core: one server per process, N processes on one port through SO_REUSEPORT.

A ``grpc.aio`` server runs its handlers on one event loop, so one process uses about one core
(the GIL). With ``workers > 1`` the parent process checks that the port is free, holds it with a
socket of its own (SO_REUSEPORT, not listening: it takes no connections, but no program without
SO_REUSEPORT can take the port, and port 0 gets its number), and starts the workers; each runs an
``E2AServer`` bound to that port with SO_REUSEPORT, and the kernel spreads new connections over
them. The workers are started with ``spawn`` (a fresh interpreter each), as gRPC cannot be used in
a child forked from a process that has used it. SIGTERM or SIGINT to the parent reaches every
worker as SIGTERM, and each shuts down gracefully as a single server does (health NOT_SERVING,
Chat streams get their final frame, in-flight calls get the grace period). A worker that dies is
started again after a backoff, while the others go on serving the port; after more than
``worker_max_restarts`` deaths within ``worker_restart_window_seconds``, or a worker's failure to
start at all, the parent stops the others and exits with a failure. With ``pin_workers``, worker i
runs on the i-th CPU the parent may run on (``cpus_of_workers``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

from e2a_grpc.address import unbracketed_host
from e2a_grpc.grpc.server import ListenError, check_can_listen, check_publishing, serve
from e2a_grpc.settings import ServerSettings

log = logging.getLogger("e2a_grpc.server")

#: Exit code of a worker that could not start or failed (the command line's "the server failed").
WORKER_FAILED = 1
#: prctl(2) option: the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def run_on_event_loop(main: Coroutine[Any, Any, None], config: ServerSettings) -> None:
    """Run ``main`` on the event loop the settings choose: uvloop, or asyncio's own."""
    if config.uses_uvloop:
        import uvloop  # the optional 'uvloop' extra; the settings checked that it is installed

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main)
    else:
        asyncio.run(main)


def run_server(config: ServerSettings, *, setup_worker: Callable[[], None]) -> int:
    """Serve until SIGTERM/SIGINT in this process, or in ``config.worker_count`` worker processes.

    ``setup_worker`` runs first in each worker process (a fresh interpreter), e.g. to configure
    logging as the command line did; it must be picklable (a module-level function or a partial).
    Returns the exit code.
    """
    count = config.worker_count
    if count == 1:
        run_on_event_loop(serve(config), config)
        return 0
    with reserved_port(config.host, config.port) as port:
        if config.publish_nats:
            asyncio.run(check_publishing(config))
        worker_config = config.model_copy(update={"port": port})
        return _supervise(worker_config, count, setup_worker)


@contextlib.contextmanager
def reserved_port(host: str, port: int) -> Iterator[int]:
    """Hold ``host:port`` (port 0: a free port) for SO_REUSEPORT servers; yields the port number.

    A taken port is refused first, with the one-line ``ListenError`` a single server gives.
    """
    if port:
        check_can_listen(host, port)
    bind_host = unbracketed_host(host)
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            bind_host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    with socket.socket(family, kind, protocol) as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            holder.bind(address)
        except OSError as exc:
            raise ListenError(f"cannot listen on {host}:{port}: {os.strerror(exc.errno or 0).lower()}") from None
        yield int(holder.getsockname()[1])


def _stop_with_parent(parent_pid: int) -> None:
    """Have the kernel send this worker SIGTERM when the parent dies, also of SIGKILL, which the
    parent cannot forward (Linux; elsewhere a parent killed so leaves its workers serving)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # the parent died before that took effect
        sys.exit(WORKER_FAILED)


def cpus_of_workers(count: int, pin: bool) -> list[int | None]:
    """The CPU each of ``count`` workers runs on: with ``pin``, the CPUs this process may run on, in
    turn; else None (any)."""
    if not pin:
        return [None] * count
    cpus = sorted(os.sched_getaffinity(0))
    return [cpus[index % len(cpus)] for index in range(count)]


def _worker(
    config: ServerSettings,
    setup_worker: Callable[[], None],
    parent_pid: int,
    started: Connection,
    cpu: int | None,
) -> None:
    """A worker process: one server on the shared port until SIGTERM; says on ``started`` once it
    listens. ``cpu``: the one CPU it runs on, or None."""
    if cpu is not None:
        # First, before any thread starts: gRPC's threads inherit the main thread's CPU.
        os.sched_setaffinity(0, {cpu})
    # Ctrl-C in a terminal reaches the whole process group: the parent turns it into SIGTERM for
    # each worker, so a worker still starting up does not die of it with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _stop_with_parent(parent_pid)
    setup_worker()

    def tell_parent() -> None:
        started.send(os.getpid())
        started.close()

    try:
        run_on_event_loop(serve(config, reuse_port=True, on_started=tell_parent), config)
    except ListenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(WORKER_FAILED)


#: The wait before a dead worker is started again, doubled for each other death within the restart
#: window (``worker_restart_window_seconds``), up to ``RESTART_BACKOFF_MAX_SECONDS``: a worker that
#: dies of its load is not restarted into it at once, again and again.
RESTART_BACKOFF_SECONDS = 0.5
RESTART_BACKOFF_MAX_SECONDS = 10.0


def how_it_ended(exitcode: int | None) -> str:
    """A worker's end as a log line says it: its exit code, or the signal that killed it."""
    if exitcode is not None and exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-exitcode).name}"
        return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def restart_delay(recent_deaths: int) -> float:
    """The wait before a restart, after ``recent_deaths`` deaths within the restart window (this one included)."""
    return float(min(RESTART_BACKOFF_MAX_SECONDS, RESTART_BACKOFF_SECONDS * 2 ** max(0, recent_deaths - 1)))


class _Supervisor:
    """The parent of the workers: starts them, restarts one that dies (with backoff), and stops them all
    on SIGTERM/SIGINT, or once workers die more often than ``worker_max_restarts`` allows."""

    def __init__(self, config: ServerSettings, count: int, setup_worker: Callable[[], None]) -> None:
        self.config = config
        self.count = count
        self.setup_worker = setup_worker
        self.context = multiprocessing.get_context("spawn")
        self.cpus = cpus_of_workers(count, config.pin_workers)
        #: Worker number (1..count) -> its current process.
        self.workers: dict[int, multiprocessing.process.BaseProcess] = {}
        #: The parent's end of each starting worker's pipe on which it says it listens.
        self.starting: dict[Connection, int] = {}
        #: The workers that have listened once (a worker that fails its first start is no transient fault).
        self.served: set[int] = set()
        #: Worker number -> when (``time.monotonic()``) it is due to be started again.
        self.restarts: dict[int, float] = {}
        self.deaths: collections.deque[float] = collections.deque()
        self.stopping = False
        self.failed = False
        # The signal handler writes here, so that a wait for a restart's time ends at once.
        self._wakeup_read, self._wakeup_write = os.pipe()

    def start(self, number: int) -> None:
        receiver, sender = self.context.Pipe(duplex=False)
        worker = self.context.Process(
            target=_worker,
            args=(self.config, self.setup_worker, os.getpid(), sender, self.cpus[number - 1]),
            name=f"e2a-grpc worker {number}",
        )
        worker.start()
        # The worker has its own copy: a worker that dies before it listens makes its pipe end.
        sender.close()
        self.workers[number] = worker
        self.starting[receiver] = number

    def stop_workers(self, signum: int | None = None, _frame: FrameType | None = None) -> None:
        self.stopping = True
        self.restarts.clear()
        with contextlib.suppress(OSError):
            os.write(self._wakeup_write, b"\0")
        for worker in self.workers.values():
            if worker.pid is not None and worker.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.pid, signal.SIGTERM)

    def run(self) -> int:
        previous = {signum: signal.signal(signum, self.stop_workers) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            for number in range(1, self.count + 1):
                if not self.stopping:
                    self.start(number)
            while self.workers or self.restarts:
                self._step()
            return WORKER_FAILED if self.failed else 0
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            for receiver in self.starting:
                receiver.close()
            os.close(self._wakeup_read)
            os.close(self._wakeup_write)

    def _step(self) -> None:
        timeout = max(0.0, min(self.restarts.values()) - time.monotonic()) if self.restarts else None
        sentinels = {worker.sentinel: number for number, worker in self.workers.items()}
        ready = multiprocessing.connection.wait([*self.starting, *sentinels, self._wakeup_read], timeout)
        if self._wakeup_read in ready:
            os.read(self._wakeup_read, 64)
        for receiver in [receiver for receiver in self.starting if receiver in ready]:
            self._listening(receiver)
        for sentinel in [sentinel for sentinel in sentinels if sentinel in ready]:
            self._ended(sentinels[sentinel])
        now = time.monotonic()
        for number in [number for number, due in self.restarts.items() if due <= now]:
            del self.restarts[number]
            self.start(number)

    def _listening(self, receiver: Connection) -> None:
        number = self.starting.pop(receiver)
        try:
            receiver.recv()
        except EOFError:  # the worker ended before it listened (its sentinel says so)
            return
        finally:
            receiver.close()
        restarted = number in self.served
        self.served.add(number)
        if self.stopping:
            return
        if restarted:
            log.info("e2a-grpc: worker %d serving again (pid %d)", number, self.workers[number].pid)
        elif len(self.served) == self.count:
            log.info(
                "e2a-grpc: all %d workers serving on %s:%d (SO_REUSEPORT%s)",
                self.count,
                self.config.host,
                self.config.port,
                ", workers pinned to CPUs" if self.config.pin_workers else "",
            )

    def _ended(self, number: int) -> None:
        worker = self.workers.pop(number)
        worker.join()
        ended = how_it_ended(worker.exitcode)
        if self.stopping:
            # A worker stopped before its server had set up its own SIGTERM handler had nothing to drain.
            if worker.exitcode not in (0, -signal.SIGTERM):
                log.error("%s ended (%s) while the service stopped", worker.name, ended)
                self.failed = True
            return
        if number not in self.served:
            # It never listened: a fault of the configuration or the host, which a restart repeats.
            log.error("%s ended before it listened (%s): stopping the others", worker.name, ended)
            self.failed = True
            self.stop_workers()
            return
        now = time.monotonic()
        self.deaths.append(now)
        while self.deaths and self.deaths[0] <= now - self.config.worker_restart_window_seconds:
            self.deaths.popleft()
        if len(self.deaths) > self.config.worker_max_restarts:
            log.error(
                "e2a-grpc: giving up: %d worker deaths within %g s (at most %d restarts; the last: %s, %s): "
                "stopping the others",
                len(self.deaths),
                self.config.worker_restart_window_seconds,
                self.config.worker_max_restarts,
                worker.name,
                ended,
            )
            self.failed = True
            self.stop_workers()
            return
        delay = restart_delay(len(self.deaths))
        # The other workers go on serving the port; only this one's connections and calls are lost.
        log.error("%s died (%s): restarting it in %.1f s", worker.name, ended, delay)
        self.restarts[number] = now + delay


def _supervise(config: ServerSettings, count: int, setup_worker: Callable[[], None]) -> int:
    return _Supervisor(config, count, setup_worker).run()
