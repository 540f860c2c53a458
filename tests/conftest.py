"""Shared test fixtures: where the conformance vectors live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
VECTORS_DIR = Path(os.environ.get("E2A_VECTORS_DIR", REPO_ROOT.parent / "shared" / "vectors"))


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    if not VECTORS_DIR.is_dir():
        pytest.fail(f"conformance vectors not found at {VECTORS_DIR} (set E2A_VECTORS_DIR)")
    return VECTORS_DIR
