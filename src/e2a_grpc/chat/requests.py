"""What makes a Chat request usable."""

from __future__ import annotations

from e2a.v1 import agent_service_pb2
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
    if not prompt_text(envelope) and not envelope.params.get("prompt") and not envelope.params.get("content_blocks"):
        raise E2AValueError("envelope.params", "no prompt: give prompt, content_blocks, text, content or query")
    return envelope
