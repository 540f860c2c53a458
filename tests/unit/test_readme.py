"""The README's Python examples run as written (the Go and TypeScript ones are run by their own tests)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO_ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block-{index}" for index in range(len(BLOCKS))])
def test_python_example_runs(code: str) -> None:
    exec(compile(code, "README.md", "exec"), {})
