"""Settings as command-line options: an option given is used over its environment variable, and that
over the setting's default (pydantic-settings builds them); errors name where the bad value came from."""

from __future__ import annotations

import argparse
from enum import StrEnum
from typing import Any, TypeVar

from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings

from e2a_grpc.settings import env_var

SettingsT = TypeVar("SettingsT", bound=BaseSettings)


def option_name(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def _shown_default(value: object) -> str:
    if value is None or value == "" or value == []:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _setting_help(settings_class: type[BaseSettings], name: str) -> str:
    field = settings_class.model_fields[name]
    # A list setting's default comes from a factory (``field.default`` is pydantic's "undefined" marker).
    default = field.get_default(call_default_factory=True)
    return f"{field.description} (default: {_shown_default(default)}) [{env_var(name)}]"


def add_setting_options(parser: argparse.ArgumentParser, settings_class: type[BaseSettings], *names: str) -> None:
    """Options for settings fields. Not given, an option is absent from the namespace, so that the
    environment and then the field's default apply when the settings are built."""
    for name in names:
        annotation = settings_class.model_fields[name].annotation
        kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": _setting_help(settings_class, name)}
        if annotation is bool:
            kwargs["action"] = "store_true"
        elif annotation == list[str]:  # given once per entry
            kwargs["action"] = "append"
        elif isinstance(annotation, type) and issubclass(annotation, StrEnum):
            kwargs["choices"] = list(annotation)
        parser.add_argument(option_name(name), **kwargs)


def settings_from(settings_class: type[SettingsT], args: argparse.Namespace) -> SettingsT:
    """The settings, with the options given on the command line over the environment and defaults.

    Built only by the command that uses them, so that a bad value for another command does not matter.
    """
    options = {name: value for name, value in vars(args).items() if name in settings_class.model_fields}
    return settings_class(**options)


def settings_error(error: ErrorDetails, args: argparse.Namespace) -> str:
    """One line for a settings error, naming where the bad value came from."""
    message = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
    if not error["loc"]:
        return message  # a rule across settings: its message names them
    name = str(error["loc"][0])
    return f"{option_name(name) if name in vars(args) else env_var(name)}: {message}"
