"""The client's answer to an ``e2a.input_required`` question with options (a permission request).

One rule, read from the answering request's envelope (docs/wire-json.md, section 8), whichever
protocol the answer came in:

1. ``params.option_id``: the chosen option's id; ``params.cancel`` true: no option, the question is
   withdrawn (ACP's ``cancelled`` outcome).
2. Else a data part of the prompt (``chat.prompt``; an A2A client's structured answer: a ``text`` block
   that was an A2A data part, ``protocols.parts``) holding ``{"option_id": ...}`` or ``{"cancel": true}``.
3. Else the prompt's text: an option's id or name (case and surrounding blanks ignored), or ``cancel``.

Anything else names no option: ``None``, which the backend answers with ``invalid_answer`` while the
question stays open.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from e2a_grpc import jsontext
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope
from e2a_grpc.protocols import parts

#: The word that withdraws a question instead of choosing an option.
CANCEL_WORD = "cancel"


@dataclass(frozen=True)
class Answer:
    """What the client chose: an option's id, or ``None`` when it withdrew the question."""

    option_id: str | None

    @property
    def cancelled(self) -> bool:
        return self.option_id is None


def answer_of(envelope: E2AEnvelope, prompt: Prompt, options: Sequence[Mapping[str, Any]]) -> Answer | None:
    """The answer ``envelope`` (whose prompt is ``prompt``) gives to a question offering ``options``
    (each with ``option_id`` and ``name``), or ``None`` when it names none of them."""
    ids = {option["option_id"] for option in options}
    structured = _structured(envelope.params) or _data_part(prompt)
    if structured is not None:
        if structured.get("cancel") is True:
            return Answer(None)
        chosen = structured.get("option_id")
        return Answer(chosen) if isinstance(chosen, str) and chosen in ids else None
    text = prompt.text.strip().casefold()
    if text == CANCEL_WORD:
        return Answer(None)
    for option in options:
        if text in (str(option["option_id"]).casefold(), str(option.get("name", "")).strip().casefold()):
            return Answer(option["option_id"])
    return None


def names_an_option(envelope: E2AEnvelope) -> bool:
    """The request answers a waiting question with ``params.option_id`` or ``params.cancel`` (rule 1):
    it needs no prompt of its own."""
    return envelope.task_id is not None and _structured(envelope.params) is not None


def _structured(params: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return params if "option_id" in params or "cancel" in params else None


def _data_part(prompt: Prompt) -> Mapping[str, Any] | None:
    """The first data part of the prompt that holds an answer."""
    for index, block in enumerate(prompt.blocks):
        if block.get("type") != "text":
            continue
        meta = block.get("_meta")
        extra = meta.get(parts.META_KEY) if isinstance(meta, dict) else None
        if not (isinstance(extra, dict) and extra.get("part") == parts.DATA_PART):
            continue
        try:
            value = jsontext.loads(block.get("text", ""), f"prompt[{index}].text")
        except E2AFieldError:
            continue
        if isinstance(value, dict) and _structured(value) is not None:
            return value
    return None
