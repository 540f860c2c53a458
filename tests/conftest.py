"""Shared test fixtures and helpers: the repository's test data, hypothesis profiles, servers on loopback.

Two kinds of server:

* ``in_process_server``: the project's ``E2AServer`` (``grpc.aio``) on 127.0.0.1, port 0, in the
  test's event loop, optionally with a fake Chat backend (tests/support/fakes.py). The servicer
  tests use it.
* ``server_address``: a real ``e2a-grpc serve`` subprocess for the session (tests/support/processes.py),
  for tests that talk to a process from outside it (CLI, buf curl, interop clients).
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
from collections.abc import AsyncIterator, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.grpc.server import E2AServer
from e2a_grpc.settings import ServerSettings
from tests.support.processes import ServerAddress, free_port, open_fds, running_server, stop_process

__all__ = [
    "REPO_ROOT",
    "SPEC_EXAMPLES_DIR",
    "TESTDATA",
    "VECTORS_DIR",
    "InProcessServer",
    "ServerAddress",
    "fewer_examples",
    "free_port",
    "in_process_server",
    "open_fds",
    "running_server",
    "server_config",
    "stop_process",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Test data kept in the repository (testdata/README.md says where each part came from).
TESTDATA = REPO_ROOT / "testdata"
VECTORS_DIR = TESTDATA / "vectors"
SPEC_EXAMPLES_DIR = TESTDATA / "spec"

# Hypothesis: "standard" (200 examples per property) unless HYPOTHESIS_PROFILE names another: "quick"
# (20, what make test-fast runs by default, to stay under a minute) or, e.g.
#   HYPOTHESIS_PROFILE=thorough .venv/bin/pytest tests/unit
# for 1000 examples per property (what every run used before the profiles; run it before a release
# or after touching the codec). Property tests set no max_examples of their own, so the profile decides;
# one whose example costs far more than most (a server round trip, every format) runs a fixed fraction
# of the profile's (``fewer_examples``), so "thorough" reaches it too.
_PROPERTY_SETTINGS: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("quick", max_examples=20, **_PROPERTY_SETTINGS)  # make test-fast's default
settings.register_profile("standard", max_examples=200, **_PROPERTY_SETTINGS)
settings.register_profile("thorough", max_examples=1000, **_PROPERTY_SETTINGS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "standard"))


def fewer_examples(divisor: int) -> settings:
    """The loaded profile's settings with ``1/divisor`` of its examples, for a property whose example
    costs ``divisor`` times more than most."""
    return settings(max_examples=max(1, settings().max_examples // divisor))


#: The marks of tests that may start processes (pyproject.toml registers them).
PROCESS_MARKS = frozenset({"subprocess", "postgres", "nats", "e2e"})
#: The marks of tests ``make test-fast`` leaves out; it runs the others, marked ``in_process``.
NOT_FAST_MARKS = PROCESS_MARKS | {"slow"}
#: The marks of tests by the directory they are in.
_DIRECTORY_MARKS = {"e2e": "e2e", "broker": "nats"}
#: Fixtures that start a process: a test that uses one is a ``subprocess`` test.
_PROCESS_FIXTURES = frozenset({"server_address"})


@pytest.hookimpl(tryfirst=True)  # before pytest's -m selection reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by what it needs beyond this process (``make test-fast`` leaves those out)."""
    tests = REPO_ROOT / "tests"
    for item in items:
        directory = item.path.relative_to(tests).parts[0]
        if directory in _DIRECTORY_MARKS:
            item.add_marker(_DIRECTORY_MARKS[directory])
        if _PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker("subprocess")
        if not NOT_FAST_MARKS.intersection(mark.name for mark in item.iter_markers()):
            item.add_marker("in_process")


class _ProcessesStarted:
    """How many processes this test run has started (``subprocess.Popen``, which asyncio's
    subprocesses use too): a test without a process mark that starts one fails, so the marks that
    keep ``make test-fast`` in process stay true."""

    count = 0


_STARTED_BEFORE = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    popen_init = subprocess.Popen.__init__

    @functools.wraps(popen_init)
    def counted(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        _ProcessesStarted.count += 1
        popen_init(self, *args, **kwargs)

    setattr(subprocess.Popen, "__init__", counted)  # noqa: B010  # mypy refuses assigning to a method


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[_STARTED_BEFORE] = _ProcessesStarted.count  # before its fixtures, module-scoped ones too
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    started = _ProcessesStarted.count - item.stash.get(_STARTED_BEFORE, _ProcessesStarted.count)
    if (
        call.when == "call"
        and report.passed
        and started
        and not PROCESS_MARKS.intersection(mark.name for mark in item.iter_markers())
    ):
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started {started} process(es) but has none of the marks {sorted(PROCESS_MARKS)}: "
            "mark it (pytestmark, or tests/conftest.py for a directory), so that make test-fast leaves it out"
        )
    return report


def server_config(**overrides: Any) -> ServerSettings:
    """The one place the tests build a server configuration: loopback, a port the OS picks."""
    return ServerSettings(host="127.0.0.1", port=0, **overrides)


@dataclass
class InProcessServer:
    """A started in-process server: its address, and the ``E2AServer`` (to stop it, or see its ``chat``)."""

    server: E2AServer
    address: str
    stopped: bool = False

    async def stop(self) -> None:
        """The server's own graceful shutdown (what SIGTERM runs in ``e2a-grpc serve``)."""
        self.stopped = True
        await self.server.stop()


@contextlib.asynccontextmanager
async def in_process_server(backend: AgentBackend | None = None, **overrides: Any) -> AsyncIterator[InProcessServer]:
    """The project's ``E2AServer`` wiring, started in this event loop; always stopped.

    ``backend`` replaces the Chat backend the configuration names (the servicer reads it per call);
    ``overrides`` are ``ServerSettings`` fields.
    """
    server = E2AServer(server_config(**overrides))
    if backend is not None:
        server.chat.backend = backend
    await server.start()
    running = InProcessServer(server, f"127.0.0.1:{server.port}")
    try:
        yield running
    finally:
        if not running.stopped:
            await running.stop()


@pytest.fixture(scope="session")
def server_address() -> Iterator[ServerAddress]:
    """A real ``e2a-grpc serve`` (default configuration) on a free loopback port, for the session."""
    with running_server() as address:
        yield address
