"""Run the E2A conformance cases against testees: implementations that speak the line protocol of
conformance/README.md on stdin/stdout.

    .venv/bin/python conformance/run.py                      # every testee in conformance/testees.json
    .venv/bin/python conformance/run.py --testee python      # a subset (repeatable)
    .venv/bin/python conformance/run.py --command './my-testee --flag'   # a third party's testee

Wire JSON answers are compared as JSON (key order, integer vs float, exact numeric values, strings)
and against the byte rules of docs/wire-json.md (compact separators, escaping); protobuf answers are
decoded and compared as E2A records, their free-form JSON texts as JSON; errors by the field they
name. Exits 1 if any case fails or is not answered.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from google.protobuf.message import DecodeError, Message

from e2a_grpc import E2AEnvelope, E2AFieldError, E2AResponse
from e2a_grpc.model.fields import Kind

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ROOT / "conformance" / "cases.jsonl"
TESTEES_FILE = ROOT / "conformance" / "testees.json"
RECORD_TYPES: dict[str, type[E2AEnvelope] | type[E2AResponse]] = {"envelope": E2AEnvelope, "response": E2AResponse}

# --- JSON as the comparison sees it --------------------------------------------------------------


@dataclass(frozen=True)
class Number:
    """A JSON number: its kind ("integer", or "float" when written with a fraction or exponent),
    its exact value and the text it was written as."""

    kind: str
    value: Decimal
    text: str

    def same_as(self, other: Number) -> bool:
        # Decimal("-0.0") == Decimal("0.0"): the sign of a float zero is compared on its own.
        sign_differs = self.kind == "float" and self.value == 0 and self.value.is_signed() != other.value.is_signed()
        return self.kind == other.kind and self.value == other.value and not sign_differs

    def __str__(self) -> str:
        return f"{self.kind} {self.text}"


class Members(list[tuple[str, Any]]):
    """A JSON object as its members in order (duplicates kept)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(text: str) -> Any:
    """JSON text as nested ``Members`` / lists / ``Number`` / str / bool / None; ValueError if not JSON."""
    return json.loads(
        text,
        object_pairs_hook=Members,
        parse_float=lambda number: Number("float", Decimal(number), number),
        parse_int=lambda number: Number("integer", Decimal(number), number),
        parse_constant=_reject_constant,
    )


def _describe(value: Any) -> str:
    if isinstance(value, Members):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Number):
        return str(value)
    return json.dumps(value, ensure_ascii=True)


