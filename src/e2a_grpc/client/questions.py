"""A question a waiting turn asks (its final ``e2a.input_required`` frame), as a client answers it.

The frame (docs/wire-json.md, section 8) carries the question for a person (``body.message``), maybe
options to choose from, and the ids the answer must name: the answer is a new Chat call with the
frame's ``task_id`` and its ``session_id`` / ``context_id``. What a person types becomes the answer's
``params`` here: a number from the list printed, or what the server's own rule reads
(``chat.answers``: an option's id or name, or ``cancel``); for a question without options (input,
auth), the text itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from e2a_grpc.chat.answers import CANCEL_WORD, answer_of
from e2a_grpc.chat.prompt import read_prompt
from e2a_grpc.model import E2AEnvelope, E2AResponse, ResponseKind


@dataclass(frozen=True)
class Question:
    """What the agent asks, and where its answer goes."""

    reason: str
    message: str
    #: ``{"option_id", "name", "kind"}`` each; empty when the answer is free text.
    options: tuple[dict[str, Any], ...]
    task_id: str | None
    session_id: str | None
    context_id: str | None

    @classmethod
    def of(cls, frame: E2AResponse | None) -> Question | None:
        """The question of a waiting frame; ``None`` for any other frame."""
        if frame is None or frame.response_kind != ResponseKind.E2A_INPUT_REQUIRED:
            return None
        body = frame.body if isinstance(frame.body, dict) else {}
        listed = body.get("options")
        options = tuple(
            option
            for option in (listed if isinstance(listed, list) else ())
            if isinstance(option, dict) and isinstance(option.get("option_id"), str)
        )
        return cls(
            reason=str(body.get("reason", "")),
            message=str(body.get("message", "")),
            options=options,
            task_id=frame.task_id,
            session_id=frame.session_id,
            context_id=frame.context_id,
        )

    def lines(self) -> list[str]:
        """The question, then its options numbered from 1, with their names and kinds."""
        lines = [f"[{self.reason}] {self.message}"]
        for number, option in enumerate(self.options, 1):
            name = option.get("name") or option["option_id"]
            kind = option.get("kind")
            lines.append(f"  {number}. {name} ({kind})" if kind else f"  {number}. {name}")
        return lines

    @property
    def prompt(self) -> str:
        """What the terminal shows where the answer is typed."""
        if not self.options:
            return "answer: "
        return f"answer (1-{len(self.options)}, an option's id or name, or {CANCEL_WORD}): "

    def answer_params(self, typed: str) -> dict[str, Any] | None:
        """The answer's ``params`` for what a person typed; ``None`` when it names no option (or is blank).

        A choice names its option in ``params.option_id`` (and as the text, for an agent that reads
        only text); ``cancel`` withdraws the question (``params.cancel``).
        """
        if not typed.strip():
            return None
        if not self.options:
            return {"text": typed}
        stripped = typed.strip()
        if stripped.isdecimal() and 1 <= int(stripped) <= len(self.options):
            chosen: str | None = self.options[int(stripped) - 1]["option_id"]
        else:
            typed_answer = E2AEnvelope(params={"text": typed})
            answer = answer_of(typed_answer, read_prompt(typed_answer), self.options)
            if answer is None:
                return None
            chosen = answer.option_id
        if chosen is None:
            return {"cancel": True, "text": CANCEL_WORD}
        return {"option_id": chosen, "text": chosen}


def ask(question: Question, read: Callable[[str], str], err: TextIO) -> dict[str, Any]:
    """Read answers with ``read`` (``terminal_input.read_line``) until one answers ``question``; its ``params``.

    ``EOFError`` and ``KeyboardInterrupt`` from ``read`` pass through: the question stays unanswered.
    """
    while True:
        typed = read(question.prompt)
        params = question.answer_params(typed)
        if params is not None:
            return params
        if typed.strip():
            err.write(f"{typed.strip()!r} is none of the options\n")
            err.flush()
