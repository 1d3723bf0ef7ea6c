"""The repository's layout, read from the source by a static scan of every import: the library
(`src/pos_agent`), the trap benchmark (`trapbench/src/pos_trapbench`) and the benchmark scripts
(`benchmarks/`).

The rules, each with a self-test that makes it fail on a small synthetic tree:

1. **Layers.** `LAYERS` is the one table of the layer order, bottom up; a module imports only
   from its own layer or the ones below it, and every top-level folder or module has a row.
2. **No import cycles**, at the module level (between any two modules) and at the package
   level (between the children of any one package, each child standing for its whole subtree).
3. **No back doors.** No module imports a `_private` module or a `_private` name that belongs to
   another package; a package's own subtree may use its private parts. A private name of a
   module belongs to the module's package, so siblings may share it.
4. **Short modules and functions:** no module over 500 lines, no function over 80.
5. **One home for the transition record** (`pos_agent.transition`): no re-export shims.

Which imports count: every `import` in a module, at its top or inside a function. A lazy import
in a function defers a heavy third-party package; it is still an arrow of the design, so it
counts for cycles and layers like a top-level one. An import under `if TYPE_CHECKING:` never
runs and only names a type for the checker: it is left out of the graph (cycles and layers),
but a private name imported there is still a back door (rule 3 reads every import). A module's
own ancestor packages are already running when it runs, so importing one of them is no arrow.
Tests are not scanned: a unit test may open a private module to test it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = {
    "pos_agent": REPO / "src" / "pos_agent",
    "pos_trapbench": REPO / "trapbench" / "src" / "pos_trapbench",
    "benchmarks": REPO / "benchmarks",
}
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

# The layer order, bottom up: a row's units (a top-level folder or module, dotted) import only
# from their own row and the rows below it. The monitor and all it stands on (the rows up to its
# adapters) load no model layer; nothing up to the belief updater reaches the environments, the
# agents or the harness. The Sentinel's rules need no model but its audit calls one, so the
# `sentinel` package stands above the roles.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "the vocabulary",
        (
            "pos_agent",
            "pos_agent.kinds",
            "pos_agent.errors",
            "pos_agent.tokens",
            "pos_agent.redaction",
        ),
    ),
    ("health (Eq. 4-6)", ("pos_agent.health",)),
    ("belief", ("pos_agent.belief",)),
    ("the transition record", ("pos_agent.transition",)),
    ("recovery (Eq. 7)", ("pos_agent.recovery",)),
    ("the trap monitor", ("pos_agent.monitor",)),
    ("the monitor's adapters", ("pos_agent.telemetry", "pos_agent.adapters")),
    ("the trace events", ("pos_agent.events",)),
    ("the model layer", ("pos_agent.cost", "pos_agent.llm")),
    ("traces", ("pos_agent.trace",)),
    ("the model-calling roles", ("pos_agent.roles",)),
    ("the sentinel", ("pos_agent.sentinel",)),
    ("the belief updater", ("pos_agent.updater",)),
    ("the environments", ("pos_agent.data", "pos_agent.envs")),
    ("the agents", ("pos_agent.agents",)),
    ("the harness", ("pos_agent.bench",)),
    ("the proxy", ("pos_agent.serve",)),
    ("the command line", ("pos_agent.cli",)),
    ("beside the library", ("pos_trapbench", "benchmarks")),
)


# -- the scan -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    target: str  # absolute and dotted: a module, or a name in one (`a.b.c` of `from a.b import c`)
    line: int
    typing_only: bool  # under `if TYPE_CHECKING:`
    renamed: bool = False  # `import ... as other`


@dataclass(frozen=True)
class Function:
    name: str
    line: int
    size: int  # lines, its decorators included


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    lines: int
    imports: tuple[Import, ...]
    functions: tuple[Function, ...]
    exported: tuple[str, ...]  # its `__all__`

    @property
    def package(self) -> str:
        """The package a relative import starts from: itself for an `__init__`."""
        return self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]


def scan(roots: Mapping[str, Path]) -> dict[str, Module]:
    """Every module under the roots (top-level name -> folder), by dotted name."""
    modules = {}
    for top, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = (top, *path.relative_to(folder).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = read_module(name, path)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def read_module(name: str, path: Path) -> Module:
    """A module's imports (at any depth, absolute), functions and `__all__`, in one walk."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    functions: list[Function] = []
    todo: list[tuple[ast.AST, bool]] = [(tree, False)]
    while todo:
        node, typing_only = todo.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend((child, True) for child in node.body)
            todo.extend((child, typing_only) for child in node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.extend(
                Import(a.name, node.lineno, typing_only, a.asname is not None) for a in node.names
            )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append(Import(base, node.lineno, typing_only))
            found.extend(
                Import(f"{base}.{a.name}", node.lineno, typing_only, a.asname is not None)
                for a in node.names
                if a.name != "*"
            )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            functions.append(
                Function(node.name, node.lineno, (node.end_lineno or start) - start + 1)
            )
        todo.extend((child, typing_only) for child in ast.iter_child_nodes(node))
    exported: list[str] = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets
        ):
            exported.extend(ast.literal_eval(statement.value))
    return Module(
        name,
        path,
        len(text.splitlines()),
        tuple(sorted(found, key=lambda i: (i.line, i.target))),
        tuple(sorted(functions, key=lambda f: f.line)),
        tuple(exported),
    )


