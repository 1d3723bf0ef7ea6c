"""The harness's own layout, read from the source: no import cycle between its modules (the
runner uses the executors, never the reverse; the PoS agent does not import the method table
above it), no `_private` name of a harness package imported from outside it, and no module or
function too long to read (500 and 80 lines) in the harness, the benchmarks and trapbench."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "pos_agent"
HARNESS = ("agents", "bench", "serve", "cli")
# agents/context/ is laid out by its own work (issue 36's other half); it joins once done.
NOT_YET = ("pos_agent.agents.context",)
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _module_name(path: Path, base: Path, top: str) -> str:
    parts = (top, *path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p, PACKAGE, "pos_agent"): p for p in PACKAGE.rglob("*.py")}


def _targets(name: str, path: Path, tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Every dotted name a module imports (modules and the names taken from them), absolute."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, node.lineno
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def _imports(name: str) -> set[str]:
    """The package modules `name` imports, with the packages importing them runs, but not its
    own ancestors (importing a sibling always runs the parent's __init__ first)."""
    path = MODULES[name]
    found = set()
    for target, _ in _targets(name, path, ast.parse(path.read_text(encoding="utf-8"))):
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in MODULES and not name.startswith(prefix + ".") and prefix != name:
                found.add(prefix)
    return found


def _in_harness(module: str) -> bool:
    parts = module.split(".")
    return len(parts) > 1 and parts[1] in HARNESS and not module.startswith(NOT_YET)


def _cycles() -> list[list[str]]:
    """The strongly connected groups of more than one harness module (Tarjan)."""
    nodes = sorted(m for m in MODULES if _in_harness(m))
    edges = {m: sorted(t for t in _imports(m) if _in_harness(t)) for m in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in nodes:
        if node not in index:
            visit(node)
    return groups


def test_the_scan_sees_the_arrows_it_must_judge() -> None:
    # The scan can fail: the runner imports the executors, the CLI the runner.
    assert "pos_agent.bench.executors" in _imports("pos_agent.bench.runner")
    assert "pos_agent.bench.runner" in _imports("pos_agent.cli.bench")
    assert "pos_agent.bench" not in _imports("pos_agent.bench.runner"), "its own package"


def test_no_import_cycle_between_harness_modules() -> None:
    assert _cycles() == []


@pytest.mark.parametrize(
    ("module", "above"),
    [
        ("pos_agent.bench.executors.local", "pos_agent.bench.runner"),
        ("pos_agent.bench.executors.ray", "pos_agent.bench.runner"),
        ("pos_agent.agents.pos.agent", "pos_agent.agents.methods"),
    ],
)
def test_a_layer_does_not_reach_the_one_above_it(module: str, above: str) -> None:
    seen: set[str] = set()
    todo = [module]
    while todo:
        for nxt in _imports(todo.pop()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    assert above not in seen


def _sources() -> Iterator[tuple[str, Path]]:
    """Every module that may import the harness: the package, the tests, the benchmarks and
    trapbench, by dotted name."""
    yield from MODULES.items()
    for folder, top in (
        (ROOT / "tests", "tests"),
        (ROOT / "benchmarks", "benchmarks"),
        (ROOT / "trapbench" / "src" / "pos_trapbench", "pos_trapbench"),
    ):
        for path in folder.rglob("*.py"):
            yield _module_name(path, folder, top), path


def test_no_private_harness_name_is_imported_from_another_package() -> None:
    bad = []
    for name, path in _sources():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target, line in _targets(name, path, ast.parse(path.read_text(encoding="utf-8"))):
            parts = target.split(".")
            if not _in_harness(target):
                continue
            for at, part in enumerate(parts):
                owner = ".".join(parts[:at])
                if part.startswith("_") and not part.startswith("__"):
                    if package != owner and not package.startswith(owner + "."):
                        bad.append(f"{path.relative_to(ROOT)}:{line} {target}")
                    break
    assert bad == []


def _measured() -> Iterator[Path]:
    for folder in HARNESS:
        for path in (PACKAGE / folder).rglob("*.py"):
            if not _module_name(path, PACKAGE, "pos_agent").startswith(NOT_YET):
                yield path
    yield from (ROOT / "benchmarks").rglob("*.py")
    yield from (ROOT / "trapbench" / "src").rglob("*.py")


def test_modules_and_functions_stay_short() -> None:
    long = []
    for path in _measured():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            long.append(f"{where}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if (size := (node.end_lineno or start) - start + 1) > MAX_FUNCTION_LINES:
                    long.append(f"{where}:{node.lineno} {node.name}: {size} lines")
    assert long == []
