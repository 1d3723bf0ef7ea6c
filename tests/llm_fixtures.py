"""Fixtures of the model-layer tests, loaded with `pytest_plugins = ["llm_fixtures"]`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_fakes import FakeServer
from pos_agent.llm.backend import forget_breakers, forget_servers


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    fake.thread.start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def fresh_server_memory() -> Iterator[None]:
    """What the process learnt about servers (modes, breakers) must not leak between tests: a
    later test's fake server may get a port an earlier one had."""
    forget_servers()
    forget_breakers()
    yield
    forget_servers()
    forget_breakers()
