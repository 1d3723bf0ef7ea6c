"""Facades instead of back doors, one home per type, no import cycles, small modules: read from
the source by a static scan, for the model layer, the environments and the core.

- Nothing outside `pos_agent.llm` and `pos_agent.envs` imports one of their `_private` modules
  or names (src/, the pos-trapbench package, benchmarks/): `pos_agent.llm`,
  `pos_agent.llm.backend` and `pos_agent.envs` export what their neighbours use.
- The transition record has one home, `pos_agent.transition`: no module imports it from
  anywhere else, renames it, or lists it in its `__all__`.
- No module-level import cycle among the modules of these packages.
- No module over 500 lines, no function over 80, in them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ROOTS = (SRC / "pos_agent", REPO / "trapbench" / "src" / "pos_trapbench", REPO / "benchmarks")
FACADES = ("pos_agent.llm", "pos_agent.envs")
# The packages this file keeps in order (top-level modules of pos_agent: "pos_agent").
AREA = (
    "pos_agent",
    "belief",
    "health",
    "recovery",
    "sentinel",
    "monitor",
    "events",
    "llm",
    "envs",
    "roles",
    "updater",
)


def _files() -> Iterator[Path]:
    for root in ROOTS:
        yield from sorted(root.rglob("*.py"))


def _module(path: Path) -> str | None:
    """The dotted name of a file under src/ (None for benchmarks/ and the like)."""
    for base in (SRC, REPO / "trapbench" / "src"):
        if path.is_relative_to(base):
            parts = path.relative_to(base).with_suffix("").parts
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return None


def _imports(tree: ast.AST) -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    """(module, [(name, as name)]) for every `from module import ...` and `import module`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, [(alias.name, alias.asname) for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


TREES = {path: ast.parse(path.read_text(encoding="utf-8")) for path in _files()}


def _private_reach(module: str, names: list[tuple[str, str | None]]) -> str | None:
    """The facade whose private module or name this import reaches into, if any."""
    for facade in FACADES:
        if module != facade and not module.startswith(facade + "."):
            continue
        rest = module[len(facade) :].split(".")
        if any(part.startswith("_") for part in rest if part):
            return facade
        if any(name.startswith("_") and not name.startswith("__") for name, _ in names):
            return facade
    return None


def test_no_module_reaches_into_the_model_layer_or_the_environments() -> None:
    found = []
    for path, tree in TREES.items():
        here = _module(path) or ""
        for module, names in _imports(tree):
            facade = _private_reach(module, names)
            if facade is not None and not (here == facade or here.startswith(facade + ".")):
                found.append(f"{path.relative_to(REPO)}: {module} {[n for n, _ in names]}")
    assert not found, found


def test_the_scan_sees_a_back_door() -> None:
    assert _private_reach("pos_agent.llm._local", [("LlamaCppBackend", None)]) == "pos_agent.llm"
    assert _private_reach("pos_agent.envs", [("_registry", None)]) == "pos_agent.envs"
    assert _private_reach("pos_agent.llm.backend", [("LlamaCppBackend", None)]) is None


def test_the_transition_record_has_one_home() -> None:
    found = []
    for path, tree in TREES.items():
        for module, names in _imports(tree):
            for name, alias in names:
                if name == "Transition" and (module != "pos_agent.transition" or alias):
                    found.append(f"{path.relative_to(REPO)}: from {module} import {name}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and "Transition" in ast.literal_eval(node.value)
            ):
                found.append(f"{path.relative_to(REPO)} lists Transition in __all__")
    assert not found, found


def _area_graph() -> dict[str, set[str]]:
    modules = {
        name: path
        for path in TREES
        if (name := _module(path)) is not None and name.startswith("pos_agent")
    }
    in_area = {m for m in modules if (m.split(".")[1] if "." in m else "pos_agent") in AREA}
    graph: dict[str, set[str]] = {}
    for name in in_area:
        targets: set[str] = set()
        for module, names in _imports(TREES[modules[name]]):
            # `from a.b import c` runs a.b, and a.b.c when that is a module; the packages on
            # the way (a) are already running when a module of theirs imports a sibling.
            for target in (module, *(f"{module}.{n}" for n, _ in names)):
                if target in in_area and target != name and not name.startswith(target + "."):
                    targets.add(target)
        graph[name] = targets
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph (module -> the modules it imports), or None."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        return list(error.args[1])
    return None


def test_no_module_level_import_cycle_in_the_core_the_model_layer_or_the_environments() -> None:
    graph = _area_graph()
    assert "pos_agent.llm._cpu" in graph["pos_agent.llm._local"]  # the scan sees the imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_search_finds_a_cycle() -> None:
    assert sorted(set(_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) or [])) == [
        "a",
        "b",
        "c",
    ]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _in_area(path: Path) -> bool:
    name = _module(path)
    if name is None or not name.startswith("pos_agent"):
        return False
    return (name.split(".")[1] if "." in name else "pos_agent") in AREA


@pytest.mark.parametrize(
    "path", [p for p in TREES if _in_area(p)], ids=lambda p: str(p.relative_to(SRC))
)
def test_modules_and_functions_stay_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 500, f"{path.relative_to(REPO)}: {lines} lines"
    long = [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(TREES[path])
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > 80
    ]
    assert not long, long


@pytest.mark.parametrize("module", ["pos_agent.llm", "pos_agent.llm.backend", "pos_agent.envs"])
def test_a_facade_loads_no_heavy_backend(module: str) -> None:
    code = (
        f"import sys, {module}; "
        "print(sorted(m for m in ('llama_cpp', 'openai', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
