"""A process-wide stop for model requests: once a run is stopped (Ctrl-C on a Ray cluster, where
no signal reaches the worker playing a case), no request is sent and none is waited for.

`stop_requests()` sets the stop in this process; `install_stop_check(check)` adds a callable
asked while a request is prepared or awaited (a Ray case runner installs one that asks whether
its driver has stopped the run). When either says stop, the HTTP path raises `RequestsStopped`
(a KeyboardInterrupt, so the case records itself `interrupted` with the steps it played and
its trace) instead of sending, or instead of waiting any longer for a reply.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CHECK_EVERY_S = 0.2  # how often a request in flight asks whether the run was stopped


class RequestsStopped(KeyboardInterrupt):
    """The run was stopped: this model request was not sent, or its reply not awaited."""


_STOPPED = threading.Event()
_CHECKS: list[Callable[[], bool]] = []


def stop_requests() -> None:
    """Stop every model request of this process from now on."""
    _STOPPED.set()


def resume_requests() -> None:
    """Allow requests again (a new run in the same process) and forget the installed checks."""
    _STOPPED.clear()
    _CHECKS.clear()


def install_stop_check(check: Callable[[], bool]) -> None:
    """Ask `check()` too (in the thread that sends the request) whether to stop."""
    _CHECKS.append(check)


def requests_stopped() -> bool:
    if _STOPPED.is_set():
        return True
    for check in list(_CHECKS):
        try:
            if check():
                _STOPPED.set()
                return True
        except Exception:  # a check that cannot answer does not stop the run
            continue
    return False


def raise_if_stopped() -> None:
    """RequestsStopped when the run was stopped."""
    if requests_stopped():
        raise RequestsStopped("interrupted: the run was stopped, no further model request sent")


def wait_or_stop(done: threading.Event, timeout_s: float) -> bool:
    """Wait for `done` up to `timeout_s`, asking every CHECK_EVERY_S whether the run was
    stopped (RequestsStopped); True when `done` was set."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return done.is_set()
        if done.wait(min(left, CHECK_EVERY_S)):
            return True
        raise_if_stopped()


def stoppable_sleep(seconds: float) -> None:
    """time.sleep that ends early, with RequestsStopped, when the run is stopped."""
    deadline = time.monotonic() + seconds
    while True:
        raise_if_stopped()
        left = deadline - time.monotonic()
        if left <= 0:
            return
        _STOPPED.wait(min(left, CHECK_EVERY_S) if _CHECKS else left)
