"""Section "gowire": the Go wire JSON codec (``e2ajson``) versus ``encoding/json`` maps, from ``go test -bench``.

The issue's target: ``UnmarshalEnvelope`` then ``MarshalEnvelope`` of the ~3 KB multimodal envelope
(workload (b) of the codec section) is at least as fast as ``encoding/json`` ``Unmarshal`` of the same
text into ``map[string]any`` plus ``Marshal``, measured in the same run (median baseline/codec >= 1.0).

Both are Go benchmarks in ``gen/go/e2ajson/bench_test.go``. The test binary is built once; each round
runs each benchmark once, alternating which goes first, so the two share the machine's drift.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.report import SectionResult, Target, table
from bench.timing import Timing, paired_ratio

ROUNDS = 7
BENCHTIME = "1s"

CODEC = "BenchmarkWireJSONRoundTrip"
BASELINE = "BenchmarkEncodingJSONMapRoundTrip"
LABELS = {
    CODEC: "e2ajson UnmarshalEnvelope + MarshalEnvelope",
    BASELINE: "encoding/json Unmarshal to map[string]any + Marshal",
}

GO_MODULE = Path(__file__).resolve().parent.parent / "gen" / "go"
#: A benchmark result line: name (with the GOMAXPROCS suffix), iterations, ns/op.
_RESULT = re.compile(r"^(Benchmark\w+)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op")
#: A benchmark run that takes longer than this is stuck: fail the section rather than hang ``make bench``.
_TIMEOUT_SECONDS = 300


def _build(go: str, directory: Path) -> Path:
    """Compile the e2ajson test binary once, so the rounds time the benchmarks and not the build."""
    binary = directory / "e2ajson.test"
    subprocess.run(
        [go, "test", "-c", "-o", str(binary), "./e2ajson/"],
        cwd=GO_MODULE,
        check=True,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
    )
    return binary


def _ns_per_op(binary: Path, benchmark: str) -> float:
    done = subprocess.run(
        [str(binary), "-test.run", "^$", "-test.bench", f"^{benchmark}$", "-test.benchtime", BENCHTIME],
        cwd=binary.parent,
        check=True,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
    )
    for line in done.stdout.splitlines():
        match = _RESULT.match(line)
        if match and match.group(1) == benchmark:
            return float(match.group(2))
    raise RuntimeError(f"no result for {benchmark} in the output of {binary.name}:\n{done.stdout}")


def measure(rounds: int = ROUNDS) -> dict[str, Timing]:
    """Per-round µs per round trip of both benchmarks, alternating which runs first."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("the go command is not on PATH")
    samples: dict[str, list[float]] = {CODEC: [], BASELINE: []}
    with tempfile.TemporaryDirectory(prefix="e2a-gowire-") as directory:
        binary = _build(go, Path(directory))
        order = [CODEC, BASELINE]
        for round_index in range(rounds):
            for benchmark in order if round_index % 2 == 0 else reversed(order):
                samples[benchmark].append(_ns_per_op(binary, benchmark) / 1000)
    return {name: Timing(name, 1, tuple(times)) for name, times in samples.items()}


def _us(value: float) -> str:
    return f"{value:.2f}"


def run() -> SectionResult:
    try:
        timings = measure()
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        markdown = f"## Go wire JSON codec\n\nNot measured: {detail}\n"
        return SectionResult(markdown, (Target("go wire JSON codec", False, f"not measured: {exc}"),))
    codec, baseline = timings[CODEC], timings[BASELINE]
    ratio = paired_ratio(baseline, codec)
    rows = [
        [
            LABELS[timing.name],
            _us(timing.min_us),
            _us(timing.median_us),
            _us(max(timing.samples_us)),
            f"{paired_ratio(timing, codec):.2f}",
        ]
        for timing in (codec, baseline)
    ]
    passed = ratio >= 1.0
    markdown = f"""## Go wire JSON codec vs encoding/json

Target: `e2ajson.UnmarshalEnvelope` then `MarshalEnvelope` of the ~3 KB multimodal `session/prompt`
envelope (workload (b) of the codec section, as wire JSON; its output is Python's `to_json()` to the
byte) is at least as fast as `encoding/json` `Unmarshal` of the same text into `map[string]any` plus
`Marshal`, i.e. median baseline/codec >= 1.00. The baseline checks no field, loses key order and
writes keys sorted: it is the cheapest generic Go round trip, not an equivalent codec.

Method: `go test -bench` (`gen/go/e2ajson/bench_test.go`), the test binary built once, {ROUNDS} rounds
of `-benchtime {BENCHTIME}` per benchmark, the two alternating which runs first. Times are µs per
round trip; "time / codec" is the median over rounds of the ratio within a round.

{table(["Path", "min µs", "median µs", "max µs", "time / codec"], rows, right=range(1, 5))}

Median baseline/codec: **{ratio:.2f}** ({"PASS" if passed else "FAIL"}).
"""
    target = Target(
        name="go wire JSON codec",
        passed=passed,
        summary=(
            f"e2ajson {_us(codec.median_us)} µs vs encoding/json maps {_us(baseline.median_us)} µs median, "
            f"baseline/codec {ratio:.2f}"
        ),
    )
    return SectionResult(markdown=markdown, targets=(target,))
