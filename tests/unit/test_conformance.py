"""The conformance suite of conformance/: the Python testee passes every case, the committed cases are
what conformance/build_cases.py writes, and the runner fails testees that break the rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.subprocess  # the testees and build_cases.py run as processes

CONFORMANCE = REPO_ROOT / "conformance"
PYTHON_TESTEE = CONFORMANCE / "testees" / "python_testee.py"

# A testee that answers like the Python one, then changes the answer with ``mutate`` (None: no answer).
FAKE_TESTEE = """
import json, re, runpy, sys, time

convert = runpy.run_path({testee!r})["convert"]


def mutate(request, answer):
{body}


for line in sys.stdin:
    request = json.loads(line)
    answer = mutate(request, convert(request))
    if answer is not None:
        print(json.dumps(answer), flush=True)
"""


def _run(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CONFORMANCE / "run.py"), *arguments],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=240,
    )


def _fake_testee(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake_testee.py"
    indented = "\n".join(f"    {line}" for line in body.strip().splitlines())
    script.write_text(FAKE_TESTEE.format(testee=str(PYTHON_TESTEE), body=indented), encoding="utf-8")
    return f"{sys.executable} {script}"


def test_python_testee_passes_every_case() -> None:
    result = _run("--testee", "python")
    assert result.returncode == 0, result.stdout + result.stderr
    cases = sum(1 for line in (CONFORMANCE / "cases.jsonl").read_text(encoding="utf-8").splitlines() if line)
    assert result.stdout.strip() == f"python: {cases} passed, 0 failed"


def test_cases_file_is_what_build_cases_writes(tmp_path: Path) -> None:
    output = tmp_path / "cases.jsonl"
    subprocess.run(
        [sys.executable, str(CONFORMANCE / "build_cases.py"), "--output", str(output)],
        check=True,
        capture_output=True,
        cwd=REPO_ROOT,
        timeout=240,
    )
    assert output.read_bytes() == (CONFORMANCE / "cases.jsonl").read_bytes(), (
        "conformance/cases.jsonl is stale: run .venv/bin/python conformance/build_cases.py"
    )


WIRE_ONLY = 'if request["to"] != "wire_json" or "payload" not in answer:\n    return answer\n'

BROKEN_TESTEES = {
    "reorders keys": (
        WIRE_ONLY
        + 'document = json.loads(answer["payload"], object_pairs_hook=lambda pairs: dict(reversed(pairs)))\n'
        + 'return {**answer, "payload": json.dumps(document, separators=(",", ":"), ensure_ascii=False)}',
        "keys [",
    ),
    "writes 1 for 1.0": (
        WIRE_ONLY + r'return {**answer, "payload": re.sub(r"(\d)\.0(?=[,}\]])", r"\1", answer["payload"])}',
        "expected, got integer",
    ),
    "escapes non-ASCII": (
        WIRE_ONLY
        + r'return {**answer, "payload": re.sub("[\u0080-\uffff]", lambda m: "\\u%04x" % ord(m.group()), answer["payload"])}',
        "byte rules",
    ),
    "adds spaces": (
        WIRE_ONLY + 'return {**answer, "payload": answer["payload"].replace(\'","\', \'", "\')}',
        "byte rules",
    ),
    "names the wrong field": (
        'if "error" in answer:\n    answer["error"]["field"] = "params.wrong"\nreturn answer',
        "expected an error naming",
    ),
    "answers with an error instead": (
        'if request["id"] == 1:\n    return {"id": 1, "error": {"field": "", "message": "no"}}\nreturn answer',
        "expected a payload, got the error",
    ),
    "changes a protobuf answer": (
        'if request["to"] == "protobuf" and "payload" in answer:\n    return {**answer, "payload": ""}\nreturn answer',
        "expected, got",
    ),
    "writes protobuf that does not decode": (
        'if request["to"] == "protobuf" and "payload" in answer:\n    return {**answer, "payload": "/w=="}\nreturn answer',
        "does not decode",
    ),
    "stops answering": ('if request["id"] > 5:\n    sys.exit(0)\nreturn answer', "exited after 5 answers"),
    "never answers": ("time.sleep(60)", "no answer for 2 s"),
}


@pytest.mark.parametrize(("body", "reported"), BROKEN_TESTEES.values(), ids=BROKEN_TESTEES.keys())
def test_runner_fails_a_broken_testee(tmp_path: Path, body: str, reported: str) -> None:
    result = _run("--command", _fake_testee(tmp_path, body), "--timeout", "2", "--show", "3")
    assert result.returncode == 1, result.stdout + result.stderr
    assert reported in result.stdout, result.stdout
    assert " 0 failed" not in result.stdout


def test_protobuf_free_form_text_is_compared_as_json(tmp_path: Path) -> None:
    """A testee writing params in protobuf as pretty-printed JSON text with the same values passes."""
    body = """
if request["to"] != "protobuf" or "payload" not in answer:
    return answer
import base64
from e2a.v1 import e2a_pb2
message = getattr(e2a_pb2, "E2AEnvelope" if request["message"] == "envelope" else "E2AResponse").FromString(base64.b64decode(answer["payload"]))
for name in ("params", "body", "channel_context"):
    if name in message.DESCRIPTOR.fields_by_name and getattr(message, name):
        setattr(message, name, json.dumps(json.loads(getattr(message, name)), indent=1) + "\\n")
return {**answer, "payload": base64.b64encode(message.SerializeToString()).decode()}
"""
    result = _run("--command", _fake_testee(tmp_path, body))
    assert result.returncode == 0, result.stdout + result.stderr


def test_unknown_testee_name_is_an_error() -> None:
    result = _run("--testee", "cobol")
    assert result.returncode != 0
    assert "unknown testee 'cobol'" in result.stderr
