"""Every command's option help says each setting's real default."""

from __future__ import annotations

import argparse

import pytest

from e2a_grpc.cli import build_parser

pytestmark = pytest.mark.in_process


def _commands() -> dict[str, argparse.ArgumentParser]:
    (commands,) = (action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction))
    return dict(commands.choices)


@pytest.mark.parametrize("command", sorted(_commands()))
def test_no_option_help_shows_pydantics_undefined_marker(command: str) -> None:
    help_text = _commands()[command].format_help()
    assert "PydanticUndefined" not in help_text


def test_a_list_setting_without_entries_shows_as_unset() -> None:
    help_text = " ".join(_commands()["serve"].format_help().split())
    assert "(default: unset) [E2A_GRPC_AGENT]" in help_text
