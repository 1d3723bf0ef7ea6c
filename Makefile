# Everything runs inside .venv at the repository root, installed from uv.lock.
SHELL := /bin/bash
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/.venv
UV ?= $(shell command -v uv 2>/dev/null || echo "$(HOME)/.local/bin/uv")
RUN := $(UV) run --frozen --no-sync

.PHONY: install loca-runtime test test-fast test-core lint typecheck pytest demo docs bench-overhead clean

DEMO_STEPS ?= 12

# Install uv with pip when it is missing, then the locked environment (all extras, and the
# `docs` group beside the default `dev` one).
install: .venv/.installed
.venv/.installed: pyproject.toml uv.lock
	@command -v $(UV) >/dev/null 2>&1 || python3 -m pip install --user --quiet uv \
		|| python3 -m pip install --user --quiet --break-system-packages uv
	$(UV) sync --frozen --all-extras --group docs
	@touch $@

# LOCA-Bench's MCP servers need pinned packages outside uv.lock: a separate venv plus two npm
# servers under $POS_LOCA_RUNTIME (default ~/.cache/pos-agent/loca-runtime), built once from
# PyPI and npm and reused; a no-op when it is current. The LOCA environment also builds it on
# first use.
loca-runtime: install
	$(RUN) python -m pos_agent.envs.loca.runtime

lint: install
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: install
	$(RUN) mypy

pytest: install loca-runtime
	$(RUN) pytest

test: lint typecheck pytest

# The edit loop: lint, types and every test not marked slow. CI runs the full `make test`.
test-fast: lint typecheck
	$(RUN) pytest -m "not slow"

# The core as a user without extras gets it, plus the dev tools: the core (pydantic) and the dev
# group, no extra (no CLI, no environments, no local model, no pyarrow), in a venv of its own
# ($(CORE_VENV)); llama-cpp-python, which the dev group lists for the server tests, is left out
# (it would build llama.cpp for minutes). Then lint, types and the fast tests: a test that needs
# an extra skips and says which (tests/extras.py). The wheel alone in an empty venv is
# tests/test_core_install.py (slow).
CORE_VENV ?= /tmp/pos-core-venv
CORE_RUN := UV_PROJECT_ENVIRONMENT=$(CORE_VENV) $(UV) run --frozen --no-sync
test-core:
	UV_PROJECT_ENVIRONMENT=$(CORE_VENV) $(UV) sync --frozen --no-install-package llama-cpp-python
	$(CORE_RUN) ruff check .
	$(CORE_RUN) ruff format --check .
	$(CORE_RUN) mypy
	$(CORE_RUN) pytest -m "not slow"

# One PoS episode on alfworld-mini heat-mug with the embedded local model (no key, no network),
# then the trace rendered as one HTML page.
demo: install
	$(RUN) pos run alfworld-mini heat-mug --agent pos --model local --max-steps $(DEMO_STEPS) --recovery both --run demo
	$(RUN) pos view runs/demo/pos__alfworld-mini__heat-mug
	@echo "Trace: runs/demo/pos__alfworld-mini__heat-mug/events.jsonl"
	@echo "Open runs/demo/pos__alfworld-mini__heat-mug/trace.html in a browser to see it step by step."

# The documentation site (MkDocs, Material theme, API reference from docstrings), built from
# docs/ into site/ (git-ignored) with warnings as errors, then every internal link of the built
# pages checked (tests/test_docs_site.py does both in the test run).
docs: install
	NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs build --strict --site-dir site
	$(RUN) python tests/docs_links.py site

bench-overhead: install
	$(RUN) python -m benchmarks.overhead

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache site
