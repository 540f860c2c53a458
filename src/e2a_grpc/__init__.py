"""e2a-grpc: the E2A (Everything-to-Agent) protocol as a compiled protobuf schema, for Python.

The names follow the protocol document: ``E2AEnvelope`` / ``E2AResponse`` with ``from_dict`` /
``to_dict`` (plain-dict ``params`` and ``body``), plus protobuf (``to_proto`` / ``to_bytes``) and
E2A wire JSON (``to_json``) forms, and the ACP / A2A adapters of spec section 8.

Layers, each importing only those below it: ``cli``; ``client``; ``grpc`` (servicers, status
mapping, auth, server); ``backends``; ``chat``; ``conversion``; ``protocols`` (JSON-RPC, ACP, A2A);
``model``; ``settings``, ``jsontext`` and ``errors``. The generated messages are the package ``e2a.v1``.
"""

from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError
from e2a_grpc.model import (
    A2AStreamBranch,
    DeltaKind,
    E2AAuth,
    E2AEnvelope,
    E2AFileRef,
    E2AProvenance,
    E2AResponse,
    ErrorCode,
    IdentityOrigin,
    ResponseKind,
    ResponseStatus,
    SourceProtocol,
    utc_now_iso,
)
from e2a_grpc.model.constants import *  # noqa: F403
from e2a_grpc.model.constants import __all__ as _constant_names
from e2a_grpc.protocols.a2a import e2a_response_to_a2a_stream_payload, envelope_from_a2a_send_message
from e2a_grpc.protocols.acp import (
    e2a_response_to_acp_jsonrpc_response,
    envelope_from_acp_jsonrpc,
    envelope_to_acp_jsonrpc_call,
    merge_params_to_acp_prompt,
)

__all__ = [
    "A2AStreamBranch",
    "DeltaKind",
    "E2AAuth",
    "E2AEnvelope",
    "E2AFieldError",
    "E2AFileRef",
    "E2AProvenance",
    "E2AResponse",
    "E2ATypeError",
    "E2AValueError",
    "ErrorCode",
    "IdentityOrigin",
    "ResponseKind",
    "ResponseStatus",
    "SourceProtocol",
    "e2a_response_to_a2a_stream_payload",
    "e2a_response_to_acp_jsonrpc_response",
    "envelope_from_a2a_send_message",
    "envelope_from_acp_jsonrpc",
    "envelope_to_acp_jsonrpc_call",
    "merge_params_to_acp_prompt",
    "utc_now_iso",
    *_constant_names,
]
