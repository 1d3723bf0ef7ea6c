"""Every test runs fenced off from the outside world.

- API keys and endpoint variables are removed from the environment (subprocesses included), so
  no test can spend a key or reach a provider by accident.
- Caches and user folders point at a temporary directory (`pos data`'s folder too).
- The reference data beside the repository (../shared, when it is there) is passed to the
  environments explicitly, through their environment variables: no library default points
  there.
- Opening a connection to anything but loopback (or resolving a non-local host name) fails the
  test that tried it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from extras import ExtraModule, missing_extra_of_failure

# Property tests judge correctness, not speed: on a loaded 2-core machine a slow example is no
# failure (hypothesis' default 200 ms deadline and too_slow check made them flaky).
hypothesis_settings.register_profile(
    "pos", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("pos")

# Variables that carry credentials or send requests somewhere: stripped for every test.
_SECRET_NAME = re.compile(r"(API_KEY|APIKEY|_TOKEN|_SECRET|PASSWORD)$", re.IGNORECASE)
_ENDPOINT_NAMES = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "DASHSCOPE_BASE_URL", "HF_ENDPOINT")
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""}
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
# The reference copies of the benchmarks' data, by the variable each environment reads.
REFERENCE_DATA = {
    "POS_RCA_DATA": SHARED / "data" / "rca-nezha",
    "POS_CLINDIAG_DATA": SHARED / "data" / "clindiag",
    "POS_LOCA_ROOT": SHARED / "vendor" / "LOCA-bench",
}


class NetworkAccessError(AssertionError):
    """A test tried to reach a host that is not this machine."""


def _is_loopback(host: Any) -> bool:
    if not isinstance(host, str):
        return False
    name = host.strip("[]").lower()
    if name in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback or ipaddress.ip_address(name).is_unspecified
    except ValueError:
        return False


def _check_address(family: int, address: Any) -> None:
    if family == getattr(socket, "AF_UNIX", None):
        return
    host = address[0] if isinstance(address, tuple) and address else address
    if not _is_loopback(host):
        raise NetworkAccessError(f"tests must not reach the network (tried {address!r})")


@pytest.fixture(scope="session", autouse=True)
def _fenced_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("user-folders")
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if _SECRET_NAME.search(name) or name in _ENDPOINT_NAMES:
                patch.delenv(name)
        for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "MPLCONFIGDIR"):
            folder = home / name.lower()
            folder.mkdir()
            patch.setenv(name, str(folder))
        patch.setenv("POS_CACHE_DIR", str(home / "pos-cache"))
        patch.setenv("POS_DATA", str(home / "pos-data"))
        for name, path in REFERENCE_DATA.items():
            if path.is_dir() and not os.environ.get(name):
                patch.setenv(name, str(path))
        yield home


@pytest.fixture(autouse=True)
def _no_outside_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self.family, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(self.family, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_loopback(host if isinstance(host, str) else str(host)):
            raise NetworkAccessError(f"tests must not resolve outside hosts (tried {host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
    # Run without an extra (`make test-core`), a module that needs it is skipped, not an error.
    return ExtraModule.from_parent(parent, path=module_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    # A test that failed only because an extra is not installed is a skip that names it.
    report = yield
    if call.when == "call" and report.failed and call.excinfo is not None:
        missing = missing_extra_of_failure(call.excinfo.value)
        if missing is not None:
            module, extra = missing
            reason = f"needs the `{extra}` extra ({module} not installed): uv sync --extra {extra}"
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {reason}")
    return report
