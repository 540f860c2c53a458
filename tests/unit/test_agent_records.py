"""The agent registry's key layout and value schema (``broker.agent_records``), its settings, the
``agents`` command's output, and docs/agent-registry.md, which other languages implement from."""

from __future__ import annotations

import datetime
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue
from pydantic import SecretStr, ValidationError

from e2a_grpc.broker.agent_records import (
    SCHEMA_VERSION,
    AgentRecord,
    agent_keys,
    entry_key,
    key_token,
    new_instance_id,
    now,
    server_record,
)
from e2a_grpc.broker.agent_registry import LiveAgent, RegistryEntries, live_agents
from e2a_grpc.cli.agents import agents_json, agents_table
from e2a_grpc.settings import BackendName, ServerSettings
from tests.conftest import REPO_ROOT

#: What NATS accepts in a KV key token (a key's tokens are separated by dots).
_KV_KEY_TOKEN = re.compile(r"^[-/_=a-zA-Z0-9]+$")
_START = datetime.datetime(2026, 12, 2, 4, 0, tzinfo=datetime.UTC)
agent_ids = st.text(st.characters(codec="utf-8", exclude_categories=["Cc"]), min_size=1, max_size=40)


def _record(agent_id: str = "echo", **changes: object) -> AgentRecord:
    record = server_record(
        ServerSettings(agent_id=agent_id), instance_id=new_instance_id(), started_at=_START, heartbeat_at=_START
    )
    return record.model_copy(update=changes)


@given(agent_ids)
def test_a_key_token_is_one_kv_key_token(agent_id: str) -> None:
    assert _KV_KEY_TOKEN.fullmatch(key_token(agent_id))


@given(agent_ids, agent_ids)
def test_distinct_agent_ids_have_distinct_tokens(first: str, second: str) -> None:
    assert (key_token(first) == key_token(second)) == (first == second)


@given(agent_ids)
def test_an_agents_key_filter_matches_its_entries_only(agent_id: str) -> None:
    key = entry_key(agent_id, new_instance_id())
    prefix = agent_keys(agent_id).removesuffix("*")
    assert key.startswith(prefix) and "." not in key.removeprefix(prefix)


def test_ids_readable_as_they_are_stay_so() -> None:
    assert key_token("code-reviewer") == "code-reviewer"
    assert key_token("a.b_c") == "a_2Eb_5Fc"


def test_an_instance_id_is_32_hex_digits() -> None:
    with pytest.raises(ValueError, match="32 lower-case hex digits"):
        entry_key("echo", "not-an-instance")


def test_a_record_round_trips_through_its_json() -> None:
    record = _record()
    assert AgentRecord.from_json(record.to_json()) == record
    value = json.loads(record.to_json())
    assert value["schema_version"] == SCHEMA_VERSION and value["started_at"] == "2026-12-02T04:00:00Z"


def test_a_reader_ignores_unknown_fields_and_refuses_other_versions() -> None:
    value = json.loads(_record().to_json())
    assert AgentRecord.from_json(json.dumps({**value, "region": "eu"}).encode()) == AgentRecord.from_json(
        json.dumps(value).encode()
    )
    with pytest.raises(ValidationError):
        AgentRecord.from_json(json.dumps({**value, "schema_version": 2}).encode())


