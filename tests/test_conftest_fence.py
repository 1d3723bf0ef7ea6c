"""The fence of conftest.py holds: no keys, temporary caches, no outside network."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from pos_agent.llm import ModelOptions


def test_api_keys_are_gone_for_tests_and_their_subprocesses() -> None:
    assert not [n for n in os.environ if n.endswith("API_KEY")]
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(n for n in os.environ if 'KEY' in n))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "API_KEY" not in child.stdout


def test_the_response_cache_defaults_to_a_temporary_folder() -> None:
    path = ModelOptions().cache_path
    assert path.parent == __import__("pathlib").Path(os.environ["POS_CACHE_DIR"])
    assert "pos-cache" in str(path)


def test_outside_hosts_cannot_be_reached() -> None:
    with socket.socket() as sock, pytest.raises(AssertionError, match="network"):
        sock.connect(("192.0.2.1", 80))  # TEST-NET-1: never routed
    with pytest.raises(AssertionError, match="outside hosts"):
        socket.getaddrinfo("example.org", 443)


def test_loopback_stays_reachable() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