def graph(modules: Mapping[str, Module]) -> dict[str, set[str]]:
    """module -> the scanned modules its imports run (importing `a.b.c` runs `a`, `a.b` and
    `a.b.c`), leaving out imports under TYPE_CHECKING and the module's own ancestors."""
    out: dict[str, set[str]] = {}
    for name, module in modules.items():
        targets = set()
        for found in module.imports:
            if found.typing_only:
                continue
            parts = found.target.split(".")
            for end in range(1, len(parts) + 1):
                prefix = ".".join(parts[:end])
                if prefix in modules and prefix != name and not name.startswith(prefix + "."):
                    targets.add(prefix)
        out[name] = targets
    return out


# -- the rules ------------------------------------------------------------------------------------


def one_cycle(edges: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle of a graph (module -> the modules it imports), first module last too, or
    None."""
    try:
        TopologicalSorter(edges).prepare()
    except CycleError as error:
        return list(reversed(error.args[1]))  # graphlib lists it against the arrows
    return None


def package_cycles(arrows: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle among the children of each package that has one: a child (a subpackage or a
    module) stands for everything under it. The top-level names are the children of one root."""
    children: dict[str, set[str]] = {}  # package ("" for the root) -> children
    for name in arrows:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            children.setdefault(".".join(parts[: end - 1]), set()).add(".".join(parts[:end]))

    def child_of(package: str, name: str) -> str | None:
        if package and not name.startswith(package + "."):
            return None
        depth = len(package.split(".")) + 1 if package else 1
        return ".".join(name.split(".")[:depth])

    found = []
    for package in sorted(children):
        edges: dict[str, set[str]] = {child: set() for child in children[package]}
        for source, targets in arrows.items():
            if (a := child_of(package, source)) is None or source == package:
                continue
            for target in targets:
                if (b := child_of(package, target)) is not None and b != a:
                    edges[a].add(b)
        if cycle := one_cycle(edges):
            found.append(cycle)
    return found


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...]) -> int | None:
    """The row of the nearest unit that holds the module, or None. A package whose children
    have rows of their own holds only its `__init__`: each of its children needs a row."""
    rows = {unit: row for row, (_, units) in enumerate(layers) for unit in units}
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        unit = ".".join(parts[:end])
        if unit in rows:
            split = end < len(parts) and any(u.startswith(unit + ".") for u in rows)
            return None if split else rows[unit]
    return None


def layer_breaches(
    arrows: Mapping[str, set[str]], layers: tuple[tuple[str, tuple[str, ...]], ...]
) -> list[str]:
    """Every arrow that runs up the table, and every module that has no row."""
    bad: list[str] = []
    for source in sorted(arrows):
        if (here := layer_of(source, layers)) is None:
            bad.append(f"{source}: in no row of the layer table")
            continue
        for target in sorted(arrows[source]):
            there = layer_of(target, layers)
            if there is not None and there > here:
                bad.append(f"{source} ({layers[here][0]}) -> {target} ({layers[there][0]})")
    return bad


def _owner(target: str, modules: Mapping[str, Module]) -> str | None:
    """The package a `_private` part of an import belongs to, or None for a public import."""
    parts = target.split(".")
    for at, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            owner = ".".join(parts[:at])
            held = modules.get(owner)
            if held is not None and held.path.name != "__init__.py":
                owner = owner.rpartition(".")[0]  # a module's private name is its package's
            return owner
    return None


def back_doors(modules: Mapping[str, Module]) -> list[str]:
    """Every import of a `_private` module or name from outside the package that owns it."""
    bad: list[str] = []
    tops = {name.split(".")[0] for name in modules}
    for name, module in sorted(modules.items()):
        for found in module.imports:
            owner = _owner(found.target, modules)
            if owner is None or owner.split(".")[0] not in tops:
                continue  # public, or a third-party package's own business
            if module.package != owner and not module.package.startswith(owner + "."):
                bad.append(f"{name}:{found.line} imports {found.target}")
    return bad


