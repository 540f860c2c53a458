"""The TypeScript codec of the E2A wire JSON (clients/ts/e2a_json.mjs) against the Python reference.

Runs its node:test suite (vectors, spec examples, edge cases, legacy keys, error paths, README
example), type-checks its declarations with the TypeScript compiler that clients/ts/node_modules
holds, and talks to its conformance testee: a few requests checked here against Python directly,
then the whole conformance suite (conformance/run.py).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.errors import E2AFieldError
from tests.interop.test_node_client import _ensure_node_modules

pytestmark = pytest.mark.subprocess  # Node.js runs the TypeScript codec

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = REPO_ROOT / "clients" / "ts"
TESTEE = CLIENT_DIR / "conformance_testee.mjs"
TIMEOUT = 300.0


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.fail("node (Node.js >= 20) is not on PATH: it is needed to run the TypeScript codec")
    _ensure_node_modules()
    return path


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=REPO_ROOT, input=stdin, capture_output=True, encoding="utf-8", timeout=TIMEOUT, check=False
    )


def test_node_test_suite_passes(node: str) -> None:
    run = _run([node, "--test", "clients/ts/test/"])
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-4000:]
    counts = {key: int(value) for key, value in re.findall(r"^# (tests|pass|fail) (\d+)$", run.stdout, re.MULTILINE)}
    assert counts["fail"] == 0, report[-4000:]
    assert counts["pass"] >= 400, f"too few tests ran: {counts}"


def test_declarations_type_check(node: str) -> None:
    tsc = CLIENT_DIR / "node_modules" / "typescript" / "bin" / "tsc"
    if not tsc.is_file():
        pytest.fail("clients/ts/node_modules has no typescript (a dependency of @bufbuild/protoc-gen-es): run npm ci")
    run = _run([node, str(tsc), "-p", "clients/ts/test"])
    assert run.returncode == 0, run.stdout + run.stderr


def _python_answer(request: dict[str, Any]) -> dict[str, Any]:
    """What the reference answers: the input read as the protobuf message, written in the target form."""
    record_type = E2AEnvelope if request["message"] == "envelope" else E2AResponse
    payload = request["payload"]
    try:
        if request["from"] == "wire_json":
            record = record_type.from_bytes(record_type.from_json(payload).to_bytes())
        else:
            record = record_type.from_bytes(base64.b64decode(payload))
        if request["to"] == "wire_json":
            return {"id": request["id"], "payload": record.to_json()}
        return {"id": request["id"], "payload": base64.b64encode(record.to_bytes()).decode()}
    except E2AFieldError as error:
        return {"id": request["id"], "error": {"field": error.field}}


def _as_record(answer: dict[str, Any], request: dict[str, Any]) -> str:
    """An answer's payload as the wire JSON Python writes for it, so numbers and bytes compare by value."""
    record_type = E2AEnvelope if request["message"] == "envelope" else E2AResponse
    if request["to"] == "wire_json":
        return record_type.from_json(answer["payload"]).to_json()
    return record_type.from_bytes(base64.b64decode(answer["payload"])).to_json()


def test_testee_answers_like_python(node: str) -> None:
    legacy = (REPO_ROOT / "testdata" / "spec" / "11.2-0.json").read_text(encoding="utf-8")
    big = '{"jsonrpc_id":18446744073709551617,"params":{"n":-123456789012345678901234567890,"x":1.0,"s":"\\ud800é"}}'
    response = '{"sequence":7,"status":"succeeded","body":{"delta":"hi","f":1e-7},"jsonrpc_id":2.5}'
    envelope_bytes = base64.b64encode(E2AEnvelope.from_json(big).to_bytes()).decode()
    response_bytes = base64.b64encode(E2AResponse.from_json(response).to_bytes()).decode()
    requests: list[dict[str, Any]] = [
        {"message": "envelope", "from": "wire_json", "to": "wire_json", "payload": legacy},
        {"message": "envelope", "from": "wire_json", "to": "protobuf", "payload": big},
        {"message": "envelope", "from": "protobuf", "to": "wire_json", "payload": envelope_bytes},
        {"message": "envelope", "from": "protobuf", "to": "protobuf", "payload": envelope_bytes},
        {"message": "response", "from": "wire_json", "to": "protobuf", "payload": response},
        {"message": "response", "from": "protobuf", "to": "wire_json", "payload": response_bytes},
        {"message": "envelope", "from": "wire_json", "to": "protobuf", "payload": '{"auth":{"extra_headers":{"X":1}}}'},
        {"message": "response", "from": "wire_json", "to": "wire_json", "payload": '{"sequence":9223372036854775808}'},
        {"message": "envelope", "from": "protobuf", "to": "wire_json", "payload": "/w=="},
    ]
    for number, request in enumerate(requests):
        request["id"] = number
    run = _run([node, str(TESTEE)], "".join(json.dumps(request) + "\n" for request in requests))
    assert run.returncode == 0, run.stderr
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [request["id"] for request in requests]
    for request, answer in zip(requests, answers, strict=True):
        expected = _python_answer(request)
        if "error" in expected:
            assert answer.get("error", {}).get("field") == expected["error"]["field"], (request, answer)
        else:
            assert "payload" in answer, (request, answer)
            assert _as_record(answer, request) == _as_record(expected, request), request


def test_conformance_suite(node: str) -> None:
    run = _run([sys.executable, "conformance/run.py", "--testee", "ts"])
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert re.search(r": \d+ passed, 0 failed", run.stdout), run.stdout[-4000:]
