"""``e2a-grpc agent``'s command line: the options it takes (serve's backend and limit settings, the
bus's, none of serve's listening ones), one clear line per bad setting, and exit 4 when no NATS
server answers."""

from __future__ import annotations

import os

import pytest

from e2a_grpc.cli import main
from e2a_grpc.cli.agent import worker_options
from e2a_grpc.cli.exits import EXIT_BAD_INPUT, EXIT_NO_SERVER
from e2a_grpc.settings import ENV_PREFIX
from tests.support.processes import free_port


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(name)


def test_the_worker_takes_serves_backend_and_limit_options_and_the_bus_ones() -> None:
    options = set(worker_options())
    assert {
        "backend",
        "acp_command",
        "a2a_url",
        "a2a_transports",
        "echo_delay_seconds",
        "chat_max_frames",
        "agent_id",
    } <= options
    assert {
        "bus_nats",
        "bus_max_turns",
        "bus_progress_seconds",
        "health_port",
        "grace_seconds",
        "sessions_bucket",
    } <= options
    assert not {"port", "a2a_port", "workers", "registry_nats", "publish_nats", "token"} & options


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        ([], "needs --nats"),
        (["--nats", "nats://127.0.0.1:4222", "--backend", "acp"], "--backend acp needs --acp-command"),
        (
            ["--nats", "nats://127.0.0.1:4222", "--bus-progress-seconds", "20"],
            "must be at most a third of --bus-ack-wait-seconds",
        ),
        (["--nats", "nats://127.0.0.1:4222", "--bus-max-turns", "0"], "--bus-max-turns"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", *argv]) == EXIT_BAD_INPUT
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and problem in errors[0], errors


def test_no_nats_server_is_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    assert main(["agent", "--nats", url]) == EXIT_NO_SERVER
    assert f"cannot reach NATS at {url}" in capsys.readouterr().err
