"""A throwaway PostgreSQL cluster for tests: ``initdb`` in a temporary directory, ``postgres`` on a free
loopback port, trust authentication for one user; always stopped and removed.

It needs the server binaries (Debian's ``postgresql`` package; ``.ci/run`` installs it). PostgreSQL
refuses to run as root, so as root the cluster belongs to the unprivileged ``postgres`` user that
package creates, and its processes run as that user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import free_port, stop_process, wait_until

STARTUP_TIMEOUT_SECONDS = 30.0
_USER = "e2a"
_OS_USER_WHEN_ROOT = "postgres"


class PostgresMissing(RuntimeError):
    """The PostgreSQL server binaries are not installed."""


def server_binary(name: str) -> str:
    """``initdb`` or ``postgres``: on PATH, else in Debian's versioned directory."""
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        raise PostgresMissing(f"{name} not found: install PostgreSQL (Debian: apt-get install postgresql)")
    return found


class Cluster:
    """A running throwaway cluster; ``stop`` and ``start`` let a test take the database away and back
    (same port, same data)."""

    def __init__(self, directory: Path, port: int, owner: pwd.struct_passwd | None) -> None:
        self.port = port
        self._directory = directory
        self._owner = owner
        self._server: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the cluster's ``postgres`` database, for the asyncpg driver."""
        return f"postgresql+asyncpg://{_USER}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start the server and wait until it accepts sessions."""
        postgres, pg_isready = server_binary("postgres"), server_binary("pg_isready")
        uid, gid = (self._owner.pw_uid, self._owner.pw_gid) if self._owner is not None else (None, None)
        # fsync off: a test cluster is thrown away; unix sockets in the cluster's own directory.
        options = ("-h", "127.0.0.1", "-p", str(self.port), "-k", str(self._directory), "-F")
        with (self._directory / "server.log").open("ab") as log:
            self._server = server = subprocess.Popen(
                [postgres, "-D", str(self._directory / "data"), *options],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._directory,
                user=uid,
                group=gid,
            )
        started = wait_until(
            lambda: server.poll() is not None or _ready(pg_isready, self.port), STARTUP_TIMEOUT_SECONDS, 0.1
        )
        if not started or server.poll() is not None:
            raise RuntimeError(f"postgres did not start: {(self._directory / 'server.log').read_text()}")

    def stop(self, *, fast: bool = True) -> None:
        """Stop the server: "fast" shutdown (SIGINT: sessions are ended, as ``pg_ctl stop -m fast``), or
        "smart" (SIGTERM: it waits for them); SIGKILL after the timeout either way."""
        server, self._server = self._server, None
        if server is None:
            return
        if fast and server.poll() is None:
            server.send_signal(signal.SIGINT)
        stop_process(server)

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is ended; the server is back on the same port."""
        self.stop()
        self.start()


def _ready(pg_isready: str, port: int) -> bool:
    """The server accepts sessions (a listening socket comes earlier, while it still starts up)."""
    check = [pg_isready, "-q", "-h", "127.0.0.1", "-p", str(port), "-U", _USER, "-d", "postgres"]
    return subprocess.run(check, check=False).returncode == 0


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    initdb = server_binary("initdb")
    as_root = os.geteuid() == 0
    owner = pwd.getpwnam(_OS_USER_WHEN_ROOT) if as_root else None
    directory = Path(tempfile.mkdtemp(prefix="e2a-postgres-"))
    try:
        if owner is not None:
            os.chown(directory, owner.pw_uid, owner.pw_gid)
        uid, gid = (owner.pw_uid, owner.pw_gid) if owner is not None else (None, None)
        subprocess.run(
            [
                initdb,
                "-D",
                str(directory / "data"),
                "-U",
                _USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            cwd=directory,
            user=uid,
            group=gid,
        )
        cluster = Cluster(directory, free_port(), owner)
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop(fast=False)  # SIGTERM: PostgreSQL's "smart" shutdown, then SIGKILL after the timeout
    finally:
        shutil.rmtree(directory, ignore_errors=True)
