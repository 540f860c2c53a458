"""Binary E2AEnvelope / E2AResponse fixtures for the Go tests (gen/go/internal/interop), made at test time.

    python -m tests.support.tools.go_fixtures write DIR    # DIR/cases.json, DIR/<name>.bin, DIR/<name>.json
    python -m tests.support.tools.go_fixtures decode DIR   # DIR/<name>.go.bin -> DIR/<name>.go.json

``write`` takes the ``ok`` outputs of the E2AEnvelope.from_dict / E2AResponse.from_dict conformance
vectors (testdata/vectors) plus a few hand-made
records that stress the free-form JSON (integers beyond 2^64, ``1.0`` vs ``1``, ``-0.0``, key order,
all of Unicode). For each it writes the record's protobuf bytes (``to_bytes()``) and its ``to_dict()``
as JSON. The Go test decodes the bytes, re-encodes them as ``<name>.go.bin``, and runs ``decode``,
which reads those Go bytes back with ``from_bytes`` and writes ``to_dict()`` the same way: the Go test
then wants ``<name>.go.json`` byte-for-byte equal to ``<name>.json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from e2a_grpc import E2AEnvelope, E2AResponse
from tests.conftest import VECTORS_DIR
from tests.support import vectors
from tests.support.wellformed import envelope_well_typed, response_well_typed

TYPES: dict[str, type[E2AEnvelope] | type[E2AResponse]] = {"E2AEnvelope": E2AEnvelope, "E2AResponse": E2AResponse}
WELL_TYPED: dict[str, Callable[[Any], bool]] = {"E2AEnvelope": envelope_well_typed, "E2AResponse": response_well_typed}

# Free-form JSON that a lossy representation would break.
_LOSSLESS = {
    "text": 'héllo ✓ 🚀 ゼロ \u2028 \u0000 "quoted" \\ </script>',
    "z_first": 1,
    "a_second": 2,
    "big": 123456789012345678901234567890,
    "u64_plus_one": 2**64,
    "minus_big": -(2**70),
    "beyond_double": 2**53 + 1,
    "one_point_zero": 1.0,
    "negative_zero": -0.0,
    "tiny": 5e-324,
    "huge": 1.7976931348623157e308,
    "nested": {"b": [1, 1.0, "1", None, True, False, {}, []], "a": {"é": "ü", "🚀": [{"k": -1}]}},
}

EXTRA_CASES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "extra_envelope_lossless",
        "E2AEnvelope",
        {
            "method": "session/prompt",
            "request_id": "req-✓",
            "session_id": "s-1",
            "jsonrpc_id": 2**70,
            "identity_origin": "service",
            "params": _LOSSLESS,
            "agent_ref": {"name": "agent ✓", "version": 2},
            "channel_context": {"thread": "t-1", "n": 2**64 + 1},
            "auth": {"bearer_token": "tok", "extra_headers": {"X-B": "2", "X-A": "1"}, "_meta": {"k": 1.0}},
            "expected_output_modes": ["text/plain", "application/json"],
            "is_stream": True,
            "timestamp": "2026-01-02T03:04:05.123456Z",
        },
    ),
    (
        "extra_envelope_float_id",
        "E2AEnvelope",
        {"method": "chat.send", "jsonrpc_id": 1.0, "params": {"text": "x", "n": 1}, "acp_meta": {"trace": "t-1"}},
    ),
    (
        "extra_envelope_negative_int_id",
        "E2AEnvelope",
        {"method": "chat.send", "jsonrpc_id": -(2**63), "params": {}, "a2a_metadata": {"x": [1.5, -0.0]}},
    ),
    (
        "extra_response_lossless",
        "E2AResponse",
        {
            "response_kind": "acp.prompt_result",
            "status": "succeeded",
            "is_final": True,
            "sequence": 2**62,
            "response_id": "r-1",
            "request_id": "req-✓",
            "jsonrpc_id": "id-ゼロ",
            "body": _LOSSLESS,
            "projections": {"acp": {"jsonrpc": "2.0", "id": 2**64, "result": {"stopReason": "end_turn"}}},
            "metadata": {"ünïcode": "✓", "big": -(2**64)},
            "identity_origin": "system",
        },
    ),
    (
        "extra_response_big_id",
        "E2AResponse",
        {"response_kind": "e2a.chunk", "status": "in_progress", "jsonrpc_id": -(2**80), "body": {"delta": "🚀"}},
    ),
]


def dumps(document: dict[str, Any]) -> str:
    """One fixed JSON rendering for both sides of the comparison (ASCII, so any text survives the file)."""
    return json.dumps(document)


def _vector_cases() -> list[tuple[str, str, dict[str, Any]]]:
    cases = []
    for type_name in TYPES:
        for vector in vectors.load(f"{type_name}.from_dict"):
            # Fixtures are the reference's outputs for well-typed inputs; an ill-typed input's output
            # need not be a valid record (tests/unit/test_vectors.py covers those inputs).
            if "ok" in vector["output"] and WELL_TYPED[type_name](vector["input"]["data"]):
                cases.append((f"{type_name}.from_dict.{vector['i']}", type_name, vector["output"]["ok"]))
    return cases


def write(directory: Path) -> None:
    cases = _vector_cases()
    if not cases:
        raise SystemExit(f"no E2AEnvelope/E2AResponse.from_dict vectors found in {VECTORS_DIR}")
    index = []
    for name, type_name, data in cases + EXTRA_CASES:
        record = TYPES[type_name].from_dict(data)
        expected = record.to_dict()
        if name.startswith(f"{type_name}.from_dict.") and dumps(expected) != dumps(data):
            raise SystemExit(f"{name}: from_dict(ok).to_dict() differs from the vector's ok output")
        (directory / f"{name}.bin").write_bytes(record.to_bytes())
        (directory / f"{name}.json").write_text(dumps(expected), encoding="ascii")
        index.append({"name": name, "type": type_name})
    (directory / "cases.json").write_text(json.dumps(index, indent=1), encoding="ascii")


def decode(directory: Path) -> None:
    for case in json.loads((directory / "cases.json").read_text(encoding="ascii")):
        name = case["name"]
        record = TYPES[case["type"]].from_bytes((directory / f"{name}.go.bin").read_bytes())
        (directory / f"{name}.go.json").write_text(dumps(record.to_dict()), encoding="ascii")


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] not in ("write", "decode"):
        raise SystemExit(__doc__)
    directory = Path(argv[1])
    directory.mkdir(parents=True, exist_ok=True)
    (write if argv[0] == "write" else decode)(directory)


if __name__ == "__main__":
    main(sys.argv[1:])
