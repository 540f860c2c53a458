"""The E2A data model: records, their nested types, the protocol's enums and constants.

Layers, each importing only those below it: ``enums`` / ``constants``, ``readers``, ``parts``,
``fields``, ``legacy``, ``proto``, ``records``.
"""

from e2a_grpc.model.enums import (
    A2AStreamBranch,
    DeltaKind,
    ErrorCode,
    IdentityOrigin,
    ResponseKind,
    ResponseStatus,
    SourceProtocol,
    WaitReason,
)
from e2a_grpc.model.parts import E2AAuth, E2AFileRef, E2AProvenance
from e2a_grpc.model.readers import JsonRpcIdValue
from e2a_grpc.model.records import E2AEnvelope, E2AResponse, utc_now_iso

__all__ = [
    "A2AStreamBranch",
    "DeltaKind",
    "E2AAuth",
    "E2AEnvelope",
    "E2AFileRef",
    "E2AProvenance",
    "E2AResponse",
    "ErrorCode",
    "IdentityOrigin",
    "JsonRpcIdValue",
    "ResponseKind",
    "ResponseStatus",
    "SourceProtocol",
    "WaitReason",
    "utc_now_iso",
]
