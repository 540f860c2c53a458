"""Section "tswire": the TypeScript wire JSON codec (``clients/ts/e2a_json.mjs``) versus ``JSON.parse`` +
``JSON.stringify``, from ``clients/ts/bench/wire_json_bench.mjs``.

The issue's target: ``envelopeFromJson`` then ``envelopeToJson`` of the ~3 KB multimodal envelope
(workload (b) of the codec section, as wire JSON) takes at most twice as long as ``JSON.parse`` plus
``JSON.stringify`` of the same text, measured in the same Node process (median codec/baseline <= 2.0).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.codec_roundtrip import multimodal_prompt
from bench.report import SectionResult, Target, table
from e2a_grpc import E2AEnvelope

ROUNDS = 15
SECONDS_PER_ROUND = 0.2
#: The most codec/baseline may be (the issue's "within 2x").
TARGET_RATIO = 2.0

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = REPO_ROOT / "clients" / "ts" / "bench" / "wire_json_bench.mjs"
#: A run that takes longer than this is stuck: fail the section rather than hang ``make bench``.
_TIMEOUT_SECONDS = 300

CODEC = "envelopeFromJson + envelopeToJson"
BASELINE = "JSON.parse + JSON.stringify (lossy, checks nothing)"


def measure(rounds: int = ROUNDS) -> dict[str, Any]:
    """The benchmark script's report (µs per round trip, min/median/max per side, median ratio)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    wire = E2AEnvelope.from_dict(multimodal_prompt()).to_json()
    with tempfile.TemporaryDirectory(prefix="e2a-tswire-") as directory:
        envelope = Path(directory) / "envelope.json"
        envelope.write_text(wire, encoding="utf-8")
        done = subprocess.run(
            [node, str(SCRIPT), str(envelope), "--rounds", str(rounds), "--seconds", str(SECONDS_PER_ROUND)],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_SECONDS,
        )
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _us(value: float) -> str:
    return f"{value:.2f}"


def run() -> SectionResult:
    try:
        report = measure()
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        markdown = f"## TypeScript wire JSON codec\n\nNot measured: {detail}\n"
        return SectionResult(markdown, (Target("ts wire JSON codec", False, f"not measured: {exc}"),))
    codec, baseline, ratio = report["codec"], report["baseline"], report["ratio"]
    rows = [
        [label, _us(side["min_us"]), _us(side["median_us"]), _us(side["max_us"])]
        for label, side in ((CODEC, codec), (BASELINE, baseline))
    ]
    passed = ratio <= TARGET_RATIO
    markdown = f"""## TypeScript wire JSON codec vs JSON.parse + JSON.stringify

Target: `envelopeFromJson` then `envelopeToJson` (`clients/ts/e2a_json.mjs`) of the ~3 KB multimodal
`session/prompt` envelope (workload (b) of the codec section, as wire JSON: {report["bytes"]} bytes)
takes at most {TARGET_RATIO:.0f}x the time of `JSON.parse` plus `JSON.stringify` of the same text, i.e.
median codec/baseline <= {TARGET_RATIO:.2f}. The baseline rounds integers beyond 2^53, turns `1.0` into
`1`, checks no field and reads no legacy key: it is the cheapest JavaScript round trip, not an
equivalent codec. The codec's writer does not check again the free-form texts the same message was
read with (a message changed or decoded from protobuf is checked in full).

Method: `node clients/ts/bench/wire_json_bench.mjs` (Node {report["node"]}), each side warmed up, then
{report["rounds"]} rounds of ~{SECONDS_PER_ROUND} s per side, alternating which runs first. Times are µs
per round trip; the ratio is the median over rounds of codec time / baseline time within a round.

{table(["Path", "min µs", "median µs", "max µs"], rows, right=range(1, 4))}

Median codec/baseline: **{ratio:.2f}** ({"PASS" if passed else "FAIL"}).
"""
    target = Target(
        name="ts wire JSON codec",
        passed=passed,
        summary=(
            f"codec {_us(codec['median_us'])} µs vs JSON.parse+stringify {_us(baseline['median_us'])} µs median, "
            f"codec/baseline {ratio:.2f}"
        ),
    )
    return SectionResult(markdown=markdown, targets=(target,))
