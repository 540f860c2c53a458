"""Fixtures of the settings tests: the environment they start from, and what ``serve`` would run."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from e2a_grpc.cli import serve
from e2a_grpc.settings import ServerSettings


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests set the variables they need; none leak in from the shell running them."""
    for name in list(os.environ):
        if name.startswith("E2A_GRPC_"):
            monkeypatch.delenv(name)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[ServerSettings]:
    """The settings ``serve`` would start a server with (no server is started)."""
    configs: list[ServerSettings] = []

    def capture(config: ServerSettings, *, setup_worker: Callable[[], None]) -> int:
        configs.append(config)
        return 0

    monkeypatch.setattr(serve, "run_server", capture)
    return configs
