"""Session ownership's key layout and value schema (``broker.session_owners``), and the section of
docs/agent-registry.md that other languages implement it from."""

from __future__ import annotations

import datetime
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from e2a_grpc.broker.agent_records import key_token, new_instance_id
from e2a_grpc.broker.session_owners import MAX_SESSION_KEY_LENGTH, SCHEMA_VERSION, SessionOwner, session_key
from e2a_grpc.settings import ServerSettings
from tests.unit.test_agent_records import documented_fields

#: What NATS accepts in a KV key (tokens separated by dots).
_KV_KEY = re.compile(r"^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$")
_START = datetime.datetime(2026, 12, 2, 6, 0, tzinfo=datetime.UTC)
ids = st.text(st.characters(codec="utf-8", exclude_categories=["Cc"]), min_size=1, max_size=40)


def _owner(**changes: object) -> SessionOwner:
    fields: dict[str, object] = {
        "schema_version": SCHEMA_VERSION,
        "agent_id": "coder",
        "session_id": "sess-1",
        "instance_id": new_instance_id(),
        "claimed_at": _START,
        "refreshed_at": _START,
    }
    return SessionOwner.model_validate({**fields, **changes})


def _decoded(token: str) -> str:
    """A key token read back (the inverse of ``key_token``: ``_XX`` is a byte, anything else itself)."""
    return re.sub(rb"_([0-9A-F]{2})", lambda byte: bytes.fromhex(byte[1].decode()), token.encode()).decode()


@given(ids, ids)
def test_a_session_key_is_two_kv_key_tokens_that_read_back_as_its_ids(agent_id: str, session_id: str) -> None:
    key = session_key(agent_id, session_id)
    assert _KV_KEY.fullmatch(key)
    agent, session = key.split(".")
    assert (_decoded(agent), _decoded(session)) == (agent_id, session_id)


@given(ids, ids, ids, ids)
def test_distinct_sessions_have_distinct_keys(agent: str, session: str, other_agent: str, other_session: str) -> None:
    same_key = session_key(agent, session) == session_key(other_agent, other_session)
    assert same_key == ((agent, session) == (other_agent, other_session))


def test_a_session_token_is_the_agent_token_of_the_registry() -> None:
    assert session_key("code-reviewer", "sess.1") == "code-reviewer.sess_2E1"
    assert session_key("a.b", "é") == f"{key_token('a.b')}.{key_token('é')}" == "a_2Eb._C3_A9"


@pytest.mark.parametrize(
    ("session_id", "message"),
    [("", "must not be empty"), ("\U0001f600" * 300, "too long for session ownership")],
)
def test_a_session_id_without_a_key_is_refused(session_id: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        session_key("coder", session_id)
    with pytest.raises(ValidationError):
        _owner(session_id=session_id)


def test_the_longest_key_is_within_the_limit() -> None:
    session_id = "s" * (MAX_SESSION_KEY_LENGTH - len("coder."))
    assert len(session_key("coder", session_id)) == MAX_SESSION_KEY_LENGTH
    with pytest.raises(ValueError, match=f"at most {MAX_SESSION_KEY_LENGTH}"):
        session_key("coder", session_id + "s")


def test_an_owner_round_trips_through_its_json() -> None:
    owner = _owner(session_id="a session/with.dots")
    assert SessionOwner.from_json(owner.to_json()) == owner
    value = json.loads(owner.to_json())
    assert value["schema_version"] == SCHEMA_VERSION and value["claimed_at"] == "2026-12-02T06:00:00Z"
    assert owner.key == "coder.a_20session_2Fwith_2Edots"


def test_a_reader_ignores_unknown_fields_and_refuses_other_versions_and_instances() -> None:
    value = json.loads(_owner().to_json())
    assert SessionOwner.from_json(json.dumps({**value, "region": "eu"}).encode()) == _owner(
        instance_id=value["instance_id"]
    )
    for wrong in ({"schema_version": 2}, {"instance_id": "not-hex"}, {"agent_id": ""}):
        with pytest.raises(ValidationError):
            SessionOwner.from_json(json.dumps({**value, **wrong}).encode())


def test_the_sessions_bucket_is_a_setting_with_a_default() -> None:
    assert ServerSettings().sessions_bucket == "E2A_SESSIONS"
    with pytest.raises(ValidationError, match="should match pattern"):
        ServerSettings(sessions_bucket="has.dot")


def test_the_document_names_every_field_of_the_schema() -> None:
    assert documented_fields("Session ownership") == list(SessionOwner.model_fields)
