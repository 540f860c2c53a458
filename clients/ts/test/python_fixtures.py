"""Write the Python reference's fixtures of e2a_json.test.mjs: ``.venv/bin/python clients/ts/test/python_fixtures.py``.

vector_errors.json: for each vector input the reference rejects, the field it names, found with
``E2AEnvelope/E2AResponse.from_json(json.dumps(input["data"])).to_proto()``; spec_wire.json: the
reference's wire JSON of each spec example (``from_proto(from_json(text).to_proto()).to_json()``).
"""

from __future__ import annotations

import json
from pathlib import Path

from e2a_grpc import E2AEnvelope, E2AFieldError, E2AResponse

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VECTOR_FILES = {
    "E2AEnvelope.from_dict": E2AEnvelope,
    "E2AEnvelope.roundtrip": E2AEnvelope,
    "E2AResponse.from_dict": E2AResponse,
}
SKIPPED_SPEC = {"11.4-0.json"}  # e2a_json.test.mjs leaves it out


def vector_errors() -> dict[str, str]:
    errors = {}
    for name, record in VECTOR_FILES.items():
        for line in (ROOT / "testdata" / "vectors" / f"{name}.jsonl").read_text().splitlines():
            case = json.loads(line)
            try:
                record.from_json(json.dumps(case["input"]["data"])).to_proto()
            except E2AFieldError as exc:
                errors[f"{name}:{case['i']}"] = exc.field
    return errors


def spec_wire() -> dict[str, str]:
    wire = {}
    for path in sorted((ROOT / "testdata" / "spec").iterdir()):
        if path.name in SKIPPED_SPEC:
            continue
        record = E2AResponse if path.name.startswith("12.") else E2AEnvelope
        wire[path.name] = record.from_proto(record.from_json(path.read_text()).to_proto()).to_json()
    return wire


def main() -> None:
    (HERE / "vector_errors.json").write_text(json.dumps(vector_errors(), indent=2) + "\n")
    (HERE / "spec_wire.json").write_text(json.dumps(spec_wire(), indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
