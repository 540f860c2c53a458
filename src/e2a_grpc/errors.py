"""Exceptions that name the E2A field at fault.

They subclass the built-in ``ValueError`` / ``TypeError`` so callers that already catch those keep
working; ``field`` is a dotted path (``params``, ``auth.extra_headers``) that the gRPC layer turns
into ``google.rpc.BadRequest`` field violations.
"""

from __future__ import annotations

#: Longest field path and problem text an error keeps. Both may quote the request (a key of a free-form
#: object, a value); errors travel in status trailers, and megabytes of them would hide the error
#: itself (clients reject oversized trailers with RESOURCE_EXHAUSTED).
MAX_FIELD_CHARS = 200
MAX_PROBLEM_CHARS = 400


def shortened(text: str, limit: int) -> str:
    """``text`` if it fits ``limit``, else its start and how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


class E2AFieldError(Exception):
    """Base for errors about one field of an E2A document."""

    def __init__(self, field: str, problem: str) -> None:
        field, problem = shortened(field, MAX_FIELD_CHARS), shortened(problem, MAX_PROBLEM_CHARS)
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def under(self, prefix: str) -> E2AFieldError:
        """The same error with its field path placed under ``prefix`` (e.g. the RPC request field)."""
        field = self.field if self.field != "$" else ""
        path = f"{prefix}.{field}" if field and not field.startswith("[") else f"{prefix}{field}"
        return type(self)(path, self.problem)


class E2AValueError(E2AFieldError, ValueError):
    """A field has the right type but a value E2A does not allow."""


class E2ATypeError(E2AFieldError, TypeError):
    """A field has a JSON type E2A does not allow there."""


def type_name(value: object) -> str:
    """The JSON name of a Python value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class AgentUnavailableError(Exception):
    """No worker of a routed agent can take the request now (none is live, or none took it in time):
    the call ends with UNAVAILABLE, before any frame, so a client may retry it."""

    def __init__(self, agent_id: str, reason: str) -> None:
        super().__init__(f"agent {agent_id!r} is unavailable: {reason}")
        self.agent_id = agent_id
        self.reason = reason
