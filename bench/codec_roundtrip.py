"""Section "codec": dict -> protobuf bytes -> dict versus ``json.loads(json.dumps(...))`` of the same dict,
and the record round trips ``from_json(text).to_json()`` and ``from_bytes(data).to_bytes()``.

The targets, each measured in the same run as its baseline: on each workload the protobuf round trip
of the canonical dict is no slower than the standard-library JSON round trip of that dict (median
json/protobuf ratio >= 1.0); ``from_json(text).to_json()`` is no slower than
``json.dumps(json.loads(text))`` of the same wire JSON text (median >= 1.0); and
``from_bytes(data).to_bytes()`` takes at most 3x upb's own ``FromString(data).SerializeToString()``.
The model-object path and the encoded sizes are reported for information.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.report import SectionResult, Target, table
from bench.timing import Timing, interleaved, paired_ratio
from e2a_grpc import E2AEnvelope, E2AFileRef, E2AResponse, jsontext

REPEAT = 9
SECONDS_PER_REPEAT = 0.2

PROTOBUF = "protobuf dict round trip"
JSON = "json.dumps + json.loads"
MODEL = "model objects (from_dict/to_bytes/from_bytes/to_dict)"
RECORD_JSON = "from_json(text).to_json()"
TEXT_JSON = "json.dumps(json.loads(text))"
RECORD_BYTES = "from_bytes(data).to_bytes()"
RAW_UPB = "upb FromString(data).SerializeToString()"
#: ``from_bytes(data).to_bytes()`` over upb's own parse + serialize, at most.
BYTES_LIMIT = 3.0

SPEC_11_1_EXAMPLE: dict[str, Any] = {
    "protocol_version": "1.0",
    "request_id": "req_abc_01",
    "session_id": "sess_xyz",
    "channel": "web",
    "method": "chat.send",
    "is_stream": True,
    "timestamp": "2026-03-28T12:00:00+00:00",
    "identity_origin": "user",
    "user_id": "u_001",
    "params": {"content": "Hello", "mode": "plan", "query": "Hello"},
    "provenance": {"source_protocol": "e2a"},
}

SPEC_12_8_CHUNK: dict[str, Any] = {
    "protocol_version": "1.0",
    "response_id": "r1",
    "request_id": "req_1",
    "sequence": 0,
    "is_final": False,
    "status": "in_progress",
    "response_kind": "e2a.chunk",
    "timestamp": "2026-03-29T12:00:00+00:00",
    "provenance": {"source_protocol": "e2a"},
    "body": {"delta_kind": "text", "delta": "Hello"},
}

#: Raw bytes of the stand-in image: sized so that ``json.dumps`` of the whole envelope is about 3 KB.
_IMAGE_BYTES = 1200


def multimodal_prompt() -> dict[str, Any]:
    """An ACP ``session/prompt`` envelope with a text block, a base64 image block and three file refs.

    Deterministic (the image bytes come from SHAKE-256 of a fixed seed) so runs compare like for like.
    """
    png_signature = b"\x89PNG\r\n\x1a\n"
    image = png_signature + hashlib.shake_256(b"e2a-grpc bench image").digest(_IMAGE_BYTES - len(png_signature))
    files = [
        E2AFileRef(
            uri="file:///workspace/src/app/main.py",
            name="main.py",
            mime_type="text/x-python",
            size=4821,
            _meta={"sha256": hashlib.sha256(b"main.py").hexdigest(), "lines": 142},
        ),
        E2AFileRef(
            uri="file:///workspace/docs/design.md",
            name="design.md",
            mime_type="text/markdown",
            size=12034,
            _meta={"encoding": "utf-8"},
        ),
        # No size: its canonical dict carries JSON nulls, as real file lists do.
        E2AFileRef(uri="https://example.com/assets/screenshot.png", name="screenshot.png", mime_type="image/png"),
    ]
    return {
        "protocol_version": "1.0",
        "request_id": "req_mm_0001",
        "jsonrpc_id": 42,
        "session_id": "sess_mm_7f3a9c",
        "timestamp": "2026-03-30T09:15:00+00:00",
        "identity_origin": "user",
        "channel": "ide",
        "user_id": "u_001",
        "method": "session/prompt",
        "is_stream": True,
        "params": {
            "sessionId": "sess_mm_7f3a9c",
            "prompt": [
                {
                    "type": "text",
                    "text": "What is wrong in this screenshot? The files below drew it.",
                },
                {"type": "image", "mimeType": "image/png", "data": base64.b64encode(image).decode("ascii")},
            ],
            "files": [file.to_dict() for file in files],
        },
        "provenance": {"source_protocol": "acp", "converter": "bench", "details": {"kind": "acp_jsonrpc"}},
    }


@dataclass(frozen=True)
class Workload:
    """A canonical dict and the codec functions and model class for its message type."""

    name: str
    canon: dict[str, Any]
    to_bytes: Callable[[Mapping[str, Any]], bytes]
    from_bytes: Callable[[bytes], dict[str, Any]]
    model: type[E2AEnvelope] | type[E2AResponse]


def workloads() -> list[Workload]:
    """The issue's three workloads (a), (b), (c), each already in canonical form."""
    envelope = (E2AEnvelope.dict_to_bytes, E2AEnvelope.dict_from_bytes, E2AEnvelope)
    response = (E2AResponse.dict_to_bytes, E2AResponse.dict_from_bytes, E2AResponse)
    return [
        Workload("(a) spec 11.1 example", E2AEnvelope.from_dict(SPEC_11_1_EXAMPLE).to_dict(), *envelope),
        Workload("(b) multimodal session/prompt", E2AEnvelope.from_dict(multimodal_prompt()).to_dict(), *envelope),
        Workload("(c) spec 12.8 chunk frame", E2AResponse.from_dict(SPEC_12_8_CHUNK).to_dict(), *response),
    ]