def difference(expected: Any, actual: Any, path: str = "$") -> str | None:
    """Where and how two parsed JSON values differ, or None if they are the same."""
    if isinstance(expected, Members) and isinstance(actual, Members):
        expected_keys, actual_keys = [key for key, _ in expected], [key for key, _ in actual]
        if expected_keys != actual_keys:
            return f"{path}: keys {expected_keys} expected, got {actual_keys}"
        for (key, expected_item), (_, actual_item) in zip(expected, actual, strict=True):
            found = difference(expected_item, actual_item, f"{path}.{key}")
            if found:
                return found
        return None
    if type(expected) is list and type(actual) is list:
        if len(expected) != len(actual):
            return f"{path}: {len(expected)} items expected, got {len(actual)}"
        for index, (expected_item, actual_item) in enumerate(zip(expected, actual, strict=True)):
            found = difference(expected_item, actual_item, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(expected, Number) and isinstance(actual, Number):
        return None if expected.same_as(actual) else f"{path}: {expected} expected, got {actual}"
    if type(expected) is type(actual) and expected == actual:
        return None
    return f"{path}: {_describe(expected)} expected, got {_describe(actual)}"


# --- the byte rules of docs/wire-json.md ---------------------------------------------------------

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES = {chr(code): f"\\u{code:04x}" for code in range(0x20)} | {
    chr(code): f"\\u{code:04x}" for code in range(0xD800, 0xE000)
}
_ESCAPES.update(_SHORT_ESCAPES)
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def canonical_text(value: Any) -> str:
    """A parsed value written by the document's byte rules, each number as the text it was read from."""
    parts: list[str] = []
    _write_canonical(value, parts)
    return "".join(parts)


def _write_canonical(value: Any, parts: list[str]) -> None:
    # Plain loops, one stack frame per level: documents nest up to 512 levels.
    if isinstance(value, Members):
        parts.append("{")
        for index, (key, item) in enumerate(value):
            parts.append(f'{"," if index else ""}"{key.translate(_ESCAPE_TABLE)}":')
            _write_canonical(item, parts)
        parts.append("}")
    elif isinstance(value, list):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _write_canonical(item, parts)
        parts.append("]")
    elif isinstance(value, Number):
        parts.append(value.text)
    elif isinstance(value, str):
        parts.append('"' + value.translate(_ESCAPE_TABLE) + '"')
    else:
        parts.append(json.dumps(value))  # true, false, null


def _first_difference(expected: str, actual: str) -> str:
    offset = next(
        (index for index, (left, right) in enumerate(zip(expected, actual, strict=False)) if left != right),
        min(len(expected), len(actual)),
    )
    start = max(0, offset - 30)
    return (
        f"at character {offset}: expected ...{expected[start : offset + 30]!r}..., "
        f"got ...{actual[start : offset + 30]!r}..."
    )


def check_wire_json(expected_text: str, actual_text: str) -> str | None:
    """Why ``actual_text`` is not the expected wire JSON, or None."""
    try:
        actual = parse(actual_text)
    except (ValueError, RecursionError) as exc:
        return f"not JSON text: {exc}"
    found = difference(parse(expected_text), actual)
    if found:
        return found
    canonical = canonical_text(actual)
    if canonical != actual_text:
        return f"byte rules (separators, escaping) broken {_first_difference(canonical, actual_text)}"
    return None


# --- protobuf answers, compared as records ---------------------------------------------------------


def _free_form_fields(record_type: type[E2AEnvelope] | type[E2AResponse]) -> dict[str, Any]:
    """Top-level free-form fields and what their empty text means (``{}``, or null for agent_ref)."""
    defaults = {Kind.OBJECT: Members(), Kind.OPTIONAL_OBJECT: None}
    return {item.name: defaults[item.kind] for item in record_type.FIELDS if item.kind in defaults}


def _set_member(members: Members, key: str, value: Any) -> None:
    members[[name for name, _ in members].index(key)] = (key, value)


def _get_member(members: Members, key: str) -> Any:
    return dict(members)[key]


def record_tree(message_name: str, data: bytes) -> Any:
    """Protobuf bytes as the record they encode, as a parsed wire JSON tree whose free-form values
    come from parsing the message's own JSON texts (not from the reference's re-encoding)."""
    record_type = RECORD_TYPES[message_name]
    message: Message = record_type.CODEC.message_type.FromString(data)
    texts: dict[tuple[str, ...], tuple[str, Any]] = {}  # wire path -> (text, meaning of "")
    for name, default in _free_form_fields(record_type).items():
        texts[(name,)] = (getattr(message, name), default)
        message.ClearField(name)
    for parent, child, key in (("provenance", "details", "details"), ("auth", "meta", "_meta")):
        if parent in message.DESCRIPTOR.fields_by_name and message.HasField(parent):
            nested = getattr(message, parent)
            texts[(parent, key)] = (getattr(nested, child), Members())
            nested.ClearField(child)
    tree = parse(record_type.from_proto(message).to_json())  # type: ignore[arg-type]  # the record type's own message
    for path, (text, default) in texts.items():
        members = tree
        for key in path[:-1]:
            members = _get_member(members, key)
        try:
            value = parse(text) if text else default
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{'.'.join(path)} is not JSON text: {exc}") from None
        _set_member(members, path[-1], value)
    return tree


def check_protobuf(message_name: str, expected_payload: str, actual_payload: str) -> str | None:
    """Why the base64 protobuf ``actual_payload`` is not the expected record, or None."""
    try:
        data = base64.b64decode(actual_payload, validate=True)
        actual = record_tree(message_name, data)
    except (binascii.Error, DecodeError, E2AFieldError, ValueError) as exc:
        return f"answer does not decode as an E2A {message_name}: {exc}"
    return difference(record_tree(message_name, base64.b64decode(expected_payload)), actual)


# --- running a testee ---------------------------------------------------------------------------


@dataclass
class Failure:
    case: dict[str, Any]
    reason: str


@dataclass
class Result:
    name: str
    passed: int = 0
    failures: list[Failure] = field(default_factory=list)
    unanswered: int = 0
    problems: list[str] = field(default_factory=list)  # about the testee as a whole


def check_answer(case: dict[str, Any], answer: dict[str, Any]) -> str | None:
    """Why ``answer`` does not pass ``case``, or None."""
    expect = case["expect"]
    error = answer.get("error")
    if "error" in expect:
        wanted = expect["error"]["field"]
        if error is None:
            return f"expected an error naming {wanted!r}, got a payload"
        if not isinstance(error, dict) or error.get("field") != wanted:
            return f"expected an error naming {wanted!r}, got {json.dumps(error, ensure_ascii=False)}"
        return None
    if error is not None:
        return f"expected a payload, got the error {json.dumps(error, ensure_ascii=False)}"
    payload = answer.get("payload")
    if not isinstance(payload, str):
        return "the answer has neither a string payload nor an error"
    if case["to"] == "wire_json":
        return check_wire_json(expect["payload"], payload)
    return check_protobuf(case["message"], expect["payload"], payload)


def _request_line(case: dict[str, Any]) -> bytes:
    request = {key: case[key] for key in ("id", "message", "from", "to", "payload")}
    return (json.dumps(request, ensure_ascii=True, separators=(",", ":")) + "\n").encode()


def _feed(stdin: IO[bytes], cases: list[dict[str, Any]]) -> None:
    try:
        for case in cases:
            stdin.write(_request_line(case))
        stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the testee exited early: its missing answers are reported


def _drain(stdout: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    for line in stdout:
        lines.put(line)
    lines.put(None)


def collect_answers(
    argv: list[str], cases: list[dict[str, Any]], timeout: float, result: Result
) -> dict[int, dict[str, Any]]:
    """Run one testee process over every case; its answers by id. Problems go to ``result``."""
    answers: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryFile() as stderr:
        try:
            process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT)
        except OSError as exc:
            result.problems.append(f"could not start {shlex.join(argv)}: {exc}")
            return answers
        assert process.stdin is not None and process.stdout is not None
        case_ids = {case["id"] for case in cases}
        lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=_feed, args=(process.stdin, cases), daemon=True).start()
        threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True).start()
        while len(answers) < len(cases):
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                result.problems.append(f"no answer for {timeout:g} s after {len(answers)} answers: stopped it")
                break
            if line is None:
                result.problems.append(f"exited after {len(answers)} answers")
                break
            _take_answer(line, case_ids, answers, result)
        process.kill()
        process.wait()
        stderr.seek(0)
        text = stderr.read().decode(errors="replace").strip()
        if text and result.problems:
            result.problems.append("its stderr ends with:\n" + text[-2000:])
    return answers


