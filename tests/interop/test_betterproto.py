"""The schema across two independent protobuf/gRPC stacks: ours (upb + grpcio) and betterproto2 + grpclib.

Part 1 (no server): every conformance record encoded by one stack decodes, in the other, to the
same field values, and comes back to the same E2A dict. Part 2: the grpcio server called through
grpclib answers exactly what it answers the grpcio stub. Why betterproto2 is the second stack:
see ``betterproto_stack``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from e2a_grpc import E2AEnvelope, E2AResponse
from tests import vectors
from tests.interop import betterproto_stack
from tests.interop.betterproto_stack import same_fields, to_betterproto
from tests.wellformed import envelope_well_typed, response_well_typed


@pytest.fixture(scope="session")
def bp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The betterproto2 ``e2a.v1`` module, generated from proto/ for this session."""
    parent = tmp_path_factory.mktemp("betterproto")
    yield betterproto_stack.generate(parent)
    sys.path.remove(str(parent))


# --- part 1: messages ----------------------------------------------------------------------------


def _records(name: str, well_typed: Callable[[Any], bool]) -> list[Any]:
    # An `ok` output that is itself ill-typed (the README lets ill-typed inputs come back as they
    # are, e.g. protocol_version 1) is no E2A record and has no protobuf form: those are left out.
    return [
        pytest.param(case["output"]["ok"], id=f"{name}-{case['i']}")
        for case in vectors.load(name)
        if "ok" in case["output"] and well_typed(case["output"]["ok"])
    ]


ENVELOPES = _records("E2AEnvelope.from_dict", envelope_well_typed) + _records(
    "envelope_from_acp_jsonrpc", envelope_well_typed
)
RESPONSES = _records("E2AResponse.from_dict", response_well_typed)


def test_vectors_are_there(vectors_dir: Path) -> None:
    # Without this, missing vectors would only show as "empty parameter set" skips.
    assert ENVELOPES and RESPONSES, f"no conformance envelopes/responses read from {vectors_dir}"


