"""Section "codec": what a user does with a record, decode -> read ``params`` / ``body`` -> change one
field -> encode, through the records' codecs and through the baselines doing the same work.

Targets, each measured in the same run as its baseline: on each workload, ``from_json(text)`` + the
field work + ``to_json()`` and ``from_bytes(data)`` + the field work + ``to_bytes()`` are each no
slower than ``json.loads(text)`` + the same work on the dict + ``json.dumps`` (median json/record
>= 1.0). ``from_bytes``/``to_bytes`` against upb's own ``FromString`` + the same work (the free-form
slot's JSON text read with ``orjson.loads``) + ``SerializeToString`` is reported for information:
what the record layer costs over bare protobuf.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from bench.report import SectionResult, Target, table
from bench.timing import Timing, interleaved, paired_ratio
from e2a_grpc import E2AEnvelope, E2AFileRef, E2AResponse

REPEAT = 9
SECONDS_PER_REPEAT = 0.2

RECORD_JSON = "from_json + work + to_json"
JSON = "json.loads + work + json.dumps"
RECORD_BYTES = "from_bytes + work + to_bytes"
RAW_UPB = "upb FromString + work + SerializeToString"
#: The paths the targets hold to the JSON baseline (median json/path >= 1.0).
TARGETED = (RECORD_JSON, RECORD_BYTES)

#: The field the work changes (unset in every workload, as a gateway stamps it), and its new value.
CHANGED_FIELD = "correlation_id"
CHANGED_VALUE = "corr-7d1e5a"

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
    """A record document, and where its field work reads: the free-form slot and a key in it."""

    name: str
    model: type[E2AEnvelope] | type[E2AResponse]
    document: dict[str, Any]
    slot: str
    key: str

    @property
    def text(self) -> str:
        """The document as wire JSON (what ``to_json()`` writes for it)."""
        return self.model.from_dict(self.document).to_json()

    @property
    def data(self) -> bytes:
        return self.model.from_dict(self.document).to_bytes()

    def changed(self) -> dict[str, Any]:
        """The document's record dict after the field work."""
        values = self.model.from_dict(self.document).to_dict()
        values[CHANGED_FIELD] = CHANGED_VALUE
        return values


def workloads() -> list[Workload]:
    """The issue's three workloads (a), (b), (c)."""
    return [
        Workload("(a) spec 11.1 example", E2AEnvelope, SPEC_11_1_EXAMPLE, "params", "content"),
        Workload("(b) multimodal session/prompt", E2AEnvelope, multimodal_prompt(), "params", "prompt"),
        Workload("(c) spec 12.8 chunk frame", E2AResponse, SPEC_12_8_CHUNK, "body", "delta"),
    ]


def contestants(workload: Workload) -> list[tuple[str, Callable[[], object]]]:
    """Each path's decode -> read the slot's key -> set ``CHANGED_FIELD`` -> encode, as closures over
    locals, so no path pays for extra lookups."""
    slot, key, changed_field, changed_value = workload.slot, workload.key, CHANGED_FIELD, CHANGED_VALUE
    text, data = workload.text, workload.data
    from_json, from_bytes = workload.model.from_json, workload.model.from_bytes
    parse = workload.model.CODEC.message_type.FromString
    loads, dumps, orjson_loads = json.loads, json.dumps, orjson.loads

    def record_json() -> str:
        record = from_json(text)
        getattr(record, slot).get(key)
        setattr(record, changed_field, changed_value)
        return record.to_json()

    def plain_json() -> str:
        document = loads(text)
        document[slot].get(key)
        document[changed_field] = changed_value
        return dumps(document)

    def record_bytes() -> bytes:
        record = from_bytes(data)
        getattr(record, slot).get(key)
        setattr(record, changed_field, changed_value)
        return record.to_bytes()

    def raw_upb() -> bytes:
        message = parse(data)
        orjson_loads(getattr(message, slot) or "{}").get(key)  # "" is the wire form of {}
        setattr(message, changed_field, changed_value)
        return message.SerializeToString()

    return [(RECORD_JSON, record_json), (JSON, plain_json), (RECORD_BYTES, record_bytes), (RAW_UPB, raw_upb)]


def check_outputs(workload: Workload) -> None:
    """Refuse to time a path that does not write the changed record (explicit raise: survives -O)."""
    changed = workload.changed()
    record = workload.model.from_dict(changed)
    expected: dict[str, Callable[[Any], bool]] = {
        RECORD_JSON: lambda out: out == record.to_json(),
        JSON: lambda out: json.loads(out) == changed,
        RECORD_BYTES: lambda out: out == record.to_bytes(),
        RAW_UPB: lambda out: out == record.to_bytes(),
    }
    for name, path in contestants(workload):
        if not expected[name](path()):
            raise AssertionError(f"{workload.name}: {name} does not write the changed record")


