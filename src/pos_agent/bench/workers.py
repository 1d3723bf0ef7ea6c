"""The worker processes of `pos bench`: one case at a time each, dying with their parent.

A worker must never outlive the `pos bench` that started it: an orphan would go on calling the
model and writing into case folders that a later `--resume` owns. So each worker asks the
kernel to kill it when its parent dies (Linux `prctl(PR_SET_PDEATHSIG)`), checks that the
parent did not die before it got that far, and runs a watchdog thread that kills it if its
parent pid ever changes (the fallback where prctl is unavailable). Before writing a result it
checks once more that its parent is alive.

Each worker owns one end of a pipe: it receives a case, plays it, and sends back a `Reply`.
The parent watches every busy worker's pipe and process, so a worker that dies (killed, out
of memory) costs only its own case, and a fresh worker takes its place
(bench/executors/local.py).

Ctrl-C, SIGTERM and SIGHUP reach the workers either from the terminal (the whole process
group) or from the parent, which forwards a SIGINT. The first one interrupts the case in
progress, which records itself as `interrupted` with the steps it played; after that the
worker starts no further case.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import Any

from pos_agent.bench import signals
from pos_agent.bench.case import (
    CaseBusyError,
    CaseInterrupted,
    CaseSpec,
    ModelLoader,
    RecordError,
    default_loader,
    run_case,
)
from pos_agent.bench.signals import STOP_SIGNALS, Interrupted
from pos_agent.llm import ModelOptions
from pos_agent.trace import CaseResult

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
WATCHDOG_PERIOD_S = 0.2


@dataclass(frozen=True)
class Job:
    """One case for a worker to play."""

    spec: CaseSpec
    run_dir: str
    run_name: str
    time_limit_s: float | None


@dataclass(frozen=True)
class Reply:
    """What a worker says about a job: `result` (written by the worker) or why there is none.

    `kind`: result; skipped (stopping, the case was not started); busy (another process holds
    the case folder); record_error (the disk refused a write: `errno`); error (the worker's own
    code failed before a result existed). The parent adds died (the process ended without a
    reply: killed, out of memory).
    """

    kind: str
    result: CaseResult | None = None
    message: str = ""
    errno: int | None = None


class _WorkerState:
    """What one worker process knows."""

    parent_pid: int = 0
    options: ModelOptions | None = None
    load: ModelLoader | None = None
    stopping = False  # a stop signal seen: finish nothing new
    in_case = False  # a case is being played (a stop signal interrupts it)


_STATE = _WorkerState()


def worker_main(conn: Connection, model_options: dict[str, Any], parent_pid: int) -> None:
    """A worker process: play the jobs the parent sends until it sends None or goes away."""
    init_worker(model_options, parent_pid)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(play(job))


def init_worker(model_options: dict[str, Any], parent_pid: int) -> None:
    """Tie the worker's life to its parent, then prepare its model loader."""
    _STATE.parent_pid = parent_pid
    die_with_parent(parent_pid)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_stop_signal)
    prepare_models(model_options)


def prepare_models(model_options: dict[str, Any]) -> None:
    """The model options and loader `play` uses in this process (a Ray case runner, which has
    no parent to tie its life to, calls only this)."""
    _STATE.options = ModelOptions(**model_options)
    _STATE.load = default_loader(_STATE.options)


def play(job: Job) -> Reply:
    """Play one case; every ending becomes a Reply (the worker itself goes on)."""
    if _STATE.stopping or not parent_alive():
        return Reply("skipped")
    _STATE.in_case = True
    try:
        result = run_case(
            job.spec,
            Path(job.run_dir) / job.spec.folder,
            run_name=job.run_name,
            options=_STATE.options,
            load=_STATE.load,
            time_limit_s=job.time_limit_s,
            owner_alive=parent_alive,
        )
        return Reply("result", result)
    except CaseInterrupted as interrupted:
        return Reply("result", interrupted.result)
    except KeyboardInterrupt:
        return Reply("skipped", message="interrupted before its case started")
    except CaseBusyError as busy:
        return Reply("busy", message=str(busy))
    except RecordError as exc:
        return Reply("record_error", message=str(exc.strerror or exc), errno=exc.errno)
    except Exception as exc:
        return Reply("error", message=f"{type(exc).__name__}: {exc}")
    finally:
        _STATE.in_case = False


def parent_alive() -> bool:
    return _STATE.parent_pid == 0 or os.getppid() == _STATE.parent_pid


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    # Only the first stop signal interrupts, and only inside a case: a second one (terminal
    # plus forwarded) must not break the writing of the interrupted result, and one between
    # cases must not kill the worker's loop.
    first = signals.note(signum)
    _STATE.stopping = True
    if first and _STATE.in_case:
        raise Interrupted(signum)


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