def _take_answer(line: bytes, case_ids: set[int], answers: dict[int, dict[str, Any]], result: Result) -> None:
    try:
        answer = json.loads(line.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        result.problems.append(f"answer line is not UTF-8 JSON ({exc}): {line[:200]!r}")
        return
    number = answer.get("id") if isinstance(answer, dict) else None
    if not isinstance(number, int) or number not in case_ids or number in answers:
        result.problems.append(f"answer to no open request: {line[:200]!r}")
        return
    answers[number] = answer


def run_testee(name: str, argv: list[str], cases: list[dict[str, Any]], timeout: float) -> Result:
    result = Result(name)
    answers = collect_answers(argv, cases, timeout, result)
    for case in cases:
        answer = answers.get(case["id"])
        if answer is None:
            result.unanswered += 1
            result.failures.append(Failure(case, "not answered"))
            continue
        reason = check_answer(case, answer)
        if reason is None:
            result.passed += 1
        else:
            result.failures.append(Failure(case, reason))
    return result


def report(result: Result, shown: int, write: Callable[[str], Any]) -> None:
    failed = len(result.failures)
    unanswered = f" ({result.unanswered} not answered)" if result.unanswered else ""
    write(f"{result.name}: {result.passed} passed, {failed} failed{unanswered}\n")
    for problem in result.problems:
        write(f"  testee: {problem}\n")
    for failure in [item for item in result.failures if item.reason != "not answered"][:shown]:
        case = failure.case
        write(f"  #{case['id']} {case['name']} [{case['message']} {case['from']} -> {case['to']}]\n")
        write(f"      {failure.reason}\n")


def load_cases(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _testees(arguments: argparse.Namespace) -> Iterator[tuple[str, list[str]]]:
    registered: dict[str, list[str]] = json.loads(TESTEES_FILE.read_text(encoding="utf-8"))
    names = arguments.testee or ([] if arguments.command else list(registered))
    for name in names:
        if name not in registered:
            raise SystemExit(f"unknown testee {name!r}; {TESTEES_FILE.name} has {', '.join(registered)}")
        yield name, registered[name]
    for command in arguments.command or []:
        yield command, shlex.split(command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--testee", action="append", help="a testee named in conformance/testees.json (repeatable)")
    parser.add_argument("--command", action="append", help="the command line of another testee (repeatable)")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="cases file (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each answer (default: 30)")
    parser.add_argument("--show", type=int, default=10, help="failures shown per testee (default: 10)")
    arguments = parser.parse_args(argv)
    cases = load_cases(arguments.cases)
    all_passed = True
    for name, command in _testees(arguments):
        result = run_testee(name, command, cases, arguments.timeout)
        report(result, arguments.show, sys.stdout.write)
        all_passed = all_passed and not result.failures and not result.problems
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
