"""Fuzz ``e2a_grpc._canonical`` built with AddressSanitizer and UBSan (not part of ``make test``).

Builds the extension (SSE2 and portable) into a temp dir with ``-fsanitize=address,undefined`` and,
for ``--seconds``, feeds both:

- ``is_canonical_object``: mutated JSON texts, whose answers must be orjson's;
- ``floats_finite``: random values (NaN and infinities, subclasses, non-str keys, deep nesting),
  whose answer must be its definition's (``tests/support/canonical_json.py``).

``make fuzz-canonical`` runs it for 30 s (``.ci/run`` does), as (ASan must be loaded first, and
Python's allocator bypassed so ASan sees every buffer)::

    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 PYTHONMALLOC=malloc \\
        .venv/bin/python -m tests.support.tools.fuzz_canonical --seconds 30
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.support.canonical_json import MAX_LEVELS, floats_finite, is_canonical

REPO_ROOT = Path(__file__).resolve().parents[3]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g", "-O1"]


def build(source: Path, directory: Path, name: str, extra: list[str]) -> ModuleType:
    built = directory / f"{name}.so"
    include = "-I" + sysconfig.get_paths()["include"]
    subprocess.run(["cc", "-shared", "-fPIC", *SANITIZE, *extra, include, str(source), "-o", str(built)], check=True)
    spec = importlib.util.spec_from_file_location("e2a_grpc._canonical", built)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mutate(rng: random.Random, data: bytes, alphabet: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(5)
        at = rng.randint(0, len(out))
        if choice == 0 and out:
            out[at % len(out)] = rng.randrange(256)
        elif choice == 1:
            out[at:at] = bytes([rng.choice(alphabet)])
        elif choice == 2:
            del out[at : at + rng.randint(1, 8)]
        elif choice == 3:
            out = out[:at]
        elif out:
            start = rng.randrange(len(out))
            out[at:at] = out[start : start + rng.randint(1, 64)]
    return bytes(out)


class _Text(str):
    pass


_LEAVES: list[Any] = [None, True, 0, 2**70, 1.5, -0.0, math.nan, math.inf, -math.inf, "x", _Text("y"), b"z"]


def random_value(rng: random.Random, levels: int) -> Any:
    """A leaf, or a dict, list or tuple of up to 4 random values, ``levels`` deep at most."""
    if levels == 0 or rng.random() < 0.3:
        return rng.choice(_LEAVES)
    items = [random_value(rng, levels - 1) for _ in range(rng.randint(0, 4))]
    kind = rng.randrange(4)
    if kind == 0:
        return {(f"k{index}" if rng.random() < 0.95 else index): item for index, item in enumerate(items)}
    if kind == 1:
        return tuple(items)
    return items


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", type=Path, default=REPO_ROOT / "src" / "e2a_grpc" / "_canonical.c")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="e2a-canonical-asan-") as directory:
        sse2 = build(arguments.source, Path(directory), "_canonical_asan", [])
        portable = build(arguments.source, Path(directory), "_canonical_asan_portable", ["-U__SSE2__"])
    texts = [
        '{"a":1,"b":[true,false,null,-0.0,1e16,"\\u001f\\n😀"],"c":{"d":{}}}',
        '{"k0":0,' + ",".join(f'"k{n}":{n}' for n in range(1, 20)) + "}",
        '{"a":' + "[" * 253 + "]" * 253 + "}",
        '{"s":"' + "abcdefgh" * 5 + '\\"' + "é" * 9 + '"}',
    ]
    rng = random.Random(arguments.seed)
    deadline = time.monotonic() + arguments.seconds
    counts = {"texts": 0, "canonical": 0, "values": 0}
    while time.monotonic() < deadline:
        for _ in range(200):
            text = mutate(rng, rng.choice(texts).encode(), b'{}[]",:0123456789.eE+-tru\\/\n\x1f\x7f').decode(
                errors="replace"
            )
            expected = is_canonical(text)
            for module in (sse2, portable):
                assert module.is_canonical_object(text) is expected, text
            counts["texts"] += 1
            value = random_value(rng, rng.choice([3, 6]))
            for _ in range(rng.choice([0, 0, MAX_LEVELS - 4, MAX_LEVELS + 2])):  # a long chain around it
                value = [value] if rng.random() < 0.5 else {"k": value}
            assert sse2.floats_finite(value) is floats_finite(value), value
            counts["values"] += 1
            if expected:
                counts["canonical"] += 1
                if len(texts) < 200:
                    texts.append(text)
    print(counts)


if __name__ == "__main__":
    main()
