"""Pure parts of the A2A server: output-mode matching, message parts as a prompt, its settings."""

from __future__ import annotations

import pytest
from a2a.types.a2a_pb2 import Message, Part
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from e2a_grpc.a2a_server.executor import prompt_blocks, turn_envelope
from e2a_grpc.a2a_server.handler import accepts_output
from e2a_grpc.errors import E2AValueError
from e2a_grpc.settings import A2A_CARD_PATH, ServerSettings

_TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789+-.", min_size=1, max_size=12)
_MEDIA_TYPE = st.builds(lambda kind, sub: f"{kind}/{sub}", _TOKEN, _TOKEN)


def test_the_card_is_served_at_the_sdks_well_known_path() -> None:
    assert A2A_CARD_PATH == AGENT_CARD_WELL_KNOWN_PATH


@given(offered=st.lists(_MEDIA_TYPE, min_size=1, max_size=4), extra=st.lists(_MEDIA_TYPE, max_size=3))
def test_a_client_accepting_an_offered_type_or_a_wildcard_of_it_is_served(offered: list[str], extra: list[str]) -> None:
    chosen = offered[0]
    kind = chosen.split("/")[0]
    assert accepts_output([*extra, chosen], offered)
    assert accepts_output([*extra, chosen.upper()], offered)
    assert accepts_output([*extra, f"{kind}/*"], offered)
    assert accepts_output(["*/*"], offered)
    assert accepts_output([], offered)


@given(offered=st.lists(_MEDIA_TYPE, min_size=1, max_size=4), accepted=st.lists(_MEDIA_TYPE, min_size=1, max_size=4))
def test_a_client_accepting_nothing_offered_is_refused(offered: list[str], accepted: list[str]) -> None:
    kinds = {mode.split("/")[0] for mode in offered}
    unrelated = [f"x{mode}" for mode in accepted if f"x{mode}".split("/")[0] not in kinds]
    if unrelated:
        assert not accepts_output(unrelated, offered)


@given(texts=st.lists(st.text(min_size=1), min_size=1, max_size=5))
def test_text_parts_become_text_blocks_in_order(texts: list[str]) -> None:
    message = Message(message_id="m", parts=[Part(text=text) for text in texts])
    assert prompt_blocks(message) == [{"type": "text", "text": text} for text in texts]


def test_a_url_part_is_a_resource_link_and_raw_bytes_a_block_by_media_type() -> None:
    message = Message(
        message_id="m",
        parts=[Part(text="see"), Part(url="https://x/y.pdf", filename="y.pdf", media_type="application/pdf")],
    )
    assert prompt_blocks(message)[1] == {
        "type": "resource_link",
        "uri": "https://x/y.pdf",
        "name": "y.pdf",
        "mimeType": "application/pdf",
    }
    raw = [Part(raw=b"\x00", media_type=media_type) for media_type in ("image/png", "audio/wav", "application/pdf")]
    assert [block["type"] for block in prompt_blocks(Message(message_id="m", parts=raw))] == [
        "image",
        "audio",
        "resource",
    ]


def test_a_message_of_empty_text_has_no_prompt() -> None:
    with pytest.raises(E2AValueError, match=r"message\.parts"):
        prompt_blocks(Message(message_id="m", parts=[Part(text="")]))


def test_the_turn_is_the_request_and_the_context_the_session() -> None:
    envelope = turn_envelope(Message(message_id="m1", parts=[Part(text="hi")]), "task-1", "ctx-1", ["text/plain"], None)
    assert (envelope.request_id, envelope.task_id, envelope.context_id, envelope.session_id) == (
        "task-1",
        None,
        "ctx-1",
        "ctx-1",
    )
    assert envelope.message_id == "m1" and envelope.expected_output_modes == ["text/plain"]
    assert envelope.provenance is not None and envelope.provenance.source_protocol == "a2a"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"a2a_grpc_port": 1}, "--a2a-grpc-port needs --a2a-port"),
        ({"a2a_port": 1, "a2a_sqlite_path": "t.db", "a2a_postgres_url": "postgresql+asyncpg://h/d"}, "two task stores"),
        ({"a2a_output_modes": " , "}, "at least one"),
        ({"a2a_skills": ": a description without an id;"}, "at least one"),
        ({"a2a_port": 1, "token": "secret"}, "without TLS or bearer-token auth"),
        ({"a2a_port": 1, "tls_cert": "c.pem", "tls_key": "k.pem"}, "without TLS or bearer-token auth"),
    ],
)
def test_settings_refuse_what_cannot_be_served(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ServerSettings(**fields)  # type: ignore[arg-type]


def test_skills_and_modes_are_parsed_from_their_settings() -> None:
    settings = ServerSettings(a2a_skills="a: first; b", a2a_input_modes="text/plain, image/png")
    assert settings.a2a_skill_entries == (("a", "first"), ("b", "b"))
    assert settings.a2a_input_media_types == ("text/plain", "image/png")
