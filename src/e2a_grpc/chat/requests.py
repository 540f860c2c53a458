"""What makes a Chat request usable."""

from __future__ import annotations

import json

from e2a.v1 import agent_service_pb2
from e2a_grpc.chat.answers import names_an_option
from e2a_grpc.chat.events import prompt_text
from e2a_grpc.errors import E2AFieldError, E2AValueError
from e2a_grpc.model import E2AEnvelope

#: Methods Chat accepts by default (spec section 2: a gateway chat and the ACP prompt).
DEFAULT_CHAT_METHODS = ("chat.send", "session/prompt")


def validate_chat_request(request: agent_service_pb2.ChatRequest, methods: tuple[str, ...]) -> E2AEnvelope:
    """The request's envelope, or an E2AFieldError naming what makes it unusable."""
    if not request.HasField("envelope"):
        raise E2AValueError("envelope", "is required")
    try:
        envelope = E2AEnvelope.from_proto(request.envelope)
    except E2AFieldError as exc:
        raise exc.under("envelope") from None
    if envelope.method not in methods:
        raise E2AValueError("envelope.method", f"Chat takes one of {', '.join(methods)}, got {envelope.method!r}")
    if (
        not prompt_text(envelope)
        and not envelope.params.get("prompt")
        and not envelope.params.get("content_blocks")
        and not names_an_option(envelope)
    ):
        raise E2AValueError(
            "envelope.params",
            "no prompt: give prompt, content_blocks, text, content or query (or, with task_id, option_id or cancel)",
        )
    return envelope


def prompt_size_bytes(envelope: E2AEnvelope) -> int:
    """How big the prompt is as an agent gets it: its content blocks (``prompt`` / ``content_blocks``)
    as compact JSON, as the ACP backend sends them, else the UTF-8 bytes of its text."""
    params = envelope.params
    for key in ("prompt", "content_blocks"):
        blocks = params.get(key)
        if isinstance(blocks, list) and blocks:
            # ensure_ascii=False: a non-ASCII character counts its UTF-8 bytes, not a 6-byte escape.
            encoded = json.dumps(blocks, ensure_ascii=False, separators=(",", ":"))
            return len(encoded.encode("utf-8", "surrogatepass"))
    return len(prompt_text(envelope).encode("utf-8", "surrogatepass"))