@dataclass(frozen=True)
class Measured:
    """A workload's timings by path name."""

    workload: Workload
    timings: dict[str, Timing]

    def json_ratio(self, path: str) -> float:
        """The JSON baseline's time over ``path``'s (median of the ratios within a repeat; target >= 1)."""
        return paired_ratio(self.timings[JSON], self.timings[path])

    @property
    def upb_ratio(self) -> float:
        """The record bytes path's time over upb's with the same work."""
        return paired_ratio(self.timings[RECORD_BYTES], self.timings[RAW_UPB])


def _us(value: float) -> str:
    return f"{value:.2f}"


def _target_table(results: list[Measured]) -> str:
    rows = []
    for result in results:
        timings = result.timings
        row = [result.workload.name, _us(timings[JSON].median_us)]
        for path in TARGETED:
            ratio = result.json_ratio(path)
            row += [_us(timings[path].median_us), f"{ratio:.2f}", "PASS" if ratio >= 1.0 else "FAIL"]
        rows.append([*row, _us(timings[RAW_UPB].median_us), f"{result.upb_ratio:.2f}"])
    header = [
        "Workload",
        "json µs",
        "from_json/to_json µs",
        "json/record",
        "Target",
        "from_bytes/to_bytes µs",
        "json/record",
        "Target",
        "upb µs",
        "record bytes/upb",
    ]
    return table(header, rows, right=(1, 2, 3, 5, 6, 8, 9))


def _paths_table(results: list[Measured]) -> str:
    rows = [
        [
            result.workload.name,
            timing.name,
            _us(timing.median_us),
            _us(timing.min_us),
            f"{timing.spread:.2f}",
            str(timing.number),
        ]
        for result in results
        for timing in result.timings.values()
    ]
    header = ["Workload", "Path", "median µs", "min µs", "max/min", "calls per repeat"]
    return table(header, rows, right=range(2, 6))


def _sizes_table(work: list[Workload]) -> str:
    rows = [
        [
            workload.name,
            str(len(workload.data)),
            str(len(json.dumps(workload.changed()).encode())),
            str(len(workload.text.encode())),
        ]
        for workload in work
    ]
    header = ["Workload", "protobuf bytes", "json.dumps bytes", "E2A wire JSON bytes (compact)"]
    return table(header, rows, right=range(1, 4))


def run() -> SectionResult:
    work = workloads()
    for workload in work:
        check_outputs(workload)
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
        Target(
            name=f"codec {path} {result.workload.name}",
            passed=result.json_ratio(path) >= 1.0,
            summary=(
                f"{_us(result.timings[path].median_us)} µs vs json {_us(result.timings[JSON].median_us)} µs "
                f"median, json/record {result.json_ratio(path):.2f}"
            ),
        )
        for result in results
        for path in TARGETED
    )
    markdown = f"""## Codec: decode, read, change one field, encode

Each path decodes the workload's record, reads one key of its free-form slot (`params`, or `body` for
the response), sets `{CHANGED_FIELD}` (unset in every workload) and encodes the record again:

- `{RECORD_JSON}`: `Model.from_json(text)`, the work on the record's attributes, `to_json()`;
- `{JSON}`: `json.loads(text)`, the work on the dict, `json.dumps` (the baseline of the targets);
- `{RECORD_BYTES}`: `Model.from_bytes(data)`, the same work, `to_bytes()`;
- `{RAW_UPB}`: upb's `FromString(data)`, the slot's JSON text read with `orjson.loads`, the field set
  on the message, `SerializeToString()`: bare protobuf, for information.

Targets: on each workload both record paths are no slower than the JSON baseline, i.e. median
json/record >= 1.00. Before timing, each path is checked to write the changed record (the JSON
baseline: text that `json.loads` reads as its dict).

Method: `timeit` (gc off while timing), {REPEAT} repeats of ~{SECONDS_PER_REPEAT} s per path,
the paths of a workload interleaved (order alternating each repeat) so they share the machine's drift.
"json/record" is the median over repeats of the ratio of the two times within a repeat (timed back
to back); "record bytes/upb" likewise. "max/min" is the slowest over the fastest repeat of a path:
the noise level.

{_target_table(results)}

All paths:

{_paths_table(results)}

Encoded sizes:

{_sizes_table(work)}
"""
    return SectionResult(markdown=markdown, targets=targets)
