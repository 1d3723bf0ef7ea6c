"""The package's layers, read from the source by a static scan of every import.

The core (belief, health, recovery, sentinel, monitor, roles, updater) must ship without the harness: its
imports, followed transitively, reach nothing in agents, bench, cli or envs. No two folders
import each other, directly or through others.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pos_agent"
CORE = ("belief", "health", "recovery", "sentinel", "monitor", "roles", "updater")
HARNESS = ("agents", "bench", "cli", "envs")


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("pos_agent", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imported(name: str, tree: ast.AST) -> Iterator[str]:
    """The package modules a module imports (anywhere in it), with the packages they run."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for target in targets:
            if not target.startswith("pos_agent"):
                continue
            parts = target.split(".")
            for end in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
                prefix = ".".join(parts[:end])
                if prefix in MODULES:
                    yield prefix


def _graph() -> dict[str, set[str]]:
    return {
        name: set(_imported(name, ast.parse(path.read_text(encoding="utf-8"))))
        for name, path in MODULES.items()
    }


GRAPH = _graph()


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pos_agent"


def _reach(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in GRAPH[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def _folder_cycle() -> list[str] | None:
    """One cycle among the folders' import arrows, or None."""
    edges: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        src = _folder(module)
        edges.setdefault(src, set()).update(
            _folder(t) for t in targets if _folder(t) not in (src, "pos_agent")
        )
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_scan_sees_the_imports_it_must_judge() -> None:
    # The scan itself can fail: the agent imports the belief engine and the sentinel.
    assert "pos_agent.belief" in _reach("pos_agent.agents.pos.agent")
    assert any(_folder(m) == "sentinel" for m in _reach("pos_agent.agents.pos.agent"))


def test_no_folder_level_import_cycle() -> None:
    assert _folder_cycle() is None, " -> ".join(_folder_cycle() or [])


@pytest.mark.parametrize("folder", CORE)
def test_the_core_reaches_nothing_of_the_harness(folder: str) -> None:
    starts = [m for m in MODULES if _folder(m) == folder]
    assert starts, f"no module in {folder}/"
    bad = {
        f"{start} -> {reached}"
        for start in starts
        for reached in _reach(start)
        if _folder(reached) in HARNESS
    }
    assert not bad, sorted(bad)[:10]


@pytest.mark.parametrize(
    "module", ["pos_agent.sentinel.audit", "pos_agent.recovery", "pos_agent.updater"]
)
def test_a_core_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_module_level_import_cycle_in_the_core() -> None:
    # Between plain modules (a package's __init__ re-exports its modules; it is left out), e.g.
    # health/window.py once imported health/improved.py, which builds on window's types.
    plain = {m for m, p in MODULES.items() if p.name != "__init__.py" and _folder(m) in CORE}
    cycles = [
        f"{a} <-> {b}"
        for a in sorted(plain)
        for b in sorted(GRAPH[a] & plain)
        if a != b and a in _reach_plain(b, plain)
    ]
    assert not cycles, cycles


def _reach_plain(start: str, plain: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in (GRAPH[todo.pop()] & plain) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_the_monitor_imports_without_the_model_layer_or_any_third_party_package() -> None:
    # The monitor, the belief engine, health and recovery load no pos_agent.llm and no pydantic:
    # they are what an engineer embeds in any loop (the belief updater and the events need
    # pydantic; they are not imported here).
    code = (
        "import sys; import pos_agent.monitor, pos_agent.belief, pos_agent.health, "
        "pos_agent.recovery; "
        "print(sorted(m for m in sys.modules if m.startswith(('pos_agent.llm', 'pydantic', "
        "'pos_agent.roles'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
