"""``error_text``: how an exception is told in a log line or an error message, its message or not
(``exc or repr(exc)`` told nothing more, as every exception is truthy)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.cli import main
from e2a_grpc.cli.exits import EXIT_FAILED
from e2a_grpc.errors import error_text
from e2a_grpc.settings import ENV_PREFIX


def test_an_exception_without_a_message_is_told_by_its_type() -> None:
    assert error_text(TimeoutError()) == "TimeoutError"
    assert error_text(ConnectionError("")) == "ConnectionError"


@given(st.text(min_size=1))
def test_an_exception_with_a_message_is_told_by_its_type_and_message(message: str) -> None:
    assert error_text(ValueError(message)) == f"ValueError: {message}"


def test_the_agents_command_names_an_empty_timeout_rather_than_ending_on_a_colon(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from e2a_grpc.broker.agent_registry import AgentRegistry

    for name in [name for name in os.environ if name.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(name)

    async def broker_never_answers(url: str, *, bucket: str) -> AgentRegistry:
        raise TimeoutError  # what a JetStream request that gets no answer in time raises: no message

    monkeypatch.setattr(AgentRegistry, "open", broker_never_answers)
    # A broker that does not answer in time was reached: the registry could not be read.
    assert main(["agents", "--nats", "nats://127.0.0.1:4222"]) == EXIT_FAILED
    assert capsys.readouterr().err == "error: cannot read the agent registry E2A_AGENTS: TimeoutError\n"
