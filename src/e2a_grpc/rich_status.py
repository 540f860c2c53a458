"""What a caller of an E2A service reads of a failed call's rich status (``google.rpc.Status`` in its
trailers): the client's errors and the ``grpc://`` route's upstream calls read it alike."""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status


def status_details(error: grpc.RpcError) -> Sequence[any_pb2.Any]:
    """The details of the call's rich status; none when it has none, or one that contradicts the
    call's own code or message (grpc_status then raises ValueError: nothing in it can be trusted)."""
    try:
        # types-grpcio types RpcError without grpc.Call, but what a call raises is both (sync or aio),
        # and from_call reads only code(), details() and trailing_metadata().
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except ValueError:
        return ()
    return () if status is None else status.details


def error_info_reason(error: grpc.RpcError) -> str | None:
    """The ``google.rpc.ErrorInfo`` reason of a failed call (e.g. ``AGENT_UNAVAILABLE``), if it has one."""
    for detail in status_details(error):
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return None
