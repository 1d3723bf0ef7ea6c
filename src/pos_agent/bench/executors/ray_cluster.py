"""Ray for a run of `pos bench --executor ray`: connected to a cluster, or started here for the
run (and stopped after it), with the variables that let its raylet clean up what a killed case
leaves behind."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CLEANUP_VARIABLES = {
    "RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper": "true",
    "RAY_process_group_cleanup_enabled": "true",
}
# A Ray started for the run listens on 127.0.0.1 only. Ray turns a node address of 127.0.0.1
# into the machine's outside address (so that other nodes could join) and its servers then
# listen there or on every interface, unless it runs as a one-machine Ray, which it does on
# macOS and Windows and, with this variable at 0, anywhere: every process of it (raylet, GCS,
# workers, agents) then takes 127.0.0.1 as the node's address and listens there alone.
LOOPBACK_VARIABLES = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024  # records are small; the default takes 30% of RAM


class RayUnavailableError(ValueError):
    """Ray is not installed, or the cluster cannot be reached; nothing ran."""


def raylet_cleans_up() -> bool:
    """True when this worker's raylet (its parent) kills the processes a worker leaves."""
    try:
        raw = Path(f"/proc/{os.getppid()}/environ").read_bytes()
    except OSError:
        return False
    environment = dict(
        item.split("=", 1) for item in raw.decode("utf-8", "replace").split("\0") if "=" in item
    )
    return any(environment.get(name, "").lower() in ("1", "true") for name in CLEANUP_VARIABLES)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            "--executor ray needs Ray: install the extra, pip install 'pos-agent[ray]'"
        ) from None
    return ray


@contextlib.contextmanager
def connected(address: str | None) -> Any:
    """Ray, connected to `address`, or to a Ray started here for the run (stopped after); a
    connection this process has already is used as it is (and left open)."""
    ray = _ray()
    if ray.is_initialized():  # a program that embeds the bench and runs Ray already
        yield ray
        return
    variables = {"RAY_DISABLE_USAGE_STATS": "1"}
    if address is None:
        variables.update(CLEANUP_VARIABLES)  # for the raylet started here, which inherits them
        variables.update(LOOPBACK_VARIABLES)
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "object_store_memory": LOCAL_OBJECT_STORE_BYTES,
            "_node_ip_address": "127.0.0.1",
        }
    else:
        kwargs = {"address": address}
    reaper = _start_reaper() if address is None else None
    environment = dict(os.environ)  # ray.init sets variables of its own: put back after
    try:
        main = threading.current_thread() is threading.main_thread()
        sigterm = signal.getsignal(signal.SIGTERM) if main else None
        sigchld = signal.getsignal(signal.SIGCHLD) if main else None
        try:
            with _environment(variables), _loopback_only(ray, address is None):
                ray.init(log_to_driver=False, logging_level=logging.WARNING, **kwargs)
            if main:
                # ray.init makes SIGTERM a plain sys.exit; it takes Ctrl-C's path (signals.py)
                signal.signal(signal.SIGTERM, sigterm)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or "a Ray started for this run"
            raise RayUnavailableError(f"cannot use {where}: {exc}") from None
        try:
            yield ray
        finally:
            ray.shutdown()
            if main and sigchld is not None:
                # A Ray started here ignores SIGCHLD, which would also hide the exit status
                # of every later child of this process (and of this process's own children).
                signal.signal(signal.SIGCHLD, sigchld)
    finally:
        if reaper is not None:
            _stop_reaper(reaper)
        for name in set(os.environ) - set(environment):
            os.environ.pop(name, None)
        os.environ.update(environment)


def _start_reaper() -> subprocess.Popen[bytes] | None:
    """The watchdog that ends a Ray started here if this process is killed (ray_reaper.py)."""
    if not sys.platform.startswith("linux"):
        return None
    script = Path(__file__).with_name("ray_reaper.py")
    return subprocess.Popen(
        [sys.executable, str(script), str(os.getpid())],
        stdin=subprocess.PIPE,
        start_new_session=True,  # out of reach of the terminal's Ctrl-C
    )


def _stop_reaper(reaper: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        assert reaper.stdin is not None
        reaper.stdin.write(b"done")
        reaper.stdin.close()
    try:
        reaper.wait(timeout=5)
    except subprocess.TimeoutExpired:
        reaper.kill()
        reaper.wait()


@contextlib.contextmanager
def _loopback_only(ray: Any, wanted: bool) -> Iterator[None]:
    """While Ray starts here: the driver, which imported Ray before LOOPBACK_VARIABLES were
    set, reads the node's address as its children will (127.0.0.1)."""
    constants: Any = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if not wanted or not hasattr(constants, "ENABLE_RAY_CLUSTER"):
        yield
        return
    previous = constants.ENABLE_RAY_CLUSTER
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = previous


@contextlib.contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """These variables (unless set already) while Ray starts its processes, then as before."""
    added = {name: value for name, value in variables.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)
