"""Frames from another E2A service turned back into the backend events they were made of.

A route that reaches an agent through another E2A service (an upstream ``AgentService``, a worker on
the bus) receives that service's ``E2AResponse`` frames for one request. The gateway does not forward
them as they are: its own ``FrameBuilder`` writes the frames of its caller's request (the gateway's ids,
sequence and timestamps, its limits), so the upstream's frames are read back into ``Delta``,
``Passthrough``, ``Complete``, ``InputRequired`` and ``AgentIds`` events and run through the same turn
as a local backend's. The content survives; ids, timestamps and provenance are the gateway's.

Each frame is checked with the section 12 invariants (``StreamChecker``) before it becomes an event: a
stream that breaks one, or that ends without a final frame, raises ``BackendError`` naming the upstream
(``origin``) and what broke, so the caller's stream still ends with one final ``e2a.error`` frame.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from enum import StrEnum
from typing import Any, TypeVar

from e2a_grpc.chat.events import AgentIds, BackendError, Complete, Delta, Event, InputRequired, Passthrough
from e2a_grpc.chat.invariants import AGENT_ID_FIELDS, StreamChecker, StreamInvariantError
from e2a_grpc.model import DeltaKind, E2AEnvelope, E2AResponse, ErrorCode, ResponseKind, WaitReason

#: ``details`` key of the ``e2a.error`` a broken upstream stream ends with: which service broke it.
UPSTREAM_DETAIL = "upstream"

_Value = TypeVar("_Value")
_Member = TypeVar("_Member", bound=StrEnum)


class _BadFrame(Exception):
    """A frame that keeps the invariants but whose body no event can be made of."""


async def relay_frames(
    frames: AsyncIterable[E2AResponse], envelope: E2AEnvelope, origin: str
) -> AsyncGenerator[Event, None]:
    """The events of one request's frames (``envelope``: the request as sent to ``origin``), ending
    after the final frame: ``Complete`` or ``InputRequired``, or ``BackendError`` for an ``e2a.error``.

    ``origin`` names the other service in errors (``grpc://host:port``, ``nats agent X``). The caller
    closes ``frames`` once this generator is closed.
    """
    checker = StreamChecker(envelope)
    adopted = {name: getattr(envelope, name) is not None for name in AGENT_ID_FIELDS}
    async for frame in frames:
        try:
            checker.check(frame)
        except StreamInvariantError as exc:
            raise _broken(origin, f"its stream broke an E2A invariant (spec section 12): {exc}") from None
        agent_ids = _new_agent_ids(frame, adopted)
        if agent_ids is not None:
            yield agent_ids
        try:
            event = _event(frame)
        except _BadFrame as exc:
            raise _broken(origin, f"frame {frame.sequence} ({frame.response_kind}): {exc}") from None
        yield event
        if frame.is_final:
            return
    try:
        checker.finish()
    except StreamInvariantError as exc:
        raise BackendError(
            ErrorCode.BACKEND_INCOMPLETE, f"{origin}: {exc}", {UPSTREAM_DETAIL: origin, "problem": str(exc)}
        ) from None


def _broken(origin: str, problem: str) -> BackendError:
    return BackendError(
        ErrorCode.BACKEND_INVALID_OUTPUT, f"{origin}: {problem}", {UPSTREAM_DETAIL: origin, "problem": problem}
    )


def _new_agent_ids(frame: E2AResponse, adopted: dict[str, bool]) -> AgentIds | None:
    """The agent's ids the first time a frame carries one the request left unset (``StreamChecker``
    already holds the upstream to keeping it on every later frame)."""
    named: dict[str, str | None] = {}
    for name, done in adopted.items():
        value = getattr(frame, name)
        if not done and value:
            adopted[name] = True
            named[name] = value
    if not named:
        return None
    return AgentIds(named.get("task_id"), named.get("context_id"))


def _event(frame: E2AResponse) -> Event:
    """The event a frame was made of; raises the upstream agent's ``BackendError`` for an ``e2a.error``."""
    body = frame.body
    kind = frame.response_kind
    if kind == ResponseKind.E2A_CHUNK:
        delta_kind = _member(DeltaKind, _field(body, "delta_kind", str), "delta_kind")
        if "delta" not in body:
            raise _BadFrame("the body has no delta")
        mime_type = _optional(body, "mime_type", str)
        return Delta(delta_kind, body["delta"], mime_type)
    if kind == ResponseKind.E2A_COMPLETE:
        return Complete(_field(body, "result", dict))
    if kind == ResponseKind.E2A_INPUT_REQUIRED:
        options = _optional(body, "options", list) or []
        if not all(isinstance(option, dict) for option in options):
            raise _BadFrame("body.options must be a list of objects")
        return InputRequired(
            reason=_member(WaitReason, _field(body, "reason", str), "reason"),
            message=_field(body, "message", str),
            result=_field(body, "result", dict),
            request=_optional(body, "request", dict),
            options=tuple(options),
        )
    if kind == ResponseKind.E2A_ERROR:
        raise _upstream_error(body)
    if frame.is_final:
        # A final frame of another kind keeps the invariants, but no event of a turn ends that way.
        raise _BadFrame("a final frame must be e2a.complete, e2a.input_required or e2a.error to be relayed")
    return Passthrough(kind, body)


def _upstream_error(body: dict[str, Any]) -> BackendError:
    """The upstream agent's own error, as it said it: its code may be one this version does not know."""
    code = body.get("code")
    if isinstance(code, bool) or not isinstance(code, str | int):
        raise _BadFrame(f"body.code must be a string or an integer, not {code!r:.80}")
    return BackendError(
        code,
        _field(body, "message", str),
        _field(body, "details", dict),
        _optional(body, "external", dict),
    )


def _field(body: dict[str, Any], name: str, kind: type[_Value]) -> _Value:
    value = body.get(name)
    if not isinstance(value, kind):
        raise _BadFrame(f"body.{name} must be {_KIND_NAMES[kind]}, not {value!r:.80}")
    return value


def _optional(body: dict[str, Any], name: str, kind: type[_Value]) -> _Value | None:
    return None if body.get(name) is None else _field(body, name, kind)


def _member(enum: type[_Member], value: str, name: str) -> _Member:
    try:
        return enum(value)
    except ValueError:
        known = ", ".join(member.value for member in enum)
        raise _BadFrame(f"body.{name} {value!r:.80} is none of {known}") from None


_KIND_NAMES: dict[type, str] = {str: "a string", dict: "an object", list: "an array"}
