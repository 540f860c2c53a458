"""What makes a Chat request usable."""

from __future__ import annotations

from e2a.v1 import agent_service_pb2
from e2a_grpc.chat.answers import names_an_option
from e2a_grpc.chat.prompt import Prompt, read_prompt
from e2a_grpc.errors import E2AFieldError, E2AValueError
from e2a_grpc.model import E2AEnvelope

#: Methods Chat accepts by default (spec section 2: a gateway chat and the ACP prompt).
DEFAULT_CHAT_METHODS = ("chat.send", "session/prompt")


def validate_chat_request(
    request: agent_service_pb2.ChatRequest, methods: tuple[str, ...]
) -> tuple[E2AEnvelope, Prompt]:
    """The request's envelope and its prompt (read once for the whole call), or an E2AFieldError
    naming what makes it unusable."""
    if not request.HasField("envelope"):
        raise E2AValueError("envelope", "is required")
    try:
        envelope = E2AEnvelope.from_proto(request.envelope)
        return envelope, checked_prompt(envelope, methods)
    except E2AFieldError as exc:
        raise exc.under("envelope") from None


def checked_prompt(envelope: E2AEnvelope, methods: tuple[str, ...]) -> Prompt:
    """The prompt of an envelope Chat can run (a method of ``methods``, a prompt or an answer), or an
    E2AFieldError naming what makes it unusable (an agent worker reads envelopes off the bus)."""
    if envelope.method not in methods:
        raise E2AValueError("method", f"Chat takes one of {', '.join(methods)}, got {envelope.method!r}")
    prompt = read_prompt(envelope)
    if not prompt.blocks and not names_an_option(envelope):
        raise E2AValueError(
            "params",
            "no prompt: give prompt, content_blocks, text, content or query (or, with task_id, option_id or cancel)",
        )
    return prompt
