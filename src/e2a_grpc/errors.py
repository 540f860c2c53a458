"""Exceptions that name the E2A field at fault, and how any exception is told in a message.

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


def error_text(exc: BaseException) -> str:
    """What a log line or an error message says of ``exc``: its type, and its message when it has one
    (a timeout's, and many a driver's, is empty; ``exc or ...`` would not catch that, as every
    exception is truthy)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


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


class UnknownAgentError(LookupError):
    """A request names an agent the server's routing table does not have (gRPC NOT_FOUND)."""

    def __init__(self, agent_id: str, known: tuple[str, ...]) -> None:
        shown = shortened(agent_id, MAX_FIELD_CHARS)
        super().__init__(f"no agent {shown!r} here; the agents are: {', '.join(known)}")
        self.agent_id = shown
        self.known = known


#: ``google.rpc.ErrorInfo.reason`` of the NOT_FOUND a cancel of a task that does not wait gets: how a
#: caller (the ``grpc://`` route) tells it from an unknown agent's NOT_FOUND.
NO_WAITING_TASK_REASON = "NO_WAITING_TASK"


class NoWaitingTaskError(LookupError):
    """A cancel names a task of an agent that does not wait there (gRPC NOT_FOUND): it was answered,
    timed out, ended, or never was."""

    def __init__(self, agent_id: str | None, task_id: str) -> None:
        #: ``""``: the server's default agent (a cancel that named none).
        self.agent_id = "" if agent_id is None else shortened(agent_id, MAX_FIELD_CHARS)
        self.task_id = shortened(task_id, MAX_FIELD_CHARS)
        agent = f"agent {self.agent_id!r}" if agent_id is not None else "the default agent"
        super().__init__(
            f"no task {self.task_id!r} of {agent} waits for its client (answered, timed out, ended, or never was)"
        )


class AgentUnavailableError(Exception):
    """The agent a request routes to cannot take it now (gRPC UNAVAILABLE: the same request may succeed
    later). Raised before the turn's first frame it ends the call with that status; after one, the turn's
    final ``e2a.error`` frame (``agent_unavailable``) says it instead (``chat.turn``)."""

    def __init__(self, agent_id: str, reason: str) -> None:
        super().__init__(f"agent {agent_id!r} is unavailable: {reason}")
        self.agent_id = agent_id
        self.reason = reason
