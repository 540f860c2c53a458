"""Serving on every core: one server per process, N processes on one port through SO_REUSEPORT.

A ``grpc.aio`` server runs its handlers on one event loop, so one process uses about one core
(the GIL). With ``workers > 1`` the parent process checks that the port is free, holds it with a
socket of its own (SO_REUSEPORT, not listening: it takes no connections, but no program without
SO_REUSEPORT can take the port, and port 0 gets its number), and starts the workers; each runs an
``E2AServer`` bound to that port with SO_REUSEPORT, and the kernel spreads new connections over
them. The workers are started with ``spawn`` (a fresh interpreter each), as gRPC cannot be used in
a child forked from a process that has used it. SIGTERM or SIGINT to the parent reaches every
worker as SIGTERM, and each shuts down gracefully as a single server does (health NOT_SERVING,
Chat streams get their final frame, in-flight calls get the grace period). A worker that ends on
its own (it failed) stops the others, and the parent exits with a failure. With ``pin_workers``,
worker i runs on the i-th CPU the parent may run on (``cpus_of_workers``).
"""

from __future__ import annotations

import asyncio
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
from collections.abc import Callable, Coroutine, Iterator
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

from e2a_grpc.address import unbracketed_host
from e2a_grpc.grpc.server import ListenError, check_can_listen, serve
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


def _supervise(config: ServerSettings, count: int, setup_worker: Callable[[], None]) -> int:
    context = multiprocessing.get_context("spawn")
    workers = []
    #: The parent's end of each worker's pipe on which it says it listens; dropped once it has.
    starting: dict[Connection, multiprocessing.process.BaseProcess] = {}
    senders: dict[multiprocessing.process.BaseProcess, Connection] = {}
    for number, cpu in enumerate(cpus_of_workers(count, config.pin_workers), start=1):
        receiver, sender = context.Pipe(duplex=False)
        worker = context.Process(
            target=_worker, args=(config, setup_worker, os.getpid(), sender, cpu), name=f"e2a-grpc worker {number}"
        )
        workers.append(worker)
        starting[receiver] = worker
        senders[worker] = sender
    stopping = False

    def stop_workers(signum: int | None = None, _frame: FrameType | None = None) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.pid is not None and worker.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.pid, signal.SIGTERM)

    previous = {signum: signal.signal(signum, stop_workers) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        for worker in workers:
            if not stopping:
                worker.start()
            # The worker has its own copy: a worker that dies before it listens makes its pipe end.
            senders[worker].close()
        failed = False
        running = [worker for worker in workers if worker.pid is not None]
        while running:
            ready = multiprocessing.connection.wait([*starting, *(worker.sentinel for worker in running)])
            for receiver in [receiver for receiver in starting if receiver in ready]:
                with contextlib.suppress(EOFError):  # EOF: the worker ended before it listened (below)
                    receiver.recv()
                receiver.close()
                del starting[receiver]
                if not starting and not stopping:
                    log.info(
                        "e2a-grpc: all %d workers serving on %s:%d (SO_REUSEPORT%s)",
                        count,
                        config.host,
                        config.port,
                        ", workers pinned to CPUs" if config.pin_workers else "",
                    )
            for worker in [worker for worker in running if worker.sentinel in ready]:
                worker.join()
                running.remove(worker)
                # A worker stopped before its server had set up its own SIGTERM handler had nothing to drain.
                stopped = stopping and worker.exitcode in (0, -signal.SIGTERM)
                if not stopped:
                    # A worker that ends unasked, or fails, takes the service down with it: the others
                    # would carry on with part of the capacity, unnoticed.
                    log.error("%s ended (exit code %s): stopping the others", worker.name, worker.exitcode)
                    failed = True
                    stop_workers()
        return WORKER_FAILED if failed else 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
