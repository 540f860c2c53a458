"""The A2A HTTP port's liveness and readiness endpoints, for load balancers and orchestrators.

An ASGI middleware outside every other one: it answers ``GET`` (or ``HEAD``) ``LIVENESS_PATH`` and
``READINESS_PATH`` itself, so neither depends on the A2A checks (version, media type, body limits)
nor costs more than a look at ``Readiness``:

- ``/livez``: 200 whenever it answers at all: the process runs and its event loop serves (the loop
  that runs every call), whatever its dependencies say;
- ``/readyz``: 200 while the server as a whole is ready, 503 while a dependency is not or the server
  drains (SIGTERM); ``?service=NAME`` asks about one service by its gRPC health name instead (404 for a
  name not served). The JSON body says which: ``{"ready": ..., "draining": ..., "dependencies":
  {NAME: ready, ...}}`` (and ``"service"`` when one was asked). No reasons: this port has no auth, and
  the log has them.

Responses are never cached (``Cache-Control: no-store``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from e2a_grpc.grpc.readiness import WHOLE_SERVER, Readiness
from e2a_grpc.settings import LIVENESS_PATH, READINESS_PATH

OK = 200
NOT_FOUND = 404
METHOD_NOT_ALLOWED = 405
SERVICE_UNAVAILABLE = 503
_METHODS = ("GET", "HEAD")
_NO_STORE = {"Cache-Control": "no-store"}


class ProbeEndpoints:
    """``/livez`` and ``/readyz`` of the module's docstring, in front of ``app``."""

    def __init__(self, app: ASGIApp, *, readiness: Readiness) -> None:
        self.app = app
        self._readiness = readiness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path not in (LIVENESS_PATH, READINESS_PATH):
            await self.app(scope, receive, send)
            return
        if scope["method"] not in _METHODS:
            response: Response = JSONResponse(
                {"error": f"{path} answers {' and '.join(_METHODS)} only"},
                METHOD_NOT_ALLOWED,
                headers={**_NO_STORE, "Allow": ", ".join(_METHODS)},
            )
        elif path == LIVENESS_PATH:
            response = JSONResponse({"alive": True}, OK, headers=_NO_STORE)
        else:
            response = self._readiness_response(scope)
        await response(scope, receive, send)

    def _readiness_response(self, scope: Scope) -> Response:
        readiness = self._readiness
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        service = query.get("service", [WHOLE_SERVER])[-1]
        if service not in readiness.services:
            served = ", ".join(name for name in readiness.services if name != WHOLE_SERVER)
            return JSONResponse(
                {"error": f"no service {service!r} is served here; served: {served}"}, NOT_FOUND, headers=_NO_STORE
            )
        ready = readiness.ready(service)
        body: dict[str, Any] = {
            "ready": ready,
            "draining": readiness.draining,
            "dependencies": {
                dependency.value: readiness.dependency_ready(dependency) for dependency in readiness.dependencies
            },
        }
        if service != WHOLE_SERVER:
            body["service"] = service
        return JSONResponse(body, OK if ready else SERVICE_UNAVAILABLE, headers=_NO_STORE)
