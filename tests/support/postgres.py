"""A throwaway PostgreSQL cluster for tests: ``initdb`` in a temporary directory, ``postgres`` on a free
loopback port, trust authentication for one user; always stopped and removed. A test may stop it and
start it again (``Cluster.stop``, ``Cluster.start``: a database outage).

It needs the server binaries (Debian's ``postgresql`` package; ``.ci/run`` installs it). PostgreSQL
refuses to run as root, so as root the cluster belongs to the unprivileged ``postgres`` user that
package creates, and its processes run as that user, through util-linux's ``setpriv``: asking
``subprocess`` to switch users makes it fork rather than vfork, and a fork while gRPC's threads run
(a test's servers) runs gRPC's fork handlers in the child, which crashed it before it could exec.
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

from tests.support.processes import STOP_TIMEOUT_SECONDS, free_port, wait_until

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
    """A running cluster, which a test may stop (an outage) and start again, on the same port and data."""

    def __init__(self, directory: Path, owner: pwd.struct_passwd | None) -> None:
        self._directory = directory
        self._owner = owner
        self.port = free_port()
        self._server: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the cluster's ``postgres`` database, for the asyncpg driver."""
        return f"postgresql+asyncpg://{_USER}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start the server; return once it accepts sessions."""
        assert self._server is None, "already running"
        directory, port = self._directory, self.port
        pg_isready, postgres = server_binary("pg_isready"), server_binary("postgres")
        # fsync off: a test cluster is thrown away; unix sockets in the cluster's own directory.
        command = [
            postgres,
            "-D",
            str(directory / "data"),
            "-F",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-k",
            str(directory),
        ]
        with (directory / "server.log").open("ab") as log:
            server = subprocess.Popen(
                as_owner(command, self._owner), stdout=log, stderr=subprocess.STDOUT, cwd=directory
            )
        self._server = server
        started = wait_until(
            lambda: server.poll() is not None or _ready(pg_isready, port), STARTUP_TIMEOUT_SECONDS, 0.1
        )
        if not started or server.poll() is not None:
            self.stop()
            raise RuntimeError(f"postgres did not start: {(directory / 'server.log').read_text()}")

    def stop(self) -> None:
        """Stop the server as ``pg_ctl stop -m fast`` does (SIGINT: every session is cut at once), then
        SIGKILL if it has not exited within the timeout."""
        server, self._server = self._server, None
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is ended; the server is back on the same port."""
        self.stop()
        self.start()


def _ready(pg_isready: str, port: int) -> bool:
    """The server accepts sessions (a listening socket comes earlier, while it still starts up)."""
    check = [pg_isready, "-q", "-h", "127.0.0.1", "-p", str(port), "-U", _USER, "-d", "postgres"]
    return subprocess.run(check, check=False).returncode == 0


def as_owner(command: list[str], owner: pwd.struct_passwd | None) -> list[str]:
    """``command`` run as ``owner`` (None: as this process's user)."""
    if owner is None:
        return command
    return ["setpriv", "--reuid", str(owner.pw_uid), "--regid", str(owner.pw_gid), "--clear-groups", *command]


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    initdb = server_binary("initdb")
    owner = pwd.getpwnam(_OS_USER_WHEN_ROOT) if os.geteuid() == 0 else None
    directory = Path(tempfile.mkdtemp(prefix="e2a-postgres-"))
    try:
        if owner is not None:
            os.chown(directory, owner.pw_uid, owner.pw_gid)
        data = directory / "data"
        subprocess.run(
            as_owner(
                [initdb, "-D", str(data), "-U", _USER, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"], owner
            ),
            check=True,
            capture_output=True,
            cwd=directory,
        )
        cluster = Cluster(directory, owner)
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
