"""The source distribution carries what `make test` needs, and the wheel the generated package."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def _build(kind: str, out: Path) -> Path:
    # setuptools' PEP 517 backend, called directly (no isolated build environment, so no download).
    code = f"from setuptools import build_meta as b; print(b.build_{kind}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    archive = _build("sdist", tmp_path_factory.mktemp("sdist"))
    with tarfile.open(archive) as tar:
        return {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}


@pytest.mark.parametrize(
    "path",
    [
        "LICENSE",
        "proto/e2a/v1/e2a.proto",
        "tests/conftest.py",
        "tests/support/strategies.py",
        "tests/support/agents/acp_agent.py",
        "testdata/vectors/E2AEnvelope.from_dict.jsonl",
        "testdata/spec/11.1-0.json",
        "src/e2a/v1/e2a_pb2.py",
        "src/e2a_grpc/model/records.py",
        "src/e2a_grpc/_canonical.c",
        "setup.py",
        "Makefile",
        "codegen/generate.sh",
    ],
)
def test_sdist_holds(sdist_names: set[str], path: str) -> None:
    assert path in sdist_names


def test_wheel_installs_the_generated_package_at_its_proto_path(tmp_path: Path) -> None:
    with zipfile.ZipFile(_build("wheel", tmp_path)) as wheel:
        names = set(wheel.namelist())
    assert {"e2a/v1/e2a_pb2.py", "e2a/v1/e2a_pb2.pyi", "e2a_grpc/py.typed", "e2a_grpc/model/records.py"} <= names
    assert not any(name.startswith(("tests/", "bench/")) for name in names)
    # The C extension, built for this interpreter, and its stub.
    assert "e2a_grpc/_canonical.pyi" in names
    assert any(name.startswith("e2a_grpc/_canonical.") and name.endswith(".so") for name in names)


def test_an_e2a_directory_of_the_user_does_not_hide_the_generated_package(tmp_path: Path) -> None:
    # ``e2a`` is a namespace package: a directory of the same name in the working directory (here
    # with a module of its own) is merged with it, not put in its place.
    (tmp_path / "e2a").mkdir()
    (tmp_path / "e2a" / "mine.py").write_text("VALUE = 1\n")
    code = "import e2a_grpc, e2a.mine; from e2a.v1 import e2a_pb2; print(e2a.mine.VALUE, e2a_pb2.DESCRIPTOR.package)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "e2a.v1"]
