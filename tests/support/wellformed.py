"""Is an input "well-typed" in the sense of the vectors' README?

Written from the protocol document's field tables, independently of the implementation: an
implementation may raise only on inputs this says are ill-typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STR, INT, NUM, BOOL, OBJ, NULL = "str", "int", "num", "bool", "obj", "null"
ORIGINS = ("system", "user", "agent", "service")


def _is(value: Any, kinds: tuple[str, ...]) -> bool:
    if value is None:
        return NULL in kinds
    if isinstance(value, bool):
        return BOOL in kinds
    if isinstance(value, int):
        return INT in kinds or NUM in kinds
    if isinstance(value, float):
        return NUM in kinds
    if isinstance(value, str):
        return STR in kinds
    if isinstance(value, dict):
        return OBJ in kinds
    return False


_OPT_STR = (STR, NULL)
_OPT_OBJ = (OBJ, NULL)
_SHARED = {
    "protocol_version": (STR,),
    "request_id": _OPT_STR,
    "jsonrpc_id": (STR, INT, NUM, NULL),
    "correlation_id": _OPT_STR,
    "task_id": _OPT_STR,
    "context_id": _OPT_STR,
    "session_id": _OPT_STR,
    "message_id": _OPT_STR,
    "timestamp": (STR, INT, NUM, NULL),
    "channel": _OPT_STR,
    "channel_id": _OPT_STR,
    "user_id": _OPT_STR,
    "agent_ref": _OPT_OBJ,
    "source_agent_id": _OPT_STR,
    "method": _OPT_STR,
    "is_stream": (BOOL, NULL),
    "channel_context": _OPT_OBJ,
    "a2a_metadata": _OPT_OBJ,
    "acp_meta": _OPT_OBJ,
}
ENVELOPE = {
    **_SHARED,
    "chat_id": _OPT_STR,
    "agent_id": _OPT_STR,
    "service_id": _OPT_STR,
    "workspace_key": _OPT_STR,
    "workspace_dir": _OPT_STR,
    "req_method": _OPT_STR,
    "params": _OPT_OBJ,
    "payload": _OPT_OBJ,
    "metadata": _OPT_OBJ,
    "app_id": _OPT_STR,
    "binding": _OPT_STR,
    "ext_method": _OPT_STR,
    "session_update_kind": _OPT_STR,
    "auth": _OPT_OBJ,
}
RESPONSE = {
    **_SHARED,
    "response_id": _OPT_STR,
    "sequence": (INT, NULL),
    "is_final": (BOOL, NULL),
    "status": (STR,),
    "response_kind": _OPT_STR,
    "body": _OPT_OBJ,
    "projections": _OPT_OBJ,
    "metadata": _OPT_OBJ,
}
PROVENANCE = {"source_protocol": (STR,), "converter": _OPT_STR, "converted_at": _OPT_STR, "details": _OPT_OBJ}
AUTH = {
    "method_id": _OPT_STR,
    "bearer_token": _OPT_STR,
    "api_key_ref": _OPT_STR,
    "credential_ref": _OPT_STR,
    "extra_headers": _OPT_OBJ,
    "_meta": _OPT_OBJ,
}


def _fields_ok(data: dict[str, Any], table: Mapping[str, tuple[str, ...]]) -> bool:
    return all(_is(data[key], kinds) for key, kinds in table.items() if key in data)


def envelope_well_typed(data: Any) -> bool:
    if not isinstance(data, dict) or not _fields_ok(data, ENVELOPE):
        return False
    if "identity_origin" in data and data["identity_origin"] not in ORIGINS:
        return False
    modes = data.get("expected_output_modes")
    if modes is not None and not (isinstance(modes, list) and all(isinstance(m, str) for m in modes)):
        return False
    prov = data.get("provenance")
    if prov is not None and not (isinstance(prov, dict) and _fields_ok(prov, PROVENANCE)):
        return False
    auth = data.get("auth")
    if isinstance(auth, dict):
        if not _fields_ok(auth, AUTH):
            return False
        headers = auth.get("extra_headers") or {}
        if not all(isinstance(v, str) for v in headers.values()):
            return False
    return True


def response_well_typed(data: Any) -> bool:
    if not isinstance(data, dict) or not _fields_ok(data, RESPONSE):
        return False
    if "identity_origin" in data and data["identity_origin"] not in ORIGINS:
        return False
    prov = data.get("provenance")
    return prov is None or (isinstance(prov, dict) and _fields_ok(prov, PROVENANCE))
