"""The A2A protocol versions this server speaks, and the check of a request's ``A2A-Version``.

A version is its ``Major.Minor`` (spec 3.6: a patch number is not considered); an absent or empty
``A2A-Version`` is 0.3 (spec 3.6.2). A request naming a version its interface does not speak gets
``VersionNotSupportedError`` before anything else is done with it.
"""

from __future__ import annotations

from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, VERSION_HEADER
from a2a.utils.errors import A2AError

from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error

#: JSON-RPC and HTTP+JSON: 1.0, and 0.3 through the SDK's compatibility layer (``enable_v0_3_compat``).
HTTP_VERSIONS = (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
#: gRPC: 1.0 only (the 0.3 gRPC service is not served).
GRPC_VERSIONS = (PROTOCOL_VERSION_1_0,)


def major_minor(value: str) -> str | None:
    """``Major.Minor`` of an ``A2A-Version`` value (``"1.0.2"`` -> ``"1.0"``), None if it is not one."""
    major, _, rest = value.strip().partition(".")
    minor = rest.partition(".")[0]
    if not all(part.isascii() and part.isdigit() for part in (major, minor)):
        return None
    return f"{int(major)}.{int(minor)}"


def version_refusal(value: str | None, spoken: tuple[str, ...]) -> A2AError | None:
    """The error (VersionNotSupportedError) for a request whose ``A2A-Version`` is ``value`` on an
    interface speaking ``spoken``, or None if it may be served."""
    requested = value.strip() if value else ""
    if (major_minor(requested) if requested else PROTOCOL_VERSION_0_3) in spoken:
        return None
    named = f"A2A version {requested!r}" if requested else f"a request without {VERSION_HEADER} (A2A 0.3)"
    return a2a_error(
        FrontDoorError.VERSION_UNSUPPORTED,
        f"{named} is not supported here; send {VERSION_HEADER}: one of {', '.join(spoken)}",
        requested=requested,
        supported=list(spoken),
    )
