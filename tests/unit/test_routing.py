"""The routing table of ``serve`` (``--agents FILE``, ``--agent ID=TARGET``): what each target means, and
one clear line per bad entry."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from e2a_grpc.address import ServerAddress
from e2a_grpc.backends import make_routes
from e2a_grpc.backends.bus import BusBackend
from e2a_grpc.cli import serve
from e2a_grpc.cli.options import settings_from
from e2a_grpc.routing import CaFile, RouteKind, RouteTarget, parse_target
from e2a_grpc.settings import BackendName, ServerSettings
from tests.support.certificates import make_ca


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("local:echo", RouteTarget(RouteKind.ECHO)),
        ("local:acp:python agent.py --fast", RouteTarget(RouteKind.ACP, acp_command="python agent.py --fast")),
        ("local:a2a:http://127.0.0.1:9999", RouteTarget(RouteKind.A2A, a2a_url="http://127.0.0.1:9999")),
        ("nats", RouteTarget(RouteKind.NATS)),
        ("grpc://10.0.0.5:50051", RouteTarget(RouteKind.GRPC, upstream=ServerAddress("10.0.0.5", 50051, False))),
        (
            "grpcs://agents.example:443",
            RouteTarget(RouteKind.GRPC, upstream=ServerAddress("agents.example", 443, True)),
        ),
        ("grpc://[::1]:7000", RouteTarget(RouteKind.GRPC, upstream=ServerAddress("::1", 7000, False))),
    ],
)
def test_each_target_form(text: str, target: RouteTarget) -> None:
    assert parse_target(text) == target


@given(
    st.sampled_from(["grpc", "grpcs"]), st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True), st.integers(1, 65535)
)
def test_an_upstream_target_says_itself_back(scheme: str, host: str, port: int) -> None:
    assert str(parse_target(f"{scheme}://{host}:{port}")) == f"{scheme}://{host}:{port}"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_and_options_make_one_table_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", "t0k3n")
    table = _file(
        tmp_path,
        """
        default_agent = "search"
        [agents.writer]
        target = "local:echo"
        name = "Writer"
        description = "Writes"
        skills = ["write: Writes text", "edit: Edits text"]
        [agents.search]
        target = "grpcs://search.internal:443"
        token_env = "SEARCH_TOKEN"
        """,
    )
    settings = ServerSettings(agents=table, agent=["writer=local:acp:python w.py", "extra=local:echo"])
    routing = settings.routing
    assert routing is not None
    assert routing.agent_ids == ("writer", "search", "extra")
    assert routing.default_agent == "search"
    writer = routing.route("writer")
    assert writer is not None and writer.target.kind is RouteKind.ACP  # the option replaced the file's target
    search = routing.route("search")
    assert search is not None and search.upstream_token() == "t0k3n"
    assert settings.runs_acp and settings.worker_count == 1


def test_the_first_agent_is_the_default_and_default_agent_overrides_it() -> None:
    table = ServerSettings(agent=["a=local:echo", "b=local:echo"]).routing
    assert table is not None and table.default_agent == "a"
    table = ServerSettings(agent=["a=local:echo", "b=local:echo"], default_agent="b").routing
    assert table is not None and table.default_agent == "b"


def test_a_nats_target_routes_to_the_agents_workers_on_the_bus() -> None:
    settings = ServerSettings(agent=["n=nats", "e=local:echo"], bus_nats="nats://127.0.0.1:4222")
    routes = make_routes(settings)
    assert routes is not None
    backend = routes.backend_for("n")
    assert isinstance(backend, BusBackend) and backend.agent_id == "n"


def test_the_nats_routes_of_a_server_share_one_bus() -> None:
    """One connection and one watch of the registry for every agent routed to the bus."""
    settings = ServerSettings(agent=["n=nats", "e=local:echo", "m=nats"], bus_nats="nats://127.0.0.1:4222")
    routes = make_routes(settings)
    assert routes is not None and routes.agent_ids == ("n", "e", "m")
    first, second = routes.backend_for("n"), routes.backend_for("m")
    assert isinstance(first, BusBackend) and isinstance(second, BusBackend)
    assert first.bus is second.bus


def test_without_a_table_the_server_is_as_before() -> None:
    settings = ServerSettings()
    assert settings.routing is None and not settings.runs_acp
    assert settings.local_backends == {BackendName.ECHO}


def test_the_backends_run_here_are_those_of_local_agents() -> None:
    settings = ServerSettings(agent=["a=local:a2a:http://127.0.0.1:1", "b=grpc://h:1", "c=local:echo"])
    assert settings.local_backends == {BackendName.A2A, BackendName.ECHO}
    assert ServerSettings(agent=["b=grpc://h:1"]).local_backends == frozenset()


def _problems(**fields: object) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        ServerSettings(**fields)  # type: ignore[arg-type]
    (error,) = raised.value.errors()
    return str(error["ctx"]["error"]).splitlines()


def test_each_bad_option_gets_its_own_line() -> None:
    problems = _problems(
        agent=[
            "loose",
            "y=bogus",
            "z=grpc://h",
            "q=local:acp:",
            "w=local:a2a:",
            "n=nats",
            "p=grpc://u:p@h:0",
            'u=local:acp:python "agent.py',
        ]
    )
    assert problems[0] == "--agent 'loose': write ID=TARGET, e.g. writer=local:echo"
    assert problems[1].startswith("--agent 'y': target: unknown target 'bogus'; a target is one of local:echo")
    assert problems[2] == "--agent 'z': target: 'grpc://h' names no port: write grpc://host:port"
    assert problems[3] == "--agent 'q': target: local:acp needs a command line after local:acp:"
    assert problems[4] == "--agent 'w': target: local:a2a needs a URL after local:a2a:"
    assert problems[5] == "--agent 'p': target: 'grpc://u:p@h:0' is not an upstream address: write grpc://host:port"
    assert problems[6] == """--agent 'u': target: local:acp: command line 'python "agent.py': No closing quotation"""
    assert problems[7] == (
        "agent 'n': target nats needs --bus-nats, the NATS server of the agent bus its workers take requests from"
    )
    assert len(problems) == 8


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[agents.a\n", "not valid TOML"),
        ('default_agent = "a"\n', "no [agents.ID] table"),
        ('[agents.a]\ntarget = "local:echo"\ntoken = "s3cret"\n', "a token never goes in the file"),
        ('[agents.a]\ntarget = "local:echo"\ncolour = "red"\n', "colour: Extra inputs are not permitted"),
        ('[agents.a]\nname = "A"\n', "target: Field required"),
        ("[agents.a]\ntarget = 5\n", "target: must be a string"),
        ("agents = 3\n", "no [agents.ID] table"),
        ('routes = 1\n[agents.a]\ntarget = "local:echo"\n', "unknown top-level keys ['routes']"),
        ('[agents.a]\ntarget = "grpc://h:1"\ntoken_env = "NOT SET"\n', "'NOT SET' is not an environment variable"),
        ('[agents.a]\ntarget = "grpc://h:1"\ntoken_env = "E2A_TEST_UNSET_VAR"\n', "the variable is not set"),
        ('[agents.a]\ntarget = "local:echo"\ntoken_env = "E2A_TEST_SET_VAR"\n', "token_env is for grpc:// targets"),
    ],
)
def test_a_bad_file_says_what_and_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, problem: str
) -> None:
    monkeypatch.setenv("E2A_TEST_SET_VAR", "set")
    monkeypatch.delenv("E2A_TEST_UNSET_VAR", raising=False)
    path = _file(tmp_path, text)
    (line,) = _problems(agents=path)
    assert problem in line
    assert str(path) in line or line.startswith("agent 'a': ")  # checks of the whole table name the agent


def test_a_grpcs_routes_tls_ca_is_read_with_the_table_relative_to_it(tmp_path: Path) -> None:
    ca = make_ca(tmp_path, "ca")
    path = _file(tmp_path, f'[agents.a]\ntarget = "grpcs://h:1"\ntls_ca = "{ca.cert.name}"\n')
    routing = ServerSettings(agents=path).routing
    assert routing is not None
    route = routing.route("a")
    assert route is not None and route.tls_ca == CaFile(ca.cert, ca.cert.read_bytes())


@pytest.mark.parametrize(
    ("target", "tls_ca", "problem"),
    [
        ("grpc://h:1", "ca.pem", "agent 'a': tls_ca is for grpcs:// targets (the upstream's TLS)"),
        ("local:echo", "ca.pem", "agent 'a': tls_ca is for grpcs:// targets (the upstream's TLS)"),
        ("grpcs://h:1", "missing.pem", "tls_ca: {dir}/missing.pem: cannot read it: No such file or directory"),
        ("grpcs://h:1", "agents.toml", "tls_ca: {dir}/agents.toml: no PEM CA certificate in it"),
        ("grpcs://h:1", "", "tls_ca: {dir}: cannot read it: Is a directory"),
    ],
)
def test_a_bad_tls_ca_says_what_and_where(tmp_path: Path, target: str, tls_ca: str, problem: str) -> None:
    (tmp_path / "ca.pem").write_bytes(make_ca(tmp_path, "some-ca").cert.read_bytes())
    path = _file(tmp_path, f'[agents.a]\ntarget = "{target}"\ntls_ca = "{tls_ca}"\n')
    (line,) = _problems(agents=path)
    assert line.endswith(problem.format(dir=tmp_path)), line


def test_a_default_agent_not_in_the_table_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, 'default_agent = "b"\n[agents.a]\ntarget = "local:echo"\n')
    assert _problems(agents=path) == ["default agent 'b' is not in the routing table (a)"]


def test_an_unreadable_file_says_so(tmp_path: Path) -> None:
    (problem,) = _problems(agents=tmp_path / "missing.toml")
    assert problem.startswith(f"--agents {tmp_path / 'missing.toml'}: cannot read it")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"agent": ["a=local:echo"], "backend": "acp", "acp_command": "x"}, "--backend names the one agent"),
        ({"default_agent": "a"}, "--default-agent needs a routing table"),
        ({"agent": ["a=local:acp:python x.py"], "workers": 2}, "nor a local:acp agent"),
    ],
)
def test_combinations_a_table_refuses(fields: dict[str, object], problem: str) -> None:
    (line,) = _problems(**fields)
    assert problem in line


def test_serve_takes_agent_once_per_entry() -> None:
    parser = argparse.ArgumentParser()
    serve.add_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--agent", "a=local:echo", "--agent", "b=grpc://h:1", "--default-agent", "b"])
    settings = settings_from(ServerSettings, args)
    assert settings.routing is not None and settings.routing.agent_ids == ("a", "b")


def test_the_environment_gives_one_entry_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("E2A_GRPC_AGENT", "a=local:echo\n\n  b=local:acp:python agent.py --x=1,2  \n")
    table = ServerSettings().routing
    assert table is not None and table.agent_ids == ("a", "b")
    route = table.route("b")
    assert route is not None and route.target.acp_command == "python agent.py --x=1,2"
