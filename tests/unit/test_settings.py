"""Settings: command line over environment over defaults, built only by the command that uses them."""

from __future__ import annotations

import importlib.metadata
import json
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from e2a_grpc import cli
from e2a_grpc.settings import BackendName, ClientSettings, ServerSettings, env_var

ENVELOPE = {"method": "chat.send", "session_id": "s1", "params": {"text": "hi"}}


pytestmark = pytest.mark.usefixtures("clean_environment")


def test_env_overrides_default(monkeypatch: pytest.MonkeyPatch, served: list[ServerSettings]) -> None:
    monkeypatch.setenv("E2A_GRPC_PORT", "6000")
    monkeypatch.setenv("E2A_GRPC_ACP_COMMAND", "python 'my agent.py'")
    assert cli.main(["serve"]) == 0
    [config] = served
    assert config.port == 6000
    assert config.host == "127.0.0.1"  # the default
    assert config.acp_argv == ("python", "my agent.py")


def test_command_line_overrides_env(monkeypatch: pytest.MonkeyPatch, served: list[ServerSettings]) -> None:
    monkeypatch.setenv("E2A_GRPC_PORT", "6000")
    monkeypatch.setenv("E2A_GRPC_BACKEND", "acp")
    assert cli.main(["serve", "--port", "7000", "--backend", "echo"]) == 0
    [config] = served
    assert (config.port, config.backend) == (7000, "echo")