def contestants(workload: Workload) -> list[tuple[str, Callable[[], object]]]:
    """The round trips as closures over locals, so no path pays for extra attribute lookups."""
    canon, encode, decode, model = workload.canon, workload.to_bytes, workload.from_bytes, workload.model
    dumps, loads = json.dumps, json.loads
    from_dict, from_bytes, from_json = model.from_dict, model.from_bytes, model.from_json
    text, data = wire_text(workload), encode(canon)
    parse = model.CODEC.message_type.FromString
    return [
        (PROTOBUF, lambda: decode(encode(canon))),
        (JSON, lambda: loads(dumps(canon))),
        (MODEL, lambda: from_bytes(from_dict(canon).to_bytes()).to_dict()),
        (RECORD_JSON, lambda: from_json(text).to_json()),
        (TEXT_JSON, lambda: dumps(loads(text))),
        (RECORD_BYTES, lambda: from_bytes(data).to_bytes()),
        (RAW_UPB, lambda: parse(data).SerializeToString()),
    ]


def wire_text(workload: Workload) -> str:
    """The workload's E2A wire JSON text (what ``to_json()`` writes for its canonical dict)."""
    return workload.model.from_dict(workload.canon).to_json()


def check_round_trips(workload: Workload) -> None:
    """Refuse to time a path that does not give back its input (explicit raise: survives -O)."""
    text, data = wire_text(workload), workload.to_bytes(workload.canon)
    expected = {RECORD_JSON: text, TEXT_JSON: json.dumps(json.loads(text)), RECORD_BYTES: data, RAW_UPB: data}
    for name, round_trip in contestants(workload):
        if round_trip() != expected.get(name, workload.canon):
            raise AssertionError(f"{workload.name}: {name} does not return its input")


@dataclass(frozen=True)
class Measured:
    """A workload's timings by path name, and the json/protobuf ratios the target is judged on."""

    workload: Workload
    timings: dict[str, Timing]

    @property
    def median_ratio(self) -> float:
        return paired_ratio(self.timings[JSON], self.timings[PROTOBUF])

    @property
    def min_ratio(self) -> float:
        return self.timings[JSON].min_us / self.timings[PROTOBUF].min_us

    @property
    def json_ratio(self) -> float:
        """json.dumps(json.loads(text)) time over from_json(text).to_json() time (target >= 1)."""
        return paired_ratio(self.timings[TEXT_JSON], self.timings[RECORD_JSON])

    @property
    def bytes_ratio(self) -> float:
        """from_bytes(data).to_bytes() time over upb's parse + serialize time (target <= BYTES_LIMIT)."""
        return paired_ratio(self.timings[RECORD_BYTES], self.timings[RAW_UPB])


def _us(value: float) -> str:
    return f"{value:.2f}"


def _target_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        protobuf, baseline = result.timings[PROTOBUF], result.timings[JSON]
        rows.append(
            [
                result.workload.name,
                _us(protobuf.median_us),
                _us(baseline.median_us),
                f"{result.median_ratio:.2f}",
                _us(protobuf.min_us),
                _us(baseline.min_us),
                f"{result.min_ratio:.2f}",
                "PASS" if result.median_ratio >= 1.0 else "FAIL",
            ]
        )
    header = [
        "Workload",
        "protobuf median µs",
        "JSON median µs",
        "json/protobuf (median)",
        "protobuf min µs",
        "JSON min µs",
        "json/protobuf (min)",
        "Target",
    ]
    return table(header, rows, right=range(1, 7))


