"""The second protobuf/gRPC stack of the interop tests: betterproto2 messages and grpclib stubs.

They are generated from ``proto/`` at test time (``generate``), so they always follow the schema and
nothing generated is committed. betterproto2 encodes and decodes in pure Python without importing
``google.protobuf``, and grpclib speaks HTTP/2 through the pure-Python ``h2``: nothing is shared
with protobuf's upb runtime or grpcio's C core, which is what makes agreement meaningful.

Why betterproto2 0.10 (+ betterproto2-compiler 0.10) and not betterproto 2.0.0b7: both install
beside our pins (protobuf 7.36, grpcio 1.85, Python 3.11) and both generate grpclib clients, but
- 2.0.0b7 is still a beta and the original project's last release; betterproto2 is its maintained fork;
- 2.0.0b7 drops a submessage whose fields all have default values when the message is built in
  Python (``E2AEnvelope(auth=E2AAuth())`` encodes without ``auth``), while E2A reads an absent
  ``auth`` as null and an empty one as ``{}``: betterproto2 types submessages ``X | None`` and keeps
  that presence (checked by ``test_betterproto.test_built_by_hand``);
- 2.0.0b7's compiler pulls in black and isort<6; betterproto2-compiler formats with ruff, which
  the dev environment has anyway.

``same_fields`` and ``to_betterproto`` walk the upb descriptor, find betterproto2 classes by full
proto name (betterproto2's message pool) and fields by number, so they need no knowledge of
betterproto2's Python naming (``FromACPRecord`` becomes ``FromAcpRecord``, ``ToA2AStream``
becomes ``to_a_2_a_stream``).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import betterproto2

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTO_DIR = REPO_ROOT / "proto"
# The generated modules live in this package (``<PACKAGE>.e2a.v1``), so they cannot clash with the
# grpcio-generated ``e2a.v1`` package.
PACKAGE = "e2a_betterproto_gen"
PLUGIN = "protoc-gen-python_betterproto2"


def generate(parent: Path) -> ModuleType:
    """Generate ``<parent>/<PACKAGE>`` from proto/ and import its ``e2a.v1`` module.

    ``parent`` is left on sys.path for the rest of the session (the caller owns its lifetime).
    """
    bindir = Path(sys.executable).parent
    plugin = bindir / PLUGIN
    if not plugin.is_file():
        raise RuntimeError(f"{plugin} not found: install the dev extra (pip install -e '.[dev]')")
    out = parent / PACKAGE
    out.mkdir()
    protos = sorted(str(path.relative_to(PROTO_DIR)) for path in PROTO_DIR.rglob("*.proto"))
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"--plugin={PLUGIN}={plugin}",
        f"--python_betterproto2_out={out}",
        # Async clients are the grpclib ones; the default ("sync") would generate grpcio stubs.
        "--python_betterproto2_opt=client_generation=async",
        *protos,
    ]
    # The plugin formats its output by running `ruff` from PATH, so the virtualenv's bin must be on it
    # even when pytest was started as .venv/bin/python without activating the environment. cwd=out:
    # on failure the plugin writes invalid-generated-code.py into the current directory.
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(command, cwd=out, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"betterproto2 generation failed ({done.returncode}):\n{done.stderr}")
    sys.path.insert(0, str(parent))
    return importlib.import_module(f"{PACKAGE}.e2a.v1")


def _names_by_number(cls: type) -> dict[int, str]:
    return {betterproto2.FieldMetadata.get(f).number: f.name for f in dataclasses.fields(cls)}


def same_fields(upb: Any, bp: Any, path: str = "") -> None:
    """Assert that a betterproto2 message holds exactly the values of a upb message, presence included."""
    names = _names_by_number(type(bp))
    numbers = [fd.number for fd in upb.DESCRIPTOR.fields]
    assert sorted(names) == sorted(numbers), f"{path or '<root>'}: field numbers differ between the stacks"
    for fd in upb.DESCRIPTOR.fields:
        where = f"{path}.{fd.name}" if path else fd.name
        want, got = getattr(upb, fd.name), getattr(bp, names[fd.number])
        if fd.is_repeated:
            assert len(got) == len(want), f"{where}: {len(got)} elements in betterproto2, {len(want)} in upb"
            for index, (want_item, got_item) in enumerate(zip(want, got, strict=True)):
                _same_value(fd, want_item, got_item, f"{where}[{index}]")
        elif fd.has_presence and not upb.HasField(fd.name):
            assert got is None, f"{where}: absent in upb but {got!r} in betterproto2"
        else:
            _same_value(fd, want, got, where)


def _same_value(fd: Any, want: Any, got: Any, where: str) -> None:
    if fd.message_type is not None:
        assert got is not None, f"{where}: present in upb but absent in betterproto2"
        same_fields(want, got, where)
        return
    if fd.enum_type is not None:
        got = int(got)
    # repr keeps apart what == would not: 1 vs 1.0 vs True, and 0.0 vs -0.0.
    assert repr(got) == repr(want), f"{where}: {got!r} in betterproto2, {want!r} in upb"


def message_class(descriptor: Any) -> Any:
    """The generated betterproto2 class of a message, by its full proto name (e.g. ``e2a.v1.E2AEnvelope``)."""
    pool = importlib.import_module(f"{PACKAGE}.message_pool").default_message_pool
    return pool.url_to_type[f"type.googleapis.com/{descriptor.full_name}"]


def to_betterproto(upb: Any) -> Any:
    """Build (not parse) the betterproto2 message holding the field values of a upb message."""
    cls = message_class(upb.DESCRIPTOR)
    names = _names_by_number(cls)
    values: dict[str, Any] = {}
    for fd in upb.DESCRIPTOR.fields:
        if fd.is_repeated:
            values[names[fd.number]] = [_convert(fd, item, cls) for item in getattr(upb, fd.name)]
        elif not fd.has_presence or upb.HasField(fd.name):
            values[names[fd.number]] = _convert(fd, getattr(upb, fd.name), cls)
    return cls(**values)


def _convert(fd: Any, value: Any, owner: type) -> Any:
    if fd.message_type is not None:
        return to_betterproto(value)
    if fd.enum_type is not None:
        # Enums keep their proto names (IdentityOrigin, AcpDialect) in the owner's module.
        return getattr(sys.modules[owner.__module__], fd.enum_type.name)(value)
    return value
