"""ServerSettings for ``serve --workers`` and ``--event-loop``: defaults and refusals, one place each."""

from __future__ import annotations

import os
from typing import Any

import pytest
from pydantic import ValidationError

from e2a_grpc import settings
from e2a_grpc.grpc.workers import cpus_of_workers
from e2a_grpc.settings import BackendName, EventLoop, ServerSettings


def test_the_default_is_one_worker_per_usable_core() -> None:
    assert ServerSettings().worker_count == len(os.sched_getaffinity(0))
    assert ServerSettings(workers=3).worker_count == 3


@pytest.mark.parametrize(
    "fields",
    [{"backend": BackendName.ACP, "acp_command": "agent"}, {"metrics_port": 0}],
    ids=["acp-backend", "metrics-port"],
)
def test_what_one_process_must_own_defaults_to_one_worker_and_refuses_more(fields: dict[str, Any]) -> None:
    assert ServerSettings(**fields).worker_count == 1
    assert ServerSettings(workers=1, **fields).worker_count == 1
    with pytest.raises(ValidationError, match="--workers > 1 cannot serve"):
        ServerSettings(workers=2, **fields)


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValidationError, match="workers"):
        ServerSettings(workers=0)


def test_uvloop_is_used_when_installed_unless_asyncio_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ServerSettings(event_loop=EventLoop.AUTO).uses_uvloop  # the dev extra installs it
    assert ServerSettings(event_loop=EventLoop.UVLOOP).uses_uvloop
    assert not ServerSettings(event_loop=EventLoop.ASYNCIO).uses_uvloop
    monkeypatch.setattr(settings, "_uvloop_installed", lambda: False)
    assert not ServerSettings(event_loop=EventLoop.AUTO).uses_uvloop
    with pytest.raises(ValidationError, match="uvloop is not installed"):
        ServerSettings(event_loop=EventLoop.UVLOOP)


def test_uvloop_is_not_used_with_the_acp_backend_and_refused_when_asked_for() -> None:
    acp: dict[str, Any] = {"backend": BackendName.ACP, "acp_command": "agent"}
    assert not ServerSettings(**acp).uses_uvloop
    assert not ServerSettings(event_loop=EventLoop.ASYNCIO, **acp).uses_uvloop
    with pytest.raises(ValidationError, match="--event-loop uvloop cannot serve --backend acp"):
        ServerSettings(event_loop=EventLoop.UVLOOP, **acp)


def test_pinned_workers_take_the_usable_cpus_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {5, 3})
    assert cpus_of_workers(3, pin=True) == [3, 5, 3]
    assert cpus_of_workers(2, pin=False) == [None, None]


def test_pinning_is_refused_where_a_process_cannot_be_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not ServerSettings().pin_workers
    monkeypatch.delattr(os, "sched_setaffinity")
    with pytest.raises(ValidationError, match="--pin-workers: this system cannot pin"):
        ServerSettings(pin_workers=True)