def test_serves_record_is_its_card_settings_and_backend_kind() -> None:
    config = ServerSettings(
        agent_id="helper",
        a2a_agent_name="Helper",
        a2a_skills="code: writes code; review",
        a2a_input_modes="text/plain",
        backend=BackendName.A2A,
        a2a_url="https://user:password@agents.example/",
        token=SecretStr("the-token"),
    )
    record = server_record(config, instance_id=new_instance_id(), started_at=_START, heartbeat_at=_START)
    assert (record.agent_id, record.name, record.backend) == ("helper", "Helper", "a2a")
    assert [(skill.id, skill.description) for skill in record.skills] == [("code", "writes code"), ("review", "review")]
    assert record.input_modes == ("text/plain",)
    assert "password" not in record.to_json().decode() and "the-token" not in record.to_json().decode()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"registry_ttl_seconds": 10, "registry_heartbeat_seconds": 6}, "at most half"),
        ({"registry_ttl_seconds": 0.5}, "greater than or equal to 1"),
        ({"agent_id": ""}, "at least 1 character"),
        ({"agent_id": "line\nbreak"}, "should match pattern"),
        ({"registry_bucket": "has.dot"}, "should match pattern"),
    ],
)
def test_registry_settings_are_checked(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ServerSettings(**settings)  # type: ignore[arg-type]  # the fields of each case


def test_agents_are_grouped_with_their_worker_counts() -> None:
    older, newer, other = _record("coder"), _record("coder", started_at=_START + datetime.timedelta(1)), _record("a")
    agents = live_agents([older, other, newer])
    assert agents == [LiveAgent(other, 1), LiveAgent(newer, 2)]
    header, *rows = agents_table(agents).splitlines()
    assert header.split() == ["AGENT", "WORKERS", "BACKEND", "VERSION", "NAME", "SKILLS"]
    assert [row.split() for row in rows] == [
        ["a", "1", "echo", other.version, "e2a-grpc", "chat"],
        ["coder", "2", "echo", newer.version, "e2a-grpc", "chat"],
    ]
    assert len({row.index("echo") for row in rows}) == 1  # columns line up
    listed = json.loads(agents_json(agents))["agents"]
    assert [(agent["agent_id"], agent["workers"]) for agent in listed] == [("a", 1), ("coder", 2)]
    assert agents_table([]) == "no live agents\n"


def documented_fields(section: str) -> list[str]:
    """The fields the value table of a section (``## <section>``) of docs/agent-registry.md names, in order."""
    document = (REPO_ROOT / "docs" / "agent-registry.md").read_text(encoding="utf-8")
    _, heading, rest = document.partition(f"\n## {section}\n")
    assert heading, f"docs/agent-registry.md has no section {section!r}"
    return re.findall(r"^\| `([a-z_]+)` \|", rest.split("\n## ")[0], flags=re.MULTILINE)


def test_the_document_names_every_field_of_the_schema() -> None:
    assert documented_fields("Values: a JSON object (UTF-8)") == list(AgentRecord.model_fields)


def _update(record: AgentRecord, operation: str | None = None) -> KeyValue.Entry:
    """The update a watch delivers for ``record``'s key (a value, or a delete or purge of the key)."""
    return KeyValue.Entry(
        bucket="E2A_AGENTS",
        key=record.key,
        value=b"" if operation else record.to_json(),
        revision=1,
        delta=0,
        created=None,
        operation=operation,
    )


@pytest.mark.parametrize("removal", [KV_DEL, KV_PURGE])
def test_entries_follow_values_and_removals(removal: str) -> None:
    entries = RegistryEntries(ttl=60.0)
    first, second = _record("coder", heartbeat_at=now()), _record("coder", heartbeat_at=now())
    assert entries.apply(_update(first)) and entries.apply(_update(second))
    assert entries.workers("coder") == sorted([first, second], key=lambda record: record.started_at)
    assert entries.apply(_update(first, removal))
    assert entries.workers("coder") == [second]
    assert not entries.apply(_update(first, removal))  # nothing left to remove
    assert entries.apply(_update(second, removal))
    assert entries.workers("coder") == [] and entries.agents() == []


def test_entries_older_than_the_ttl_are_dropped_when_read() -> None:
    entries = RegistryEntries(ttl=60.0)
    live = _record("coder", heartbeat_at=now())
    stale = _record("coder", heartbeat_at=now() - datetime.timedelta(seconds=61))
    gone = _record("old", heartbeat_at=now() - datetime.timedelta(seconds=60))
    for record in (live, stale, gone):
        entries.apply(_update(record))
    assert entries.workers("coder") == [live]
    assert entries.agents() == [LiveAgent(live, 1)]
    assert entries.workers("old") == []


def test_a_value_that_is_not_a_record_ends_its_keys_entry() -> None:
    entries = RegistryEntries(ttl=60.0)
    record = _record("coder", heartbeat_at=now())
    entries.apply(_update(record))
    junk = KeyValue.Entry(
        bucket="E2A_AGENTS", key=record.key, value=b"{}", revision=2, delta=0, created=None, operation=None
    )
    assert entries.apply(junk)
    assert entries.workers("coder") == []
