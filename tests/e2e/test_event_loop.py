"""The server names the event loop it runs on in its startup line; ``make serve`` runs on uvloop, and
so does ``serve`` by default (``--event-loop auto``), as the dev extra installs uvloop."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from tests.support.processes import (
    REPO_ROOT,
    free_port,
    logged_process,
    process_output,
    running_server_process,
    wait_serving,
)

_LISTENING = re.compile(r"e2a-grpc listening on \S+ \(.*event loop=(\w+)\)")


def _event_loops(log: str) -> list[str]:
    return _LISTENING.findall(log)


def test_make_serve_runs_on_uvloop() -> None:
    recipe = subprocess.run(
        ["make", "--no-print-directory", "-n", "serve"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
    )
    assert recipe.returncode == 0, recipe.stderr
    # ``make -n`` also prints the venv's install steps when the stamp is out of date: take the serve command.
    (command,) = [line for line in recipe.stdout.splitlines() if re.search(r"\be2a-grpc serve\b", line)]
    argv = shlex.split(command)
    port = free_port()
    # Its own port, not the recipe's 50051, and one process: the event loop does not depend on the count.
    env = {"E2A_GRPC_HOST": "127.0.0.1", "E2A_GRPC_PORT": str(port), "E2A_GRPC_WORKERS": "1"}
    with logged_process(argv, env=env) as (process, output):
        wait_serving(f"127.0.0.1:{port}", process, output)
        log = process_output(output)
    assert _event_loops(log) == ["uvloop"], log


@pytest.mark.parametrize(
    ("args", "loop"),
    [((), "uvloop"), (("--event-loop", "uvloop"), "uvloop"), (("--event-loop", "asyncio"), "asyncio")],
    ids=["auto", "uvloop", "asyncio"],
)
def test_the_startup_line_names_the_event_loop_the_server_runs_on(args: tuple[str, ...], loop: str) -> None:
    with running_server_process(*args) as (_, _, output):
        log = process_output(output)
    assert _event_loops(log) == [loop], log
