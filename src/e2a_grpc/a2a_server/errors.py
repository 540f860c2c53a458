"""The one table from E2A errors to A2A errors, for the A2A server (the README shows it).

A request the server refuses before any backend turn starts gets an A2A error: the SDK's transports
give each A2A error class its JSON-RPC code, its HTTP status and its gRPC status with an ``ErrorInfo``
reason. Once a turn runs, an E2A error ends the task ``TASK_STATE_FAILED`` instead, its status
carrying the E2A code in ``metadata.e2a_error`` (the ToA2AStream projection of the final frame).

Every error this server raises carries ``data`` (``ErrorInfo.metadata`` on HTTP+JSON) with the E2A
``reason`` and whether a retry may succeed; a capacity refusal adds the limit.

Where the SDK's status for an A2A error is not the spec's (section 5.4, "Error Code Mappings"), the
spec's is here too (``SPEC_GRPC_STATUS``, ``SPEC_HTTP_STATUS``), for the transports to send.

A2A has no error for "a dependency is down, retry": ``TaskStoreUnavailableError`` is this server's, for
a task store (database) that does not answer. It has its own JSON-RPC code in the range JSON-RPC leaves
to servers (``TASK_STORE_UNAVAILABLE_CODE``), HTTP 503 and gRPC UNAVAILABLE, so clients and load
balancers retry it as they retry any unavailable service.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import grpc
from a2a.server.jsonrpc_models import JSONRPCError
from a2a.server.request_handlers import response_helpers
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import (
    A2A_ERROR_MAPPING,
    A2A_ERROR_REASONS,
    A2A_REASON_TO_ERROR,
    JSON_RPC_ERROR_CODE_MAP,
    A2AError,
    ContentTypeNotSupportedError,
    ErrorMapping,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)

from e2a_grpc.model import ErrorCode
from e2a_grpc.protocols.acp import camel_keys


class FrontDoorError(StrEnum):
    """Refusals of the A2A server that have no E2A error code of their own."""

    #: The request's ``metadata.agent_id`` names an agent the routing table does not have.
    UNKNOWN_AGENT = "unknown_agent"
    #: Every one of ``a2a_max_running_tasks`` backend turns is in use: retry later.
    CAPACITY_EXHAUSTED = "capacity_exhausted"
    #: The request's ``acceptedOutputModes`` names no output mode of the agent card.
    OUTPUT_MODE_UNSUPPORTED = "output_mode_unsupported"
    #: A push notification config whose webhook URL is not http(s) or whose host is (or resolves to) an
    #: address webhooks may not target (``push_targets``).
    PUSH_TARGET_REFUSED = "push_target_refused"
    #: An HTTP request body over ``max_message_bytes`` (``body_limit``; the gRPC port has its own check).
    REQUEST_TOO_LARGE = "request_too_large"
    #: An HTTP request body nesting JSON deeper than ``jsontext.MAX_DEPTH`` (``body_limit``).
    REQUEST_TOO_DEEP = "request_too_deep"
    #: An HTTP request body that did not arrive within ``a2a_body_timeout_seconds`` (``body_limit``).
    REQUEST_BODY_TIMEOUT = "request_body_timeout"
    #: An HTTP request body whose ``Content-Type`` is not JSON (``http_binding``).
    REQUEST_MEDIA_TYPE_UNSUPPORTED = "request_media_type_unsupported"
    #: A request whose ``A2A-Version`` its interface does not speak (``versions``).
    VERSION_UNSUPPORTED = "version_unsupported"
    #: The task store's database does not answer (``store_outage``): retry.
    TASK_STORE_UNAVAILABLE = "task_store_unavailable"
    #: A task failed by the sweeper (``leases``): its turn ended without a final state, as the task
    #: store failed during it (the code in the failed task's ``metadata.e2a_error``).
    TURN_LOST = "turn_lost"
    #: A task failed by the sweeper (``leases``): the server instance running it stopped renewing its lease.
    INSTANCE_GONE = "instance_gone"


class TaskStoreUnavailableError(A2AError):
    """The task store's database did not answer; the same request may succeed when retried."""

    message = "task store unavailable; retry"


#: JSON-RPC 2.0 leaves -32000 to -32099 to servers; A2A's own errors take -32001 to -32009.
TASK_STORE_UNAVAILABLE_CODE = -32000
#: The ``ErrorInfo`` reason of ``TaskStoreUnavailableError`` (HTTP+JSON and gRPC), in A2A's style.
TASK_STORE_UNAVAILABLE_REASON = "TASK_STORE_UNAVAILABLE"


def _register_task_store_unavailable() -> None:
    """Give ``TaskStoreUnavailableError`` its JSON-RPC code, HTTP status and reason in a2a-sdk 1.3's tables.

    The SDK's transports look an A2A error's class up in these tables (by exact class), and answer
    any class they do not list as -32603 / HTTP 500 INTERNAL, which a client must not retry. The gRPC
    status is ``SPEC_GRPC_STATUS``'s (``grpc_handler``), as the SDK's gRPC table is private.
    """
    JSON_RPC_ERROR_CODE_MAP[TaskStoreUnavailableError] = TASK_STORE_UNAVAILABLE_CODE
    # The SDK's default JSON-RPC error model for an unlisted class fixes the code at -32603.
    response_helpers.EXCEPTION_MAP[TaskStoreUnavailableError] = JSONRPCError
    A2A_ERROR_MAPPING[TaskStoreUnavailableError] = ErrorMapping(503, "UNAVAILABLE", TASK_STORE_UNAVAILABLE_REASON)
    # Both derived from A2A_ERROR_MAPPING when the SDK's module was imported.
    A2A_ERROR_REASONS[TaskStoreUnavailableError] = TASK_STORE_UNAVAILABLE_REASON
    A2A_REASON_TO_ERROR[TASK_STORE_UNAVAILABLE_REASON] = TaskStoreUnavailableError


