"""JSON-RPC 2.0 messages, as ACP and A2A carry them: builders and the checks E2A applies to what it reads."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, TypeGuard

from e2a_grpc.errors import E2AValueError
from e2a_grpc.model import readers
from e2a_grpc.model.readers import JsonRpcIdValue

VERSION = "2.0"


class ErrorCode(IntEnum):
    """The error codes JSON-RPC 2.0 reserves (section 5.1)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603


def request(rpc_id: JsonRpcIdValue, method: str | None, params: Any) -> dict[str, Any]:
    """A request (a call that expects an answer), in the key order E2A's reference adapters write."""
    return {"jsonrpc": VERSION, "id": rpc_id, "method": method, "params": params}


def notification(method: str, params: Any) -> dict[str, Any]:
    """A notification: a request without an id, which gets no answer."""
    return {"jsonrpc": VERSION, "method": method, "params": params}


def result(rpc_id: JsonRpcIdValue, value: Any) -> dict[str, Any]:
    return {"jsonrpc": VERSION, "id": rpc_id, "result": value}


def error(rpc_id: JsonRpcIdValue, value: Any) -> dict[str, Any]:
    return {"jsonrpc": VERSION, "id": rpc_id, "error": value}


def is_response(message: object) -> TypeGuard[dict[str, Any]]:
    """Whether ``message`` is a JSON-RPC 2.0 response (a result or an error)."""
    return (
        isinstance(message, dict) and message.get("jsonrpc") == VERSION and ("result" in message or "error" in message)
    )


def check_version(message: dict[str, Any], path: str) -> None:
    if message.get("jsonrpc") != VERSION:
        raise E2AValueError(f"{path}.jsonrpc", f'must be "{VERSION}"')


def message_id(message: dict[str, Any], path: str) -> JsonRpcIdValue:
    """A message's ``id``: a string, a finite number or null (absent reads as null)."""
    return readers.jsonrpc_id(message.get("id"), f"{path}.id")
