"""The worker-process side of `pos bench`: workers that die with their parent and stop on Ctrl-C.

A worker must never outlive the `pos bench` that started it: an orphan would go on calling the
model and writing into case folders that a later `--resume` owns. So each worker asks the
kernel to kill it when its parent dies (Linux `prctl(PR_SET_PDEATHSIG)`), checks that the
parent did not die before it got that far, and runs a watchdog thread that kills it if its
parent pid ever changes (the fallback where prctl is unavailable). Before writing a result it
checks once more that its parent is alive.

Ctrl-C reaches the workers either from the terminal (the whole process group) or from the
parent, which forwards it. The first one interrupts the case in progress, which records itself
as `interrupted` with the steps it played; after that the worker starts no further case.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from pos_agent.bench.case import CaseInterrupted, CaseSpec, ModelLoader, default_loader, run_case
from pos_agent.llm import ModelOptions
from pos_agent.trace import CaseResult

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
WATCHDOG_PERIOD_S = 0.2


class _WorkerState:
    """What one worker process knows; module-level because the pool calls plain functions."""

    parent_pid: int = 0
    options: ModelOptions | None = None
    load: ModelLoader | None = None
    stopping = False  # Ctrl-C seen: finish nothing new
    in_case = False  # a case is being played (Ctrl-C interrupts it)


_STATE = _WorkerState()


def init_worker(model_options: dict[str, Any], parent_pid: int) -> None:
    """Pool initializer: tie the worker's life to its parent, then prepare its model loader."""
    _STATE.parent_pid = parent_pid
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, _on_interrupt)
    _STATE.options = ModelOptions(**model_options)
    _STATE.load = default_loader(_STATE.options)


def worker_case(
    spec: CaseSpec, run_dir: str, run_name: str, time_limit_s: float | None
) -> CaseResult | None:
    """Play one case; None when the worker is stopping (Ctrl-C) and did not start it."""
    if _STATE.stopping or not parent_alive():
        return None
    _STATE.in_case = True
    try:
        return run_case(
            spec,
            Path(run_dir) / spec.folder,
            run_name=run_name,
            options=_STATE.options,
            load=_STATE.load,
            time_limit_s=time_limit_s,
            owner_alive=parent_alive,
        )
    except CaseInterrupted as interrupted:
        return interrupted.result
    finally:
        _STATE.in_case = False


def parent_alive() -> bool:
    return _STATE.parent_pid == 0 or os.getppid() == _STATE.parent_pid


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    # Only the first Ctrl-C interrupts, and only inside a case: a second one (terminal plus
    # forwarded) must not break the writing of the interrupted result, and one between cases
    # must not kill the worker's loop (the pool would call that a crash).
    first = not _STATE.stopping
    _STATE.stopping = True
    if first and _STATE.in_case:
        raise KeyboardInterrupt


def die_with_parent(parent_pid: int) -> None:
    """Make this process die when `parent_pid` does, whatever signal killed the parent."""
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)
    watchdog = threading.Thread(
        target=_watch_parent, args=(parent_pid,), name="parent-watchdog", daemon=True
    )
    watchdog.start()


def set_parent_death_signal(signum: int) -> bool:
    """Ask Linux to send `signum` to this process when its parent exits; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCHDOG_PERIOD_S)
    os.kill(os.getpid(), signal.SIGKILL)
