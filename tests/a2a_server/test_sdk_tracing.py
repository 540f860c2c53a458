"""a2a-sdk's tracing wrappers: none left on its server or client when its tracing is off, all there when on.

The SDK reads its switch and applies its decorators as its modules are imported, so each case runs
in a fresh interpreter that imports e2a-grpc's A2A server and a2a backend as ``serve`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.subprocess]  # a fresh interpreter per test

#: Imports e2a-grpc's users of a2a-sdk, then lists every function or method of a loaded a2a-sdk module
#: that is one of ``a2a.utils.telemetry``'s wrappers, and how many functions it looked at.
_FIND_WRAPPERS = """
import inspect, json, sys
import e2a_grpc.backends.a2a
import e2a_grpc.a2a_server.server
import a2a.client.transports.jsonrpc, a2a.client.transports.rest
from a2a.utils import telemetry

def functions():
    for name, module in list(sys.modules.items()):
        if not name.startswith("a2a.") or module is None or module is telemetry:
            continue
        for owner_name, owner in vars(module).items():
            if inspect.isfunction(owner):
                yield f"{name}.{owner_name}", owner
            elif inspect.isclass(owner) and owner.__module__ == name:
                for attribute, value in vars(owner).items():
                    if inspect.isfunction(value):
                        yield f"{name}.{owner_name}.{attribute}", value

def wrapped(function):
    while function is not None:
        code = function.__code__
        if code.co_filename == telemetry.__file__ and code.co_name in ("async_wrapper", "sync_wrapper"):
            return True
        function = getattr(function, "__wrapped__", None)
    return False

seen = dict(functions())
print(json.dumps({"looked_at": len(seen), "wrapped": sorted(name for name, f in seen.items() if wrapped(f))}))
"""


def _wrappers(tracing: str) -> dict[str, object]:
    env = {**os.environ, "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED": tracing}
    done = subprocess.run(
        [sys.executable, "-c", _FIND_WRAPPERS], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("tracing", ["false", "FALSE", "off"])
def test_no_sdk_method_is_wrapped_when_its_tracing_is_off(tracing: str) -> None:
    found = _wrappers(tracing)
    assert found["wrapped"] == []
    assert isinstance(found["looked_at"], int) and found["looked_at"] > 500  # the SDK's server and client


def test_the_sdk_traces_as_it_ships_when_its_tracing_is_on() -> None:
    wrapped = _wrappers("true")["wrapped"]
    assert isinstance(wrapped, list)
    for name in (
        "a2a.server.request_handlers.default_request_handler_v2.DefaultRequestHandlerV2.on_message_send",
        "a2a.server.events.event_queue_v2.EventQueueSource.enqueue_event",
        "a2a.server.tasks.task_manager.append_artifact_to_task",
        "a2a.client.transports.jsonrpc.JsonRpcTransport.send_message",
    ):
        assert name in wrapped
