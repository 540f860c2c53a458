"""The A2A gRPC servicer: the SDK's ``GrpcHandler`` with two corrections of a2a-sdk 1.3.

- The SDK never reads the ``a2a-version`` metadata, so a call naming a version this service does not
  speak was served; here it gets VersionNotSupportedError (``versions.GRPC_VERSIONS``).
- The SDK aborts with FAILED_PRECONDITION where the spec says UNIMPLEMENTED (``errors.SPEC_GRPC_STATUS``);
  here those errors get the spec's status, with the same ``ErrorInfo`` detail the SDK sends, its
  metadata the error's ``data`` (``TaskStoreUnavailableError``: UNAVAILABLE, which the SDK's table lacks).
"""

from __future__ import annotations

import json

import grpc
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import GrpcHandler
from a2a.server.request_handlers.grpc_handler import DefaultGrpcServerCallContextBuilder
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.utils.constants import VERSION_HEADER
from a2a.utils.error_handlers import A2A_DOMAIN
from a2a.utils.errors import A2A_ERROR_REASONS, A2AError
from a2a.utils.grpc_status import status_to_grpc
from google.rpc import error_details_pb2, status_pb2

from e2a_grpc.a2a_server.errors import SPEC_GRPC_STATUS
from e2a_grpc.a2a_server.versions import GRPC_VERSIONS, version_refusal

#: gRPC metadata keys are lower case.
_VERSION_KEY = VERSION_HEADER.lower()


class _VersionCheckingContextBuilder(DefaultGrpcServerCallContextBuilder):
    """The SDK's call context, once the call's ``a2a-version`` is one this service speaks."""

    def build(self, context: grpc.aio.ServicerContext) -> ServerCallContext:  # type: ignore[type-arg]
        version = next((value for key, value in context.invocation_metadata() or () if key == _VERSION_KEY), None)
        refusal = version_refusal(version if isinstance(version, str) else None, GRPC_VERSIONS)
        if refusal is not None:
            raise refusal  # the SDK's handler turns it into the call's status (abort_context)
        return super().build(context)


class FrontDoorGrpcHandler(GrpcHandler):
    """``GrpcHandler`` with the version check and the spec's status codes (see the module's docstring)."""

    def __init__(self, request_handler: RequestHandler) -> None:
        super().__init__(request_handler, context_builder=_VersionCheckingContextBuilder())

    async def abort_context(self, error: A2AError, context: grpc.aio.ServicerContext) -> None:  # type: ignore[type-arg]
        code = SPEC_GRPC_STATUS.get(type(error))
        if code is None:
            await super().abort_context(error, context)
            return
        status = status_pb2.Status(code=code.value[0], message=error.message)
        # ErrorInfo.metadata maps strings to strings: other values as JSON (``true``, numbers).
        metadata = {
            key: value if isinstance(value, str) else json.dumps(value) for key, value in (error.data or {}).items()
        }
        info = error_details_pb2.ErrorInfo(reason=A2A_ERROR_REASONS[type(error)], domain=A2A_DOMAIN, metadata=metadata)
        status.details.add().Pack(info)
        rich = status_to_grpc(status)
        context.set_trailing_metadata((*(context.trailing_metadata() or ()), *rich.trailing_metadata))
        await context.abort(rich.code, rich.details)
