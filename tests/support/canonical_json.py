"""What ``e2a_grpc._canonical`` answers, written in Python: the definitions its C functions are
tested (and fuzzed) against. A canonical JSON object text is defined with orjson itself."""

from __future__ import annotations

import functools
import importlib.util
import math
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

#: The deepest level of nesting ``floats_finite`` walks into (orjson writes no more levels).
MAX_LEVELS = 254


def is_canonical(text: str) -> bool:
    """A JSON object that orjson reads and writes back byte for byte (what ``jsontext.canonical_object``
    stood for before the check was in C)."""
    try:
        value = orjson.loads(text)
        return type(value) is dict and orjson.dumps(value) == text.encode()
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, UnicodeEncodeError):
        return False


def floats_finite(value: Any, level: int = 0) -> bool | None:
    """True if every float in ``value`` is finite, False at the first (depth first, in order) that is
    not, None at the first value of another type than dict (with str keys), list, tuple, str, int,
    bool, None and float (exact types), or container below ``MAX_LEVELS`` levels."""
    if type(value) is float:
        return math.isfinite(value)
    if type(value) in (str, int, bool) or value is None:
        return True
    if level >= MAX_LEVELS or type(value) not in (dict, list, tuple):
        return None
    for key, item in value.items() if type(value) is dict else enumerate(value):
        if type(value) is dict and type(key) is not str:
            return None
        finite = floats_finite(item, level + 1)
        if finite is not True:
            return finite
    return True


@functools.cache
def portable_build() -> ModuleType:
    """The check as CPUs without SSE2 run it (a word-at-a-time scan of string content), built here."""
    # The repository's root, found from here: importing tests.conftest would import e2a_grpc, and the
    # ASan fuzzer must put its own build of _canonical in place before anything imports the package.
    source = Path(__file__).resolve().parents[2] / "src" / "e2a_grpc" / "_canonical.c"
    with tempfile.TemporaryDirectory(prefix="e2a-canonical-") as directory:  # loaded, the file can go
        built = Path(directory) / "_canonical_portable.so"
        include = "-I" + sysconfig.get_paths()["include"]
        subprocess.run(
            ["cc", "-shared", "-fPIC", "-O2", "-U__SSE2__", include, str(source), "-o", str(built)], check=True
        )
        spec = importlib.util.spec_from_file_location("e2a_grpc._canonical", built)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module
