"""Reading a waiting frame's question and turning what a person types into the answer's params."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from e2a_grpc.client.questions import Question, ask
from e2a_grpc.model import E2AResponse

OPTIONS = [
    {"option_id": "allow", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "deny", "name": "Reject", "kind": "reject_once"},
]


def question(options: list[dict[str, Any]] | None = None) -> Question:
    body: dict[str, Any] = {"reason": "permission" if options else "input", "message": "?", "result": {}}
    if options is not None:
        body["options"] = options
    waiting = E2AResponse.from_dict({
        "request_id": "r1",
        "response_kind": "e2a.input_required",
        "status": "in_progress",
        "is_final": True,
        "task_id": "t1",
        "session_id": "s1",
        "context_id": "c1",
        "body": body,
    })  # fmt: skip
    parsed = Question.of(waiting)
    assert parsed is not None
    return parsed


def test_the_answer_goes_to_the_frames_task_session_and_context() -> None:
    parsed = question(OPTIONS)
    assert (parsed.task_id, parsed.session_id, parsed.context_id) == ("t1", "s1", "c1")
    assert Question.of(E2AResponse.from_dict({"request_id": "r", "response_kind": "e2a.complete"})) is None


@pytest.mark.parametrize(
    ("typed", "params"),
    [
        ("1", {"option_id": "allow", "text": "allow"}),
        (" 2 ", {"option_id": "deny", "text": "deny"}),
        ("deny", {"option_id": "deny", "text": "deny"}),
        ("allow once", {"option_id": "allow", "text": "allow"}),  # a name, in any case
        ("Cancel", {"cancel": True, "text": "cancel"}),
        ("3", None),  # no third option
        ("0", None),
        ("maybe", None),
        ("  ", None),
    ],
)
def test_a_choice_is_a_number_an_id_a_name_or_cancel(typed: str, params: dict[str, Any] | None) -> None:
    assert question(OPTIONS).answer_params(typed) == params


def test_a_question_without_options_takes_the_text_as_it_is_typed() -> None:
    assert question().answer_params(" Ada ") == {"text": " Ada "}
    assert question().answer_params("cancel") == {"text": "cancel"}  # no options: a word like any other
    assert question().answer_params("") is None
    assert question().prompt == "answer: "
    assert question(OPTIONS).prompt == "answer (1-2, an option's id or name, or cancel): "


def test_ask_reads_until_a_line_answers() -> None:
    typed: Iterator[str] = iter(["", "maybe", "Reject"])
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(typed)

    err = io.StringIO()
    assert ask(question(OPTIONS), read, err) == {"option_id": "deny", "text": "deny"}
    assert len(prompts) == 3 and err.getvalue() == "'maybe' is none of the options\n"  # a blank line asks again
