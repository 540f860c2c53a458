"""The broker's tuning in the one settings object: the publisher's window, ack timeout and linger
(``serve --publish-nats``), the replicas of the stream and bucket a server creates, and the subscriber's idle timeout (``subscribe``), each with its option,
its environment variable and a range."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import ValidationError

from e2a_grpc import cli
from e2a_grpc.broker import stream_reader
from e2a_grpc.cli import exits
from e2a_grpc.model import E2AResponse
from e2a_grpc.settings import NATS_DUPLICATE_WINDOW_SECONDS, ServerSettings, SubscribeSettings

pytestmark = pytest.mark.usefixtures("clean_environment")


@pytest.fixture
def subscribed(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The arguments ``subscribe`` would read the broker with (no broker is reached)."""
    calls: list[dict[str, Any]] = []

    async def capture(url: str, **options: Any) -> AsyncIterator[E2AResponse]:
        calls.append({"url": url, **options})
        return
        yield  # an async generator that yields nothing

    monkeypatch.setattr(stream_reader, "read_streams", capture)
    return calls


def test_the_publishers_tuning_has_defaults_options_and_env_vars(
    monkeypatch: pytest.MonkeyPatch, served: list[ServerSettings]
) -> None:
    assert cli.main(["serve"]) == 0
    monkeypatch.setenv("E2A_GRPC_NATS_PUBLISH_LINGER_SECONDS", "0")
    assert cli.main(["serve", "--nats-publish-window", "16", "--nats-ack-timeout-seconds", "0.5"]) == 0
    defaults, configured = served
    tuning = ("nats_publish_window", "nats_ack_timeout_seconds", "nats_publish_linger_seconds")
    assert [getattr(defaults, name) for name in tuning] == [256, 2.0, 0.005]
    assert [getattr(configured, name) for name in tuning] == [16, 0.5, 0.0]


def test_the_replicas_of_what_the_server_creates_have_a_default_an_option_and_an_env_var(
    monkeypatch: pytest.MonkeyPatch, served: list[ServerSettings]
) -> None:
    assert cli.main(["serve"]) == 0
    assert cli.main(["serve", "--nats-replicas", "3"]) == 0
    monkeypatch.setenv("E2A_GRPC_NATS_REPLICAS", "5")
    assert cli.main(["serve"]) == 0
    assert [settings.nats_replicas for settings in served] == [1, 3, 5]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nats_publish_window", 0),
        ("nats_publish_window", 65_537),
        ("nats_ack_timeout_seconds", 0.05),
        # A frame sent again after its ack timeout must fall in the stream's duplicate window.
        ("nats_ack_timeout_seconds", NATS_DUPLICATE_WINDOW_SECONDS),
        ("nats_publish_linger_seconds", -0.001),
        ("nats_publish_linger_seconds", 1.5),
        ("nats_replicas", 0),
        ("nats_replicas", 6),  # JetStream's limit is 5
    ],
)
def test_out_of_range_tuning_is_refused(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        ServerSettings.model_validate({field: value})


def test_a_bad_window_stops_serve_with_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], served: list[ServerSettings]
) -> None:
    assert cli.main(["serve", "--nats-publish-window", "0"]) == exits.EXIT_BAD_INPUT
    assert capsys.readouterr().err == "error: --nats-publish-window: Input should be greater than or equal to 1\n"
    assert served == []


@pytest.mark.parametrize(
    ("arguments", "environment"),
    [
        (["--timeout", "2.5"], {}),
        (["--nats-idle-timeout-seconds", "2.5"], {}),
        ([], {"E2A_GRPC_NATS_IDLE_TIMEOUT_SECONDS": "2.5"}),
    ],
)
def test_subscribes_idle_timeout_is_a_setting(
    arguments: list[str],
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    subscribed: list[dict[str, Any]],
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["subscribe", "--request-id", "r-1", *arguments]) == exits.EXIT_OK
    [call] = subscribed
    assert call["idle_timeout"] == 2.5
    assert call["request_id"] == "r-1"


def test_subscribe_waits_for_ever_by_default(subscribed: list[dict[str, Any]]) -> None:
    assert SubscribeSettings().nats_idle_timeout_seconds is None
    assert cli.main(["subscribe"]) == exits.EXIT_OK
    assert subscribed[0]["idle_timeout"] is None


@pytest.mark.parametrize("option", ["--timeout", "--nats-idle-timeout-seconds"])
def test_an_idle_timeout_that_is_not_positive_is_bad_input(
    option: str, capsys: pytest.CaptureFixture[str], subscribed: list[dict[str, Any]]
) -> None:
    assert cli.main(["subscribe", option, "0"]) == exits.EXIT_BAD_INPUT
    assert capsys.readouterr().err == "error: --nats-idle-timeout-seconds: Input should be greater than 0\n"
    assert subscribed == []
