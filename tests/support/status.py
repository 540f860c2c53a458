"""Reading the rich error details (google.rpc.Status) of a failed call."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status


def field_violations(error: grpc.aio.AioRpcError | grpc.RpcError) -> list[tuple[str, str]]:
    """(field, description) of every google.rpc.BadRequest violation the error carries."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]  # an RpcError also carries the trailers
    assert status is not None, "INVALID_ARGUMENT must carry rich status details"
    violations: list[tuple[str, str]] = []
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        assert detail.Unpack(bad_request), detail.type_url
        violations.extend((violation.field, violation.description) for violation in bad_request.field_violations)
    return violations
