"""Reading the rich error details (google.rpc.Status) of a failed call."""

from __future__ import annotations

from typing import TypeVar, cast

import grpc
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

Detail = TypeVar("Detail", bound=Message)


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


def status_detail(error: grpc.aio.AioRpcError, kind: type[Detail]) -> Detail:
    """The error's first status detail of type ``kind`` (an ErrorInfo, a ResourceInfo, ...)."""
    status = rpc_status.from_call(cast(grpc.Call, error))  # an aio error has what from_call reads
    assert status is not None
    for packed in status.details:
        if packed.Is(kind.DESCRIPTOR):
            detail = kind()
            packed.Unpack(detail)
            return detail
    raise AssertionError(f"no {kind.__name__} in the status details")
