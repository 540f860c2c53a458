"""The README's table of A2A errors is the code's table (``e2a_grpc.a2a_server.errors.A2A_ERRORS``)."""

from __future__ import annotations

import re

from e2a_grpc.a2a_server.errors import A2A_ERRORS
from tests.conftest import REPO_ROOT
from tests.support.a2a_errors import json_rpc_code

_ROW = re.compile(r"^\| `(\w+)`[^|]*\| (\w+) \| (-\d+) \| (yes|no) \|$", re.M)


def test_the_readme_table_lists_every_refusal_with_its_code() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    rows = {reason: (name, int(code), retryable == "yes") for reason, name, code, retryable in _ROW.findall(readme)}
    expected = {
        str(reason): (error_class.__name__, json_rpc_code(reason), retryable)
        for reason, (error_class, retryable) in A2A_ERRORS.items()
    }
    assert rows == expected
