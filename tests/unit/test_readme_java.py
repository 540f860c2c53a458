"""The README's Java examples are the code that clients/java's ReadmeExamplesTest compiles and runs."""

from __future__ import annotations

import re
import textwrap

import pytest

from tests.conftest import REPO_ROOT

TEST_FILE = REPO_ROOT / "clients/java/src/test/java/io/e2a/v1/ReadmeExamplesTest.java"


def java_section() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("\n## Using the schema from Java\n", 1)[1].split("\n## ", 1)[0]


def example_bodies() -> dict[str, str]:
    """Each ``static void`` example method of the test, by name: its body, dedented."""
    source = TEST_FILE.read_text(encoding="utf-8")
    bodies = {}
    for match in re.finditer(r"\n  static void (\w+)\([^)]*\) throws Exception \{\n(.*?)\n  \}\n", source, re.S):
        bodies[match.group(1)] = textwrap.dedent(match.group(2))
    return bodies


def readme_blocks() -> list[str]:
    """The README's java blocks without their import lines (the test file imports at its top)."""
    blocks = re.findall(r"```java\n(.*?)```", java_section(), re.S)
    return [
        "\n".join(line for line in block.splitlines() if not line.startswith("import ")).strip() for block in blocks
    ]


def test_the_test_has_the_examples() -> None:
    assert set(example_bodies()) == {"readAndWriteWireJson", "callTheService"}


@pytest.mark.parametrize("name", ["readAndWriteWireJson", "callTheService"])
def test_readme_shows_the_example_unchanged(name: str) -> None:
    assert example_bodies()[name].strip() in readme_blocks()
