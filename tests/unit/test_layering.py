"""The package's layers import only downward, its modules import each other without cycles, and no
product or bench code edits sys.path."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

SOURCE = REPO_ROOT / "src" / "e2a_grpc"

#: Top-level parts of ``e2a_grpc``, lowest first: each may import its own layer and those before it.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"_canonical", "errors", "jsontext", "address", "routing", "settings", "a2a_sdk_tracing", "rich_status"}),
    frozenset({"model"}),
    frozenset({"protocols"}),
    frozenset({"conversion"}),
    frozenset({"chat"}),
    frozenset({"broker"}),
    frozenset({"backends"}),  # the bus route (backends/bus.py) is a client of the broker
    frozenset({"grpc"}),
    frozenset({"a2a_server"}),
    frozenset({"client"}),
    frozenset({"cli", "logs", "__main__", "__init__"}),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The ``e2a_grpc`` modules a file imports, anywhere in it (lazy imports count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # ``from package import module`` imports the module
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & modules


def graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in SOURCE.rglob("*.py")}
    # C extensions are modules too (their stubs name them); they import nothing of the package.
    extensions = {module_name(path) for path in SOURCE.rglob("*.pyi")} - set(paths)
    modules = set(paths) | extensions
    return {name: imported_modules(path, modules) - {name} for name, path in paths.items()} | {
        name: set() for name in extensions
    }


def layer_of(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    return next(index for index, layer in enumerate(LAYERS) if top in layer)


def test_every_part_has_a_layer() -> None:
    for module in graph():
        layer_of(module)


def test_imports_point_down() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in graph().items()
        for target in targets
        if layer_of(target) > layer_of(module) and not target.startswith(module + ".")
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    edges = graph()
    # A package imports its own submodules when it re-exports them; that is not a cycle of code.
    for module, targets in edges.items():
        targets.difference_update({t for t in targets if t.startswith(module + ".")})
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_sys_path_edits() -> None:
    for path in [*SOURCE.rglob("*.py"), *(REPO_ROOT / "bench").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        assert "sys.path.append" not in text and "sys.path.insert" not in text, path