def _record_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        timings = result.timings
        rows.append(
            [
                result.workload.name,
                _us(timings[RECORD_JSON].median_us),
                _us(timings[TEXT_JSON].median_us),
                f"{result.json_ratio:.2f}",
                "PASS" if result.json_ratio >= 1.0 else "FAIL",
                _us(timings[RECORD_BYTES].median_us),
                _us(timings[RAW_UPB].median_us),
                f"{result.bytes_ratio:.2f}",
                "PASS" if result.bytes_ratio <= BYTES_LIMIT else "FAIL",
            ]
        )
    header = [
        "Workload",
        "from_json().to_json() µs",
        "json.loads+dumps µs",
        "json/record (median)",
        "Target",
        "from_bytes().to_bytes() µs",
        "upb parse+serialize µs",
        "record/upb (median)",
        "Target",
    ]
    return table(header, rows, right=(1, 2, 3, 5, 6, 7))


def _paths_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        protobuf = result.timings[PROTOBUF]
        for timing in result.timings.values():
            rows.append(
                [
                    result.workload.name,
                    timing.name,
                    _us(timing.median_us),
                    _us(timing.min_us),
                    f"{paired_ratio(timing, protobuf):.2f}",
                    f"{timing.spread:.2f}",
                    str(timing.number),
                ]
            )
    header = ["Workload", "Path", "median µs", "min µs", "time / protobuf dict path", "max/min", "calls per repeat"]
    return table(header, rows, right=range(2, 7))


def _sizes_table(work: list[Workload]) -> str:
    rows = [
        [
            workload.name,
            str(len(workload.to_bytes(workload.canon))),
            str(len(json.dumps(workload.canon).encode())),
            str(len(jsontext.dumps(workload.canon).encode())),
        ]
        for workload in work
    ]
    header = ["Workload", "protobuf bytes", "json.dumps bytes", "E2A wire JSON bytes (compact)"]
    return table(header, rows, right=range(1, 4))


def run() -> SectionResult:
    work = workloads()
    for workload in work:
        check_round_trips(workload)
    results = [
        Measured(
            workload,
            {
                timing.name: timing
                for timing in interleaved(contestants(workload), repeat=REPEAT, seconds=SECONDS_PER_REPEAT)
            },
        )
        for workload in work
    ]
    targets = tuple(
        target
        for result in results
        for target in (
            Target(
                name=f"codec {result.workload.name}",
                passed=result.median_ratio >= 1.0,
                summary=(
                    f"protobuf {_us(result.timings[PROTOBUF].median_us)} µs vs JSON "
                    f"{_us(result.timings[JSON].median_us)} µs median, json/protobuf {result.median_ratio:.2f}"
                ),
            ),
            Target(
                name=f"codec from_json().to_json() {result.workload.name}",
                passed=result.json_ratio >= 1.0,
                summary=(
                    f"{_us(result.timings[RECORD_JSON].median_us)} µs vs json.loads+dumps "
                    f"{_us(result.timings[TEXT_JSON].median_us)} µs median, json/record {result.json_ratio:.2f}"
                ),
            ),
            Target(
                name=f"codec from_bytes().to_bytes() {result.workload.name}",
                passed=result.bytes_ratio <= BYTES_LIMIT,
                summary=(
                    f"{_us(result.timings[RECORD_BYTES].median_us)} µs vs upb "
                    f"{_us(result.timings[RAW_UPB].median_us)} µs median, record/upb {result.bytes_ratio:.2f}"
                ),
            ),
        )
    )
    markdown = f"""## Codec round trip: protobuf vs JSON

Target: for each workload, canonical dict -> protobuf bytes -> dict
(`Model.dict_from_bytes(Model.dict_to_bytes(canon))`) is no slower than
`json.loads(json.dumps(canon))` on the same dict, i.e. median json/protobuf >= 1.00.
`canon` is `E2AEnvelope.from_dict(doc).to_dict()` (or `E2AResponse`), every key present.
Before timing, each path is checked to return a dict equal to `canon`.

Method: `timeit` (gc off while timing), {REPEAT} repeats of ~{SECONDS_PER_REPEAT} s per path,
the paths of a workload interleaved (order alternating each repeat) so they share the machine's drift.
Times are per round trip (encode + decode). "json/protobuf (median)" is the median over repeats of
the ratio of the two times within a repeat (timed back to back); the target uses it.
"json/protobuf (min)" is the ratio of the two minimums. "max/min" is the slowest over the fastest
repeat of a path: the noise level.

{_target_table(results)}

Record round trips: `from_json(text).to_json()` against `json.dumps(json.loads(text))` of the same
wire JSON text (target: median json/record >= 1.00), and `from_bytes(data).to_bytes()` against upb's
own `FromString(data).SerializeToString()` of the same bytes (target: median record/upb <= {BYTES_LIMIT:.2f}).
Both records are written unread (docs/design-notes.md, "Unread records"): every check of reading
still runs, the decoding into attributes does not.

{_record_table(results)}

All paths (the model-object path is informational, not part of the target):

{_paths_table(results)}

Encoded sizes:

{_sizes_table(work)}
"""
    return SectionResult(markdown=markdown, targets=targets)
