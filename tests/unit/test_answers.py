"""The client's answer to a waiting question with options (``chat.answers``), in each form it can take."""

from __future__ import annotations

from typing import Any

import pytest

from e2a_grpc.chat.answers import Answer, answer_of
from e2a_grpc.chat.prompt import read_prompt
from e2a_grpc.model import E2AEnvelope
from e2a_grpc.protocols import parts

OPTIONS = [
    {"option_id": "allow-1", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "reject-1", "name": "Reject", "kind": "reject_once"},
]


def _answer(params: dict[str, Any]) -> Answer | None:
    envelope = E2AEnvelope(method="chat.send", params=params)
    return answer_of(envelope, read_prompt(envelope), OPTIONS)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"option_id": "allow-1"}, Answer("allow-1")),
        ({"option_id": "nope"}, None),
        ({"option_id": 3}, None),
        ({"cancel": True}, Answer(None)),
        ({"cancel": "yes"}, None),
        ({"text": " Allow Once "}, Answer("allow-1")),
        ({"text": "reject-1"}, Answer("reject-1")),
        ({"text": "CANCEL"}, Answer(None)),
        ({"text": "maybe"}, None),
        ({"content_blocks": [{"type": "text", "text": "Reject"}]}, Answer("reject-1")),
        ({}, None),
    ],
)
def test_each_form_of_an_answer(params: dict[str, Any], expected: Answer | None) -> None:
    assert _answer(params) == expected


def test_an_a2a_data_part_is_a_structured_answer() -> None:
    data = parts.acp_block({"data": {"option_id": "reject-1"}}, "part")
    text = parts.acp_block({"text": "I pick this one"}, "part")
    assert _answer({"content_blocks": [text, data]}) == Answer("reject-1")
    withdrawn = parts.acp_block({"data": {"cancel": True}}, "part")
    assert _answer({"content_blocks": [withdrawn]}) == Answer(None)
    # A data part that is not an answer leaves the text to decide.
    other = parts.acp_block({"data": {"note": 1}}, "part")
    assert _answer({"content_blocks": [other, parts.acp_block({"text": "allow-1"}, "part")]}) is None
    assert Answer(None).cancelled and not Answer("x").cancelled