def _assert_same_dict(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    assert got == want, what
    # == says 1 == 1.0 == True and ignores key order; JSON text does not.
    assert json.dumps(got) == json.dumps(want), f"{what}: equal as dicts but not as JSON text (types or key order)"


def _crosses(model: type[E2AEnvelope] | type[E2AResponse], record: dict[str, Any]) -> None:
    ours = model.from_dict(record)
    _assert_same_dict(ours.to_dict(), record, "our own stack does not reproduce the vector (not an interop failure)")
    upb = ours.to_proto()
    parsed = betterproto_stack.message_class(upb.DESCRIPTOR)().parse(ours.to_bytes())
    # Compared field by field, not only through a round trip: betterproto2 keeps fields it cannot
    # read as unknown bytes and writes them back, which would make a bare round trip pass anyway.
    same_fields(upb, parsed)
    _assert_same_dict(model.from_bytes(bytes(parsed)).to_dict(), record, "upb -> betterproto2 -> upb")
    # The other way: a message built field by field in betterproto2 (no parse state to echo back).
    built = to_betterproto(upb)
    _assert_same_dict(model.from_bytes(bytes(built)).to_dict(), record, "built in betterproto2 -> upb")


@pytest.mark.usefixtures("bp")
@pytest.mark.parametrize("record", ENVELOPES)
def test_envelope_crosses_stacks(record: dict[str, Any]) -> None:
    _crosses(E2AEnvelope, record)


@pytest.mark.usefixtures("bp")
@pytest.mark.parametrize("record", RESPONSES)
def test_response_crosses_stacks(record: dict[str, Any]) -> None:
    _crosses(E2AResponse, record)


# Messages written out by hand in betterproto2, each with the E2A dict it stands for. They pin the
# edge cases of the schema's conventions instead of deriving the betterproto2 side from upb.
HAND_BUILT: dict[str, Callable[[ModuleType], tuple[Any, type[E2AEnvelope] | type[E2AResponse], dict[str, Any]]]] = {
    "json-text-numbers-unicode": lambda bp: (
        bp.E2AEnvelope(
            protocol_version="1.0",
            provenance=bp.E2AProvenance(
                source_protocol="acp",
                converter="custom:conv",
                converted_at="2026-01-02T03:04:05Z",
                details='{"z": 1, "a": [1, 1.0, -0.0]}',
            ),
            jsonrpc_id=bp.JsonRpcId(big_integer_value="-18446744073709551617"),
            identity_origin=bp.IdentityOrigin.SERVICE,
            channel="渠道",
            method="session/prompt",
            params='{"n": 18446744073709551616, "f": 1.0, "s": "é😀\\u0000", "o": {"b": 1, "a": 2}}',
            is_stream=True,
            expected_output_modes=["text/plain", "application/json"],
        ),
        E2AEnvelope,
        {
            "protocol_version": "1.0",
            "provenance": {
                "source_protocol": "acp",
                "converter": "custom:conv",
                "converted_at": "2026-01-02T03:04:05Z",
                "details": {"z": 1, "a": [1, 1.0, -0.0]},
            },
            "jsonrpc_id": -18446744073709551617,
            "identity_origin": "service",
            "channel": "渠道",
            "method": "session/prompt",
            "params": {"n": 18446744073709551616, "f": 1.0, "s": "é😀\x00", "o": {"b": 1, "a": 2}},
            "is_stream": True,
            "expected_output_modes": ["text/plain", "application/json"],
        },
    ),
    # Presence: an all-default auth is {} (absent is null), integer id 0 is not null, "" is not null.
    "presence-of-defaults": lambda bp: (
        bp.E2AEnvelope(
            protocol_version="1.0",
            auth=bp.E2AAuth(),
            jsonrpc_id=bp.JsonRpcId(integer_value=0),
            agent_ref="{}",
            session_id="",
            timestamp="",
        ),
        E2AEnvelope,
        {"protocol_version": "1.0", "auth": {}, "jsonrpc_id": 0, "agent_ref": {}, "session_id": "", "timestamp": ""},
    ),
    "auth-headers-order-float-id": lambda bp: (
        bp.E2AEnvelope(
            protocol_version="1.0",
            jsonrpc_id=bp.JsonRpcId(number_value=1.0),
            auth=bp.E2AAuth(
                bearer_token="t",
                extra_headers=[bp.HttpHeader(name="X-B", value="2"), bp.HttpHeader(name="X-A", value="1")],
                meta='{"k": [true, null]}',
            ),
        ),
        E2AEnvelope,
        {
            "protocol_version": "1.0",
            "jsonrpc_id": 1.0,
            "auth": {"bearer_token": "t", "extra_headers": {"X-B": "2", "X-A": "1"}, "_meta": {"k": [True, None]}},
        },
    ),
    "response-int64-limits": lambda bp: (
        bp.E2AResponse(
            protocol_version="1.0",
            response_id="r-1",
            request_id="q-1",
            sequence=2**63 - 1,
            is_final=True,
            status="failed",
            response_kind="e2a.error",
            body='{"code": -32603, "message": "boom"}',
            jsonrpc_id=bp.JsonRpcId(integer_value=-(2**63)),
            identity_origin=bp.IdentityOrigin.SYSTEM,
            projections='{"acp": {"x": 1}}',
            metadata='{"m": 0.5}',
        ),
        E2AResponse,
        {
            "protocol_version": "1.0",
            "response_id": "r-1",
            "request_id": "q-1",
            "sequence": 2**63 - 1,
            "is_final": True,
            "status": "failed",
            "response_kind": "e2a.error",
            "body": {"code": -32603, "message": "boom"},
            "jsonrpc_id": -(2**63),
            "identity_origin": "system",
            "projections": {"acp": {"x": 1}},
            "metadata": {"m": 0.5},
        },
    ),
}


@pytest.mark.parametrize("name", HAND_BUILT)
def test_built_by_hand(bp: ModuleType, name: str) -> None:
    message, model, data = HAND_BUILT[name](bp)
    want = model.from_dict(data).to_dict()
    _assert_same_dict(model.from_bytes(bytes(message)).to_dict(), want, f"{name}: betterproto2 -> upb")
