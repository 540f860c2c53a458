"""The one place that maps errors to gRPC status codes (with google.rpc rich error details)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from e2a_grpc.chat.events import BackendError
from e2a_grpc.errors import (
    NO_WAITING_TASK_REASON,
    AgentUnavailableError,
    E2AFieldError,
    E2AValueError,
    NoWaitingTaskError,
    UnknownAgentError,
)
from e2a_grpc.model import ErrorCode

log = logging.getLogger(__name__)

Servicer = TypeVar("Servicer")
Request = TypeVar("Request")
Reply = TypeVar("Reply")


#: ``google.rpc.ErrorInfo.domain`` of this server's errors.
ERROR_DOMAIN = "e2a-grpc"
#: ``google.rpc.ErrorInfo.reason`` of a request for an agent the routing table does not have.
UNKNOWN_AGENT_REASON = "UNKNOWN_AGENT"
#: ``google.rpc.ErrorInfo.reason`` of a request whose agent cannot take it now.
AGENT_UNAVAILABLE_REASON = "AGENT_UNAVAILABLE"
#: ``google.rpc.ErrorInfo.reason`` of an agent that failed to do what was asked (a ``BackendError``
#: outside a Chat stream, whose final frame says it there); its metadata's ``code`` is the E2A error code.
AGENT_ERROR_REASON = "AGENT_ERROR"
#: ``google.rpc.ResourceInfo.resource_type`` of an agent, and of an agent's task.
AGENT_RESOURCE_TYPE = "e2a agent"
TASK_RESOURCE_TYPE = "e2a task"
#: The E2A error codes of an agent that cannot be reached now: UNAVAILABLE, which a client may retry.
_UNAVAILABLE_AGENT_CODES = frozenset({ErrorCode.AGENT_UNAVAILABLE, ErrorCode.A2A_UNAVAILABLE, ErrorCode.A2A_TIMEOUT})


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


def _packed(*details: Message) -> list[any_pb2.Any]:
    packed = []
    for detail in details:
        wrapper = any_pb2.Any()
        wrapper.Pack(detail)
        packed.append(wrapper)
    return packed


def unknown_agent(error: UnknownAgentError) -> grpc.Status:
    """NOT_FOUND naming the agent (``google.rpc.ResourceInfo``, the standard detail of a missing resource),
    with the agents the server has in an ``ErrorInfo`` (its metadata is the standard detail's place for
    machine-readable facts: ``known_agent_ids``, comma-separated)."""
    resource = error_details_pb2.ResourceInfo(
        resource_type=AGENT_RESOURCE_TYPE,
        resource_name=error.agent_id,
        description=f"known agents: {', '.join(error.known)}",
    )
    info = error_details_pb2.ErrorInfo(
        reason=UNKNOWN_AGENT_REASON,
        domain=ERROR_DOMAIN,
        metadata={"agent_id": error.agent_id, "known_agent_ids": ",".join(error.known)},
    )
    status = status_pb2.Status(code=code_pb2.NOT_FOUND, message=str(error), details=_packed(resource, info))
    return rpc_status.to_status(status)


def agent_unavailable(error: AgentUnavailableError) -> grpc.Status:
    """UNAVAILABLE (a client may retry) saying which agent and why, with an ``ErrorInfo``."""
    info = error_details_pb2.ErrorInfo(
        reason=AGENT_UNAVAILABLE_REASON, domain=ERROR_DOMAIN, metadata={"agent_id": error.agent_id}
    )
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=str(error), details=_packed(info))
    return rpc_status.to_status(status)


def no_waiting_task(error: NoWaitingTaskError) -> grpc.Status:
    """NOT_FOUND naming the task (``ResourceInfo``) with an ``ErrorInfo`` that tells it from an unknown agent."""
    resource = error_details_pb2.ResourceInfo(
        resource_type=TASK_RESOURCE_TYPE, resource_name=error.task_id, owner=error.agent_id
    )
    info = error_details_pb2.ErrorInfo(
        reason=NO_WAITING_TASK_REASON,
        domain=ERROR_DOMAIN,
        metadata={"agent_id": error.agent_id, "task_id": error.task_id},
    )
    status = status_pb2.Status(code=code_pb2.NOT_FOUND, message=str(error), details=_packed(resource, info))
    return rpc_status.to_status(status)


def agent_failed(error: BackendError) -> grpc.Status:
    """An agent's failure outside a Chat stream: UNAVAILABLE when it cannot be reached now, else INTERNAL
    (the failure is behind this server, the message says whose), with the E2A code in an ``ErrorInfo``."""
    unavailable = error.code in _UNAVAILABLE_AGENT_CODES
    info = error_details_pb2.ErrorInfo(
        reason=AGENT_ERROR_REASON, domain=ERROR_DOMAIN, metadata={"code": str(error.code)}
    )
    status = status_pb2.Status(
        code=code_pb2.UNAVAILABLE if unavailable else code_pb2.INTERNAL,
        message=f"{error.code}: {error.message}",
        details=_packed(info),
    )
    return rpc_status.to_status(status)


def status_for(exc: BaseException) -> grpc.Status:
    """The gRPC status for an exception raised while handling a call."""
    if isinstance(exc, E2AFieldError):
        return invalid_argument([exc])
    if isinstance(exc, UnknownAgentError):
        return unknown_agent(exc)
    if isinstance(exc, AgentUnavailableError):
        return agent_unavailable(exc)
    if isinstance(exc, NoWaitingTaskError):
        return no_waiting_task(exc)
    if isinstance(exc, BackendError):
        return agent_failed(exc)
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
