"""What an A2A client sees of an E2A error, as the server's error table says."""

from __future__ import annotations

from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP

from e2a_grpc.a2a_server.errors import A2A_ERRORS, FrontDoorError
from e2a_grpc.model import ErrorCode


def json_rpc_code(code: ErrorCode | FrontDoorError) -> int:
    """The JSON-RPC error code an A2A client sees for an E2A error."""
    return JSON_RPC_ERROR_CODE_MAP[A2A_ERRORS[code][0]]
