"""The small actors of a Ray run besides the case runners: the cluster's one rate limiter and
the run's stop board, with the hooks a case runner installs to ask them (llm/_ratelimit.py's
`Limiter` and llm/_stop.py's stop check)."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pos_agent.llm import Gate, RateLimits, stoppable_sleep


class LimiterActor:
    """The cluster's one `Gate` (a threaded Ray actor: each waiting request holds a thread)."""

    def __init__(self, limits: RateLimits) -> None:
        self.gate = Gate(limits)

    def try_take(self, key: str) -> tuple[int | None, float]:
        return self.gate.try_take(key)

    def give(self, lease: int, status: int | None, retry_after_s: float | None) -> None:
        self.gate.give(lease, status, retry_after_s)

    def stats(self) -> dict[str, int]:
        return {"paused": self.gate.paused, "max_in_flight": self.gate.max_in_flight}


class StopBoard:
    """The run's stop, for every case runner of the cluster (a Ray actor of no CPU)."""

    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def is_stopped(self) -> bool:
        return self.stopped


class BoardCheck:
    """The stop check a case runner installs: asks the board, at most every CHECK_S."""

    CHECK_S = 0.25

    def __init__(self, board: Any) -> None:
        self.board = board
        self.asked = 0.0
        self.stopped = False

    def __call__(self) -> bool:
        import ray

        now = time.monotonic()
        if not self.stopped and now - self.asked >= self.CHECK_S:
            self.asked = now
            with contextlib.suppress(Exception):  # a board that cannot answer stops nothing
                self.stopped = bool(ray.get(self.board.is_stopped.remote(), timeout=2.0))
        return self.stopped


class ClusterLimiter:
    """The `Limiter` the HTTP path of an actor asks: the cluster's `LimiterActor`."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def acquire(self, key: str) -> int:
        import ray

        while True:
            lease, wait = ray.get(self.actor.try_take.remote(key))
            if lease is not None:
                return int(lease)
            stoppable_sleep(min(wait, 1.0))

    def release(self, lease: int, status: int | None, retry_after_s: float | None) -> None:
        self.actor.give.remote(lease, status, retry_after_s)
