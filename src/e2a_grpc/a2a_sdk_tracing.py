"""a2a-sdk's tracing decorators, made to wrap nothing when its tracing is off.

a2a-sdk 1.3 decorates its request handler, event queues, JSON-RPC/REST dispatchers, task manager and
client transports with ``a2a.utils.telemetry.trace_function`` / ``trace_class``. With its tracing off
(``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED`` not ``true``, as ``e2a-grpc serve`` sets it without
``--tracing``) the decorators still wrap every method: each call then goes through a wrapper that logs
at DEBUG and opens, ends and sets the status of a span on a no-op object, and an async one adds a
coroutine. That wrapping cost a plain a2a-sdk agent 27 % of its CPU per blocking send (callgrind:
22.8 M against 16.6 M instructions; BENCHMARKS.md, "A2A front door and proxy"), with nothing traced.

``untrace_when_off`` replaces the two decorators, while the SDK's own switch says tracing is off, with
ones that return what they decorate as it is. The SDK applies them as its modules are imported, so
this runs before any of them is: first in the modules of e2a-grpc that import a2a-sdk's server or
client. With tracing on (``--tracing``) the SDK's decorators stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from a2a.utils import telemetry

_Decorated = TypeVar("_Decorated")


def _untraced_function(func: Any = None, **_options: Any) -> Any:
    """``trace_function`` that wraps nothing: ``@trace_function`` and ``@trace_function(...)`` alike."""
    if func is None:
        return _unchanged
    return func


def _untraced_class(*_args: Any, **_options: Any) -> Callable[[_Decorated], _Decorated]:
    """``trace_class(...)`` that wraps no method."""
    return _unchanged


def _unchanged(decorated: _Decorated) -> _Decorated:
    return decorated


def sdk_tracing_on() -> bool:
    """Whether a2a-sdk traces (its own reading of its switch, made when it was first imported)."""
    return bool(telemetry.otel_installed and telemetry.otel_enabled)


def untrace_when_off() -> None:
    """With a2a-sdk's tracing off, make its tracing decorators wrap nothing (see the module docstring)."""
    if not sdk_tracing_on():
        telemetry.trace_function = _untraced_function
        telemetry.trace_class = _untraced_class
