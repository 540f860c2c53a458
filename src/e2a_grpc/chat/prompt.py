"""A request's prompt as every part of a Chat turn sees it: read once per call, by the one rule.

What the prompt is (which key of ``params`` holds it) is ``protocols.acp.prompt_source``, the rule
the ACP call (``merge_params_to_acp_prompt``) follows, so a prompt that ACP would not send is refused
before any backend runs, and every backend answers the same prompt: its content blocks (ACP's, an
A2A part each), their text (the echo backend's answer, a permission answer) and their size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from e2a_grpc import jsontext
from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name
from e2a_grpc.model import E2AEnvelope
from e2a_grpc.protocols import acp


@dataclass(frozen=True, slots=True)
class Prompt:
    """The prompt of one request."""

    #: The key of ``params`` it came from (``prompt``, ``content_blocks``, ``text``, ...; ``None``: none).
    key: str | None
    #: Its ACP content blocks (``session/prompt``'s ``prompt``); empty when the request has none (an
    #: answer to a waiting question by ``params.option_id`` needs none).
    blocks: list[dict[str, Any]]
    #: The text of its text blocks, in order.
    text: str
    #: The bytes of its content blocks as an ACP agent is sent them: compact JSON text in UTF-8, as
    #: the ACP backend writes it (``jsontext``, camelCase keys), what ``chat_max_prompt_bytes`` bounds.
    size_bytes: int


#: The prompt of a request that has none.
NO_PROMPT = Prompt(None, [], "", 0)


def read_prompt(envelope: E2AEnvelope) -> Prompt:
    """The envelope's prompt, or an ``E2AFieldError`` naming the ``params`` key that holds one ACP
    would not send: a text that is not a string, a ``prompt`` that is no list of content blocks, a
    block that is no object with a string ``type``."""
    source = acp.prompt_source(envelope.params)
    if source is None:
        return NO_PROMPT
    key, value = source
    field = f"params.{key}"
    blocks = acp.prompt_of(key, value)
    if blocks is None:
        raise E2ATypeError(
            field,
            f"the prompt's text must be a string, got {type_name(value)} (the first of "
            f"{', '.join(acp.PROMPT_TEXT_KEYS)} that is set is the prompt)",
        )
    if not isinstance(blocks, list):
        raise E2ATypeError(field, f"expected a list of content blocks, got {type_name(blocks)}")
    if not blocks:
        raise E2AValueError(field, "the prompt has no content blocks")
    wire = acp.wire_prompt(blocks, field)
    text = "".join(
        block["text"] for block in blocks if block.get("type") == "text" and isinstance(block.get("text"), str)
    )
    return Prompt(key, blocks, text, len(jsontext.dumps(wire, field).encode()))
