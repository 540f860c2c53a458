"""E2A records for the CloudEvents tests: every record the conformance suite expects as wire JSON."""

from __future__ import annotations

import json
from functools import cache

from e2a_grpc.model import E2AEnvelope, E2AResponse
from tests.conftest import REPO_ROOT

CASES = REPO_ROOT / "conformance" / "cases.jsonl"


@cache
def conformance_records() -> tuple[E2AEnvelope | E2AResponse, ...]:
    """The record of each case whose expected answer is wire JSON (the valid records, edge cases included)."""
    records: list[E2AEnvelope | E2AResponse] = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        expected = case.get("expect", {})
        if case.get("to") == "wire_json" and "payload" in expected:
            record_type = E2AResponse if case["message"] == "response" else E2AEnvelope
            records.append(record_type.from_json(expected["payload"]))
    return tuple(records)