def test_a_bad_setting_of_serve_does_not_affect_convert(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("E2A_GRPC_PORT", "abc")
    monkeypatch.setenv("E2A_GRPC_BACKEND", "nonsense")
    source = tmp_path / "envelope.json"
    source.write_text(json.dumps(ENVELOPE))
    assert cli.main(["convert", "to-acp", str(source)]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "chat.send"


def test_a_bad_port_stops_serve_with_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], served: list[ServerSettings]
) -> None:
    monkeypatch.setenv("E2A_GRPC_PORT", "abc")
    assert cli.main(["serve"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: E2A_GRPC_PORT: ") and "integer" in line
    assert cli.main(["serve", "--port", "70000"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: --port: ")  # the command line's value is the one named
    assert served == []


@pytest.mark.parametrize("content", ["", " \n\t\n"])
def test_an_empty_token_file_refuses_to_start(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], served: list[ServerSettings]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(content)
    assert cli.main(["serve", "--token-file", str(token_file)]) == 2
    error = capsys.readouterr().err
    assert "--token-file" in error and "empty" in error
    assert served == []


def test_the_token_comes_from_the_file_and_stays_secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("E2A_GRPC_TOKEN", "from-env")
    token_file = tmp_path / "token"
    token_file.write_text("from-file-123\n")
    settings = ServerSettings(token_file=token_file)
    assert settings.token is not None and settings.token.get_secret_value() == "from-file-123"
    assert "from-file-123" not in repr(settings) and "from-file-123" not in str(settings.model_dump())


def test_backends_need_their_target(capsys: pytest.CaptureFixture[str], served: list[ServerSettings]) -> None:
    assert cli.main(["serve", "--backend", "acp"]) == 2
    assert capsys.readouterr().err == "error: --backend acp needs --acp-command (or E2A_GRPC_ACP_COMMAND)\n"
    with pytest.raises(ValidationError, match="--a2a-url"):
        ServerSettings(backend=BackendName.A2A)
    assert served == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("port", -1), ("max_message_bytes", 0), ("a2a_timeout_seconds", 0), ("acp_max_sessions", 0)],
)
def test_out_of_range_values_are_refused(field: str, value: int) -> None:
    with pytest.raises(ValidationError, match=field):
        ServerSettings.model_validate({field: value})


def test_the_a2a_transports_are_a_preference_of_known_bindings() -> None:
    assert ServerSettings().a2a_transport_preference == ("GRPC", "JSONRPC")
    assert ServerSettings(a2a_transports="JSONRPC, GRPC").a2a_transport_preference == ("JSONRPC", "GRPC")
    with pytest.raises(ValidationError, match=r"(?s)a2a_transports.*HTTP\+JSON: not one of GRPC, JSONRPC"):
        ServerSettings(a2a_transports="GRPC,HTTP+JSON")
    with pytest.raises(ValidationError, match=r"(?s)a2a_transports.*needs at least one entry"):
        ServerSettings(a2a_transports=" , ")


def test_chat_limits_have_defaults_options_and_env_vars(
    monkeypatch: pytest.MonkeyPatch, served: list[ServerSettings]
) -> None:
    assert cli.main(["serve"]) == 0
    monkeypatch.setenv("E2A_GRPC_CHAT_MAX_STREAM_SECONDS", "1.5")
    assert cli.main(["serve", "--chat-max-frames", "10", "--chat-max-prompt-bytes", "2048"]) == 0
    defaults, configured = served
    assert (defaults.chat_max_prompt_bytes, defaults.chat_max_frames, defaults.chat_max_stream_seconds) == (
        1024 * 1024, 100_000, 600.0,
    )  # fmt: skip
    assert (configured.chat_max_prompt_bytes, configured.chat_max_frames, configured.chat_max_stream_seconds) == (
        2048, 10, 1.5,
    )  # fmt: skip


@pytest.mark.parametrize("field", ["chat_max_prompt_bytes", "chat_max_frames", "chat_max_stream_seconds"])
def test_chat_limits_are_positive(field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        ServerSettings.model_validate({field: 0})


def test_serve_help_lists_defaults_and_env_vars(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["serve", "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines anywhere between words
    for name in ServerSettings.model_fields:
        assert env_var(name) in help_text
    assert "--port PORT port; 0 picks a free one (default: 50051) [E2A_GRPC_PORT]" in help_text
    assert "(default: echo) [E2A_GRPC_BACKEND]" in help_text


def test_client_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ClientSettings().server == "127.0.0.1:50051"
    monkeypatch.setenv("E2A_GRPC_SERVER", "10.0.0.1:443")
    monkeypatch.setenv("MY_TOKEN", "t0k")
    settings = ClientSettings(token_env="MY_TOKEN")
    assert (settings.server, settings.bearer_token()) == ("10.0.0.1:443", "t0k")


def test_client_settings_parse_the_server_address(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ClientSettings().server_address.target == "127.0.0.1:50051"
    monkeypatch.setenv("E2A_GRPC_SERVER", "https://agents.example.com")
    address = ClientSettings().server_address
    assert (address.target, address.tls) == ("agents.example.com:50051", True)
    assert ClientSettings(server="10.0.0.2").server_address.target == "10.0.0.2:50051"  # the option wins


def test_a_bad_server_address_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chat", "--server", "grpc://x:1", "hi"]) == 2
    assert capsys.readouterr().err == (
        "error: --server: unsupported scheme 'grpc' in 'grpc://x:1': use http:// or https://\n"
    )


@pytest.mark.parametrize("text", ["", "  "])
def test_chat_needs_some_text(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chat", text]) == 2
    assert capsys.readouterr().err == "error: nothing to send: give some text\n"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"e2a-grpc {importlib.metadata.version('e2a-grpc')}\n"


def test_verbose_serve_leaves_library_internals_out(
    monkeypatch: pytest.MonkeyPatch, served: list[ServerSettings]
) -> None:
    for name in ("grpc", "asyncio", "a2a.client.card_resolver"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    assert cli.main(["serve", "-v"]) == 0
    assert logging.getLogger("grpc._cython.cygrpc").getEffectiveLevel() == logging.WARNING
    assert logging.getLogger("asyncio").getEffectiveLevel() == logging.WARNING
    # a2a-sdk logs every agent card it fetches, whole, at INFO.
    assert logging.getLogger("a2a.client.card_resolver").getEffectiveLevel() == logging.WARNING


def test_tracing_without_its_exporter_is_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "no-such-exporter")
    assert cli.main(["serve", "--port", "0", "--tracing"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: --tracing: OTEL_TRACES_EXPORTER: no span exporter 'no-such-exporter'")
