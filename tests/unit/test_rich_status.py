"""What a caller reads of a failed call's rich status: its details and ErrorInfo reason, and nothing
of a status that contradicts the call's own code or message."""

from __future__ import annotations

from typing import Any

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from e2a_grpc.rich_status import error_info_reason, status_details


class _FailedCall(grpc.RpcError):
    """What a failed call raises, as much of it as ``rpc_status.from_call`` reads."""

    def __init__(self, code: grpc.StatusCode, message: str, trailers: tuple[tuple[str, Any], ...] = ()) -> None:
        self._code, self._message, self._trailers = code, message, trailers

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._message

    def trailing_metadata(self) -> Any:  # grpc.Metadatum pairs
        return self._trailers


def _with_status(code: grpc.StatusCode, message: str, status: status_pb2.Status) -> _FailedCall:
    return _FailedCall(code, message, tuple(rpc_status.to_status(status).trailing_metadata))


def _not_found(reason: str) -> status_pb2.Status:
    status = status_pb2.Status(code=code_pb2.NOT_FOUND, message="no such task")
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain="e2a-grpc"))
    return status


def test_a_call_without_a_rich_status_has_no_details_and_no_reason() -> None:
    error = _FailedCall(grpc.StatusCode.UNAVAILABLE, "connection refused")
    assert list(status_details(error)) == []
    assert error_info_reason(error) is None


def test_the_error_info_reason_of_a_rich_status_is_read() -> None:
    error = _with_status(grpc.StatusCode.NOT_FOUND, "no such task", _not_found("NO_WAITING_TASK"))
    assert len(status_details(error)) == 1
    assert error_info_reason(error) == "NO_WAITING_TASK"


def test_a_rich_status_that_contradicts_the_calls_code_is_not_trusted() -> None:
    # grpc_status raises ValueError on such a status: the caller gets no details, not that error.
    error = _with_status(grpc.StatusCode.INTERNAL, "no such task", _not_found("NO_WAITING_TASK"))
    assert list(status_details(error)) == []
    assert error_info_reason(error) is None