def too_long(modules: Mapping[str, Module]) -> list[str]:
    """Every module over MAX_MODULE_LINES and function over MAX_FUNCTION_LINES (with its
    decorators)."""
    bad: list[str] = []
    for name, module in sorted(modules.items()):
        if module.lines > MAX_MODULE_LINES:
            bad.append(f"{name}: {module.lines} lines")
        bad.extend(
            f"{name}:{f.line} {f.name}: {f.size} lines"
            for f in module.functions
            if f.size > MAX_FUNCTION_LINES
        )
    return bad


def transition_homes(modules: Mapping[str, Module]) -> list[str]:
    """Every import of `Transition` from elsewhere than `pos_agent.transition` or under another
    name, and every `__all__` that lists it (a re-export shim)."""
    bad: list[str] = []
    for name, module in sorted(modules.items()):
        bad.extend(
            f"{name}:{found.line} imports {found.target}{' as another name' * found.renamed}"
            for found in module.imports
            if found.target.endswith(".Transition")
            and (found.target != "pos_agent.transition.Transition" or found.renamed)
        )
        if "Transition" in module.exported:
            bad.append(f"{name} lists Transition in __all__")
    return bad


# -- the repository -------------------------------------------------------------------------------

MODULES = scan(ROOTS)
ARROWS = graph(MODULES)


def test_the_scan_sees_the_arrows_it_must_judge() -> None:
    # The scan can fail: the runner imports the executors, the CLI the runner, the agent's
    # belief step the belief engine, trapbench the library; a module's own package is no arrow.
    assert "pos_agent.bench.executors" in ARROWS["pos_agent.bench.runner"]
    assert "pos_agent.bench.runner" in ARROWS["pos_agent.cli.bench"]
    assert "pos_agent.belief" in ARROWS["pos_agent.agents.pos.belief_steps"]
    assert "pos_agent.bench" not in ARROWS["pos_agent.bench.runner"]
    assert any(m.startswith("pos_agent.") for m in ARROWS["pos_trapbench.detectors"])


def test_every_layer_imports_only_its_own_row_and_the_rows_below() -> None:
    assert layer_breaches(ARROWS, LAYERS) == []


def test_every_row_of_the_layer_table_holds_a_module() -> None:
    stale = [unit for _, units in LAYERS for unit in units if unit not in MODULES]
    assert stale == [], "rows naming no module: a folder moved or was renamed"


def test_no_module_level_import_cycle() -> None:
    assert one_cycle(ARROWS) is None, " -> ".join(one_cycle(ARROWS) or [])


def test_no_package_level_import_cycle() -> None:
    assert package_cycles(ARROWS) == []


def test_no_module_imports_a_private_part_of_another_package() -> None:
    assert back_doors(MODULES) == []


def test_modules_and_functions_stay_short() -> None:
    assert too_long(MODULES) == []


def test_the_transition_record_has_one_home() -> None:
    assert transition_homes(MODULES) == []


# What a fresh interpreter loads: each line imports its first module before anything else of
# the package (an import-order cycle through a package's `__init__` fails here, where the scan
# leaves a module's own ancestors out), and none of the names after it may be loaded. The core
# loads no model layer and no pydantic; the facades no heavy backend (importing
# `pos_agent.llm.backend` runs `pos_agent.llm` first, so that facade is checked with it).
FRESH_IMPORTS = {
    "the core": (
        ("pos_agent.recovery", "pos_agent.monitor", "pos_agent.belief", "pos_agent.health"),
        ("pos_agent.llm", "pos_agent.roles", "pydantic"),
    ),
    "the sentinel's audit": (("pos_agent.sentinel.audit",), ()),
    "the belief updater": (("pos_agent.updater",), ()),
    "the model layer's facades": (("pos_agent.llm.backend",), ("llama_cpp", "openai", "httpx")),
    "the environments' facade": (("pos_agent.envs",), ("llama_cpp", "openai", "httpx")),
}


