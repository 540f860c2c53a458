"""ServerSettings for ``serve --workers`` and ``--event-loop``: defaults and refusals, one place each."""

from __future__ import annotations

import os
from typing import Any

import pytest
from pydantic import ValidationError

from e2a_grpc import settings
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


def test_asyncio_by_default_uvloop_when_asked_or_auto_and_never_for_acp(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not ServerSettings().uses_uvloop  # the default is asyncio's own loop
    assert ServerSettings(event_loop=EventLoop.AUTO).uses_uvloop  # the dev extra installs it
    assert not ServerSettings(event_loop=EventLoop.AUTO, backend=BackendName.ACP, acp_command="agent").uses_uvloop
    with pytest.raises(ValidationError, match="cannot run --backend acp"):
        ServerSettings(event_loop=EventLoop.UVLOOP, backend=BackendName.ACP, acp_command="agent")
    assert ServerSettings(event_loop=EventLoop.UVLOOP).uses_uvloop
    assert not ServerSettings(event_loop=EventLoop.ASYNCIO).uses_uvloop
    monkeypatch.setattr(settings, "_uvloop_installed", lambda: False)
    assert not ServerSettings(event_loop=EventLoop.AUTO).uses_uvloop
    with pytest.raises(ValidationError, match="uvloop is not installed"):
        ServerSettings(event_loop=EventLoop.UVLOOP)