_register_task_store_unavailable()


#: E2A error -> A2A error class, and whether a retry of the same request may succeed: the refusals of
#: this server, each before any task exists.
A2A_ERRORS: dict[ErrorCode | FrontDoorError, tuple[type[A2AError], bool]] = {
    ErrorCode.INVALID_REQUEST: (InvalidParamsError, False),
    ErrorCode.PROMPT_TOO_LARGE: (InvalidParamsError, False),
    FrontDoorError.OUTPUT_MODE_UNSUPPORTED: (ContentTypeNotSupportedError, False),
    # A2A has no "not found" but for tasks: the request's params name what is not here.
    FrontDoorError.UNKNOWN_AGENT: (InvalidParamsError, False),
    FrontDoorError.PUSH_TARGET_REFUSED: (InvalidParamsError, False),
    # The SDK's own error for a payload too large (and the request's id is unknown: it was not read).
    FrontDoorError.REQUEST_TOO_LARGE: (InvalidRequestError, False),
    # Refused before any parser recursed on it (the SDK's gave -32603 "maximum recursion depth exceeded"):
    # on HTTP+JSON the SDK's 400 INVALID_ARGUMENT of a body it cannot parse.
    FrontDoorError.REQUEST_TOO_DEEP: (InvalidRequestError, False),
    # The request was not read: the same request sent again at a client's usual pace is served.
    FrontDoorError.REQUEST_BODY_TIMEOUT: (InvalidRequestError, True),
    FrontDoorError.REQUEST_MEDIA_TYPE_UNSUPPORTED: (ContentTypeNotSupportedError, False),
    FrontDoorError.VERSION_UNSUPPORTED: (VersionNotSupportedError, False),
    # A2A has no "unavailable" error: the reason and ``retryable`` say what InternalError cannot.
    FrontDoorError.CAPACITY_EXHAUSTED: (InternalError, True),
    # Any request that needs the database, at any point (this server's error: see the module's docstring).
    FrontDoorError.TASK_STORE_UNAVAILABLE: (TaskStoreUnavailableError, True),
}


def a2a_error(code: ErrorCode | FrontDoorError, message: str, **details: Any) -> A2AError:
    """The A2A error for an E2A error, its ``data`` naming the E2A reason, retryability and details."""
    error_class, retryable = A2A_ERRORS[code]
    # A2A JSON names its keys in camelCase, the data of an error too (``max_prompt_bytes`` -> ``maxPromptBytes``).
    return error_class(message=message, data={"reason": str(code), "retryable": retryable, **camel_keys(details)})


def task_store_unavailable() -> A2AError:
    """The error of a request that met a task store outage (``store_outage``): the same for every one."""
    return a2a_error(FrontDoorError.TASK_STORE_UNAVAILABLE, TaskStoreUnavailableError.message)


#: The spec's gRPC status where a2a-sdk 1.3's ``GrpcHandler`` gives another (FAILED_PRECONDITION for
#: each of these).
SPEC_GRPC_STATUS: dict[type[A2AError], grpc.StatusCode] = {
    PushNotificationNotSupportedError: grpc.StatusCode.UNIMPLEMENTED,
    UnsupportedOperationError: grpc.StatusCode.UNIMPLEMENTED,
    VersionNotSupportedError: grpc.StatusCode.UNIMPLEMENTED,
    # Not the spec's (A2A has no such error) but this server's; the SDK's handler would abort UNKNOWN.
    TaskStoreUnavailableError: grpc.StatusCode.UNAVAILABLE,
}

#: The spec's HTTP status where a2a-sdk 1.3's ``A2A_ERROR_MAPPING`` gives another (400 or 500).
SPEC_HTTP_STATUS: dict[type[A2AError], int] = {
    ContentTypeNotSupportedError: 415,
    TaskNotCancelableError: 409,
    InvalidAgentResponseError: 502,
}


def rest_error_payload(error: A2AError) -> dict[str, Any]:
    """The SDK's HTTP+JSON (AIP-193) error body for ``error``, with the spec's HTTP and gRPC statuses."""
    payload = build_rest_error_payload(error)
    with_spec_statuses(payload, type(error))
    return payload


def with_spec_statuses(payload: dict[str, Any], error_class: type[A2AError]) -> int | None:
    """Give an HTTP+JSON error body the spec's HTTP status (``error.code``) and gRPC status name
    (``error.status``) for ``error_class``; the HTTP status, where it changed."""
    error = payload["error"]
    if (grpc_status := SPEC_GRPC_STATUS.get(error_class)) is not None:
        error["status"] = grpc_status.name
    http_status = SPEC_HTTP_STATUS.get(error_class)
    if http_status is not None:
        error["code"] = http_status
    return http_status
