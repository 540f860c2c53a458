"""The one place that maps errors to gRPC status codes (with google.rpc rich error details)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from e2a_grpc.errors import AgentUnavailableError, E2AFieldError, E2AValueError

log = logging.getLogger(__name__)

Servicer = TypeVar("Servicer")
Request = TypeVar("Request")
Reply = TypeVar("Reply")


#: A call that reaches a server whose shutdown no longer takes calls: it was not run, so any client may
#: retry it, on another instance.
SHUTTING_DOWN_CODE = grpc.StatusCode.UNAVAILABLE
SHUTTING_DOWN_MESSAGE = "the server is shutting down; retry on another instance"


def invalid_argument(errors: list[E2AFieldError]) -> grpc.Status:
    """INVALID_ARGUMENT naming each bad field, with google.rpc.BadRequest field violations."""
    bad_request = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=error.field, description=error.problem)
            for error in errors
        ]
    )
    detail = any_pb2.Any()
    detail.Pack(bad_request)
    message = "; ".join(str(error) for error in errors)
    return rpc_status.to_status(status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=message, details=[detail]))


def undecodable_request(message_type: str, error: DecodeError) -> grpc.Status:
    """INVALID_ARGUMENT for request bytes that do not parse as the RPC's request message."""
    problem = f"the request is not a valid {message_type} protobuf message ({error})"
    return invalid_argument([E2AValueError("$", problem)])


def status_for(exc: BaseException) -> grpc.Status:
    """The gRPC status for an exception raised while handling a call."""
    if isinstance(exc, E2AFieldError):
        return invalid_argument([exc])
    if isinstance(exc, AgentUnavailableError):
        return rpc_status.to_status(status_pb2.Status(code=code_pb2.UNAVAILABLE, message=str(exc)))
    # Anything else is our bug, not the caller's: INTERNAL (never UNKNOWN), details stay in the log.
    return rpc_status.to_status(
        status_pb2.Status(code=code_pb2.INTERNAL, message=f"internal error ({type(exc).__name__}); see server log")
    )


def unary(
    handler: Callable[[Servicer, Request], Reply],
) -> Callable[[Servicer, Request, grpc.aio.ServicerContext[Request, Reply]], Awaitable[Reply]]:
    """Wrap a pure ``(servicer, request) -> reply`` function as an aio unary handler with error mapping."""

    @functools.wraps(handler)
    async def call(self: Servicer, request: Request, context: grpc.aio.ServicerContext[Request, Reply]) -> Reply:
        try:
            return handler(self, request)
        except E2AFieldError as exc:
            await context.abort_with_status(status_for(exc))
        except Exception as exc:
            log.exception("unhandled error in %s", handler.__qualname__)
            await context.abort_with_status(status_for(exc))
        raise AssertionError("unreachable: abort_with_status raises")

    return call
