"""The JSON examples of spec sections 11 and 12.8 (testdata/spec, copied from the protocol document)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from e2a_grpc import E2AEnvelope, E2AResponse, envelope_to_acp_jsonrpc_call
from tests.conftest import SPEC_EXAMPLES_DIR
from tests.support.vectors import RFC3339_UTC

LEGACY_KEYS = {"channel_id", "req_method", "metadata", "payload", "binding", "app_id", "workspace_dir"}


def _examples() -> list[Any]:
    """One parameter per example, its id the spec subsection and index ("11.1-0", "12.8-2")."""
    return [
        pytest.param(path.read_text(encoding="utf-8"), id=path.stem)
        for path in sorted(SPEC_EXAMPLES_DIR.glob("*.json"), key=lambda p: [int(n) for n in re.split(r"[.-]", p.stem)])
    ]


EXAMPLES = _examples()


def test_spec_has_the_examples() -> None:
    assert len(EXAMPLES) >= 8  # 11.1, 11.2, 11.4 (ACP call), 11.5, 11.6, three 12.8 frames


@pytest.mark.parametrize("text", EXAMPLES)
def test_example_round_trips_byte_identically(text: str) -> None:
    document = json.loads(text)
    if "jsonrpc" in document:  # 11.4: the ACP call built from the 11.3 envelope
        envelope = E2AEnvelope.from_dict({"method": "session/prompt", "jsonrpc_id": 42, "params": document["params"]})
        assert json.dumps(envelope_to_acp_jsonrpc_call(envelope)) == json.dumps(document)
        return
    cls = E2AResponse if "response_kind" in document else E2AEnvelope
    record = cls.from_json(text)
    wire = record.to_json()
    assert cls.from_json(wire).to_json() == wire
    assert cls.from_bytes(record.to_bytes()).to_json() == wire
    assert cls.from_json(wire.encode()).to_json() == wire

    canonical = json.loads(wire)
    for key, value in document.items():
        if cls is E2AEnvelope and key in LEGACY_KEYS:
            assert key not in canonical, key  # migrated; test_legacy_example_is_migrated checks to what
        elif key == "timestamp" and not isinstance(value, str):
            assert RFC3339_UTC.match(canonical["timestamp"]), canonical["timestamp"]  # epoch seconds -> RFC 3339
        elif key == "provenance":
            assert value.items() <= canonical["provenance"].items()
        else:
            assert canonical[key] == value and type(canonical[key]) is type(value), key


def test_chunk_frames_are_canonical_prefixes() -> None:
    """The 12.8 frames list their keys in protocol order: to_json starts with the same fields."""
    frames = [json.loads(p.values[0]) for p in EXAMPLES if p.id.startswith("12.8")]
    assert len(frames) == 3
    for frame in frames:
        canonical = E2AResponse.from_dict(frame).to_dict()
        assert list(canonical)[: len(frame)] == list(frame)


def test_legacy_example_is_migrated() -> None:
    legacy = next(json.loads(p.values[0]) for p in EXAMPLES if '"req_method"' in p.values[0])
    envelope = E2AEnvelope.from_dict(legacy)
    assert (envelope.channel, envelope.method) == ("feishu", "chat.send")
    assert envelope.timestamp == "2026-03-26T11:33:01.150000+00:00"
    assert envelope.channel_context == {"feishu_open_id": "ou_xxx", "message_id": "om_xxx"}
