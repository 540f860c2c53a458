"""A call's outcome as a comparable value, for tests that hold two paths to the same behaviour."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from e2a_grpc import E2AFieldError


def outcome(action: Callable[[], Any]) -> Any:
    """What ``action`` returns, or the error it raises (type, field, problem)."""
    try:
        return action()
    except E2AFieldError as exc:
        return (type(exc), exc.field, exc.problem)
