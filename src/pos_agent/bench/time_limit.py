"""An optional wall-clock limit per case, as a safety net for hung servers and backends.

The paper's budget is steps; a wall-clock limit depends on the machine and the server's load,
so a case that reaches it is never scored: it ends as `infra_error` (retried by `pos bench`,
rerun by `--resume`), and the message says where the time went.

The limit is a SIGALRM timer, so it interrupts a blocking socket read (a server that drips its
reply) and pure-Python loops alike. A call into native code (a llama.cpp generation) is
interrupted when it returns, which its token budget bounds. Signals reach only the main thread,
which is where `pos run` and every `pos bench` worker play their cases.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType


class CaseTimeout(BaseException):
    """The case's wall-clock limit was reached.

    A BaseException, like KeyboardInterrupt, so that the agents' and backends' `except
    Exception` handlers (which turn failures into fallbacks or retries) cannot swallow it.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"case time limit of {seconds:g}s reached")
        self.seconds = seconds


@contextmanager
def wall_clock_limit(seconds: float | None) -> Iterator[None]:
    """Raise CaseTimeout in the calling (main) thread once `seconds` have passed."""
    if not seconds:
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("a case time limit works only in the main thread")

    def expire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def where_it_stopped(traceback: TracebackType | None) -> str:
    """'during a model call', 'in the environment' or 'in the agent', from the innermost
    PoS frame that was running when the limit fired."""
    place = "in the agent"
    while traceback is not None:
        module = traceback.tb_frame.f_globals.get("__name__", "")
        if module.startswith("pos_agent.llm"):
            return "during a model call"
        if module.startswith("pos_agent.envs"):
            place = "in the environment"
        traceback = traceback.tb_next
    return place
