"""How a run stops: Ctrl-C, SIGTERM and SIGHUP all take one path, and none is ever lost.

`timeout`, SLURM and `docker stop` send SIGTERM; a closed terminal sends SIGHUP. Each is
handled as Ctrl-C is: the case in progress records itself as `interrupted` with the steps it
played, summary.json is rewritten, and the command exits 130.

An exception raised by a signal handler lands wherever the main thread happens to be, and code
that catches broadly could swallow it. So the first stop signal is also remembered
(`requested`): the runner's loops check it at every turn and stop even when the exception never
reached them. Later signals are remembered but raise nothing while the stop is recorded (a
second Ctrl-C must not tear the `interrupted` result being written); the runner opens a window
(`hurry`) in which a second one cuts the wait for its workers short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal (Ctrl-C, SIGTERM or SIGHUP), raised as KeyboardInterrupt is."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        self.signum = signum
        super().__init__(describe(signum))


def describe(signum: int) -> str:
    if signum == signal.SIGINT:
        return "interrupted by the user (Ctrl-C)"
    return f"interrupted by {signal.Signals(signum).name}"


class _State:
    requested: int | None = None  # the first stop signal received
    repeated = 0  # stop signals received after it
    hurry = False  # a repeated signal raises (the runner is only waiting)


_STATE = _State()


def requested() -> int | None:
    """The first stop signal received since `stop_on_signals` began, or None."""
    return _STATE.requested


def note(signum: int) -> bool:
    """Remember a stop signal handled elsewhere (a worker's own handler); True for the first."""
    if _STATE.requested is None:
        _STATE.requested = signum
        return True
    _STATE.repeated += 1
    return False


def check() -> None:
    """Raise Interrupted when a stop was requested (a safe point of a loop)."""
    if _STATE.requested is not None:
        raise Interrupted(_STATE.requested)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _STATE.requested is None:
        _STATE.requested = signum
        raise Interrupted(signum)
    _STATE.repeated += 1
    if _STATE.hurry:
        raise Interrupted(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """In the main thread: every stop signal takes Ctrl-C's path (Interrupted, remembered).
    The previous handlers are put back at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _STATE.requested, _STATE.repeated, _STATE.hurry = None, 0, False
    previous = {signum: signal.signal(signum, _on_signal) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _STATE.requested, _STATE.repeated, _STATE.hurry = None, 0, False


@contextlib.contextmanager
def hurry() -> Iterator[None]:
    """While the runner only waits (for interrupted workers), a repeated signal raises."""
    _STATE.hurry = True
    try:
        yield
    finally:
        _STATE.hurry = False