@pytest.fixture(scope="module")
def fresh_imports() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every line of FRESH_IMPORTS run at once, each in an interpreter of its own."""
    started = {}
    for key, (modules, absent) in FRESH_IMPORTS.items():
        code = (
            f"import sys; import {', '.join(modules)}; "
            f"print(sorted(m for m in sys.modules if m.startswith({absent!r})))"
        )
        started[key] = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    done = {}
    for key, process in started.items():
        out, err = process.communicate(timeout=120)
        done[key] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return done


@pytest.mark.parametrize("key", FRESH_IMPORTS)
def test_a_fresh_interpreter_imports_it_first_and_loads_nothing_it_must_not(
    key: str, fresh_imports: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    done = fresh_imports[key]
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", f"{FRESH_IMPORTS[key][0][0]} loads {done.stdout}"


# -- each rule can fail: a small tree of its own ----------------------------------------------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> dict[str, Module]:
    """Write a package `pkg` of the given files (path under pkg/ -> source) in a folder of its
    own and scan it."""
    root = tmp_path / f"tree{len(list(tmp_path.iterdir()))}" / "pkg"
    for relative, source in {"__init__.py": "", **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(source, encoding="utf-8")
    return scan({"pkg": root})


def test_the_layer_rule_fails_on_an_arrow_up_and_on_a_unit_with_no_row(tmp_path: Path) -> None:
    layers = (("low", ("pkg", "pkg.low")), ("high", ("pkg.high",)))
    modules = _tree(
        tmp_path,
        {
            "high.py": "from pkg.low import x\n",
            "low.py": "x = 1\n\ndef later():\n    from pkg.high import y\n",
            "stray.py": "",
        },
    )
    assert layer_breaches(graph(modules), layers) == [
        "pkg.low (low) -> pkg.high (high)",
        "pkg.stray: in no row of the layer table",
    ]
    typed = _tree(
        tmp_path,
        {
            "high.py": "",
            "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.high\n",
        },
    )
    assert layer_breaches(graph(typed), layers) == []  # a type-only import runs nothing


def test_the_cycle_rules_fail_on_a_module_cycle_and_on_a_package_cycle(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path, {"a.py": "from pkg import b\n", "b.py": "def f():\n    import pkg.a\n"}
    )
    cycle = one_cycle(graph(modules))
    assert cycle is not None and set(cycle) == {"pkg.a", "pkg.b"}
    # No module imports one that imports it back, but the two packages import each other.
    packages = _tree(
        tmp_path,
        {
            "x/one.py": "import pkg.y.two\n",
            "x/three.py": "",
            "y/two.py": "",
            "y/four.py": "from pkg.x import three\n",
        },
    )
    arrows = graph(packages)
    assert one_cycle(arrows) is None
    found = package_cycles(arrows)
    assert len(found) == 1 and set(found[0]) == {"pkg.x", "pkg.y"}


def test_the_private_rule_fails_on_a_back_door_and_lets_a_package_use_its_own(
    tmp_path: Path,
) -> None:
    modules = _tree(
        tmp_path,
        {
            "inner/_hidden.py": "def _helper(): ...\nvalue = 1\n",
            "inner/shown.py": "def _shared(): ...\n",
            "inner/sub/user.py": "from pkg.inner._hidden import value\n",  # its own subtree
            "inner/sibling.py": "from pkg.inner.shown import _shared\n",  # its package's name
            "outside.py": "from pkg.inner._hidden import value\n",
            "relative.py": "from .inner.shown import _shared\n",
            "typed.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg.inner import _hidden\n",
        },
    )
    assert back_doors(modules) == [
        "pkg.outside:1 imports pkg.inner._hidden",
        "pkg.outside:1 imports pkg.inner._hidden.value",
        "pkg.relative:1 imports pkg.inner.shown._shared",
        "pkg.typed:3 imports pkg.inner._hidden",
    ]


def test_the_length_rule_fails_on_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    modules = _tree(
        tmp_path,
        {
            "fits.py": f"def fits():\n{body}",
            "long_function.py": f"@staticmethod\ndef long():\n{body}",
            "long_module.py": "x = 1\n" * (MAX_MODULE_LINES + 1),
        },
    )
    assert too_long(modules) == [
        f"pkg.long_function:2 long: {MAX_FUNCTION_LINES + 1} lines",
        f"pkg.long_module: {MAX_MODULE_LINES + 1} lines",
    ]


def test_the_home_rule_fails_on_a_re_exported_transition(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "shim.py": "from pos_agent.transition import Transition\n__all__ = ['Transition']\n",
            "user.py": "from pkg.shim import Transition\n",
            "fine.py": "from pos_agent.transition import Transition\n",
            "renamed.py": "from pos_agent.transition import Transition as Step\n",
        },
    )
    assert transition_homes(modules) == [
        "pkg.renamed:1 imports pos_agent.transition.Transition as another name",
        "pkg.shim lists Transition in __all__",
        "pkg.user:1 imports pkg.shim.Transition",
    ]
