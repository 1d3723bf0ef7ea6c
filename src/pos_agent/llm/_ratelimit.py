"""One rate limit for every process that calls the same model: concurrency, pace, Retry-After.

Provider limits are per key and per model, not per process: 2 to 20 concurrent workers on one
key already draw HTTP 429s. So the limit lives in one place that every process asks before each
request (a Ray actor on a cluster, `pos_agent.bench.executors.ray`), and this module holds its
logic (`Gate`, pure bookkeeping behind a lock) and the hook in the HTTP path (`request_slot`).

A `Gate` keeps, per model key (server URL and model name):
- at most `concurrency` requests in flight;
- at most `per_minute` request starts a minute, evenly spaced;
- a pause: after a 429 with Retry-After (or without one: `default_pause_s`), no request to
  that key starts until the pause is over, in any process.

A permit is a lease that expires (`lease_s`): a process that dies while holding one cannot
starve the others. Without an installed limiter (`install`), `request_slot` does nothing: a
single `pos run` or the local executor behaves exactly as before.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class RateLimits:
    """The limits of one model key (None: unlimited)."""

    concurrency: int | None = None
    """Requests in flight at once, across every process."""
    per_minute: float | None = None
    """Request starts per minute, across every process."""
    default_pause_s: float = 1.0
    """How long a 429 without a Retry-After header pauses the key."""
    lease_s: float = 900.0
    """A permit not given back within this time is taken back (its holder died)."""

    def __post_init__(self) -> None:
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError("a model concurrency limit is at least 1")
        if self.per_minute is not None and self.per_minute <= 0:
            raise ValueError("a request rate is a positive number per minute")

    @property
    def active(self) -> bool:
        return self.concurrency is not None or self.per_minute is not None


@dataclass
class _KeyState:
    leases: dict[int, float] = field(default_factory=dict)  # lease -> expiry (monotonic)
    paused_until: float = 0.0
    next_start: float = 0.0


class Gate:
    """The shared bookkeeping: `wait_s(key)` says how long until a request may start,
    `take(key)` starts one, `give(lease, retry_after_s)` ends it. Thread-safe; `clock` is
    injectable so that tests need no sleeps."""

    def __init__(self, limits: RateLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._keys: dict[str, _KeyState] = {}
        self._owner: dict[int, str] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.paused = 0  # 429s seen, for reports
        self.max_in_flight = 0

    def try_take(self, key: str) -> tuple[int | None, float]:
        """A lease when a request may start now, else None and the seconds to wait."""
        with self._lock:
            now = self.clock()
            state = self._keys.setdefault(key, _KeyState())
            for lease, expiry in list(state.leases.items()):
                if expiry <= now:
                    del state.leases[lease]
                    self._owner.pop(lease, None)
            waits = [state.paused_until - now, state.next_start - now]
            limit = self.limits.concurrency
            if limit is not None and len(state.leases) >= limit:
                soonest = min(state.leases.values()) - now
                waits.append(max(0.05, min(soonest, 1.0)))  # a give() usually comes first
            wait = max(waits)
            if wait > 0:
                return None, wait
            lease = next(self._ids)
            state.leases[lease] = now + self.limits.lease_s
            self._owner[lease] = key
            if self.limits.per_minute is not None:
                state.next_start = max(now, state.next_start) + 60.0 / self.limits.per_minute
            self.max_in_flight = max(self.max_in_flight, len(state.leases))
            return lease, 0.0

    def give(
        self, lease: int, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        """End a request; a 429 pauses its key for Retry-After (or `default_pause_s`)."""
        with self._lock:
            key = self._owner.pop(lease, None)
            if key is None:
                return  # expired, or given twice
            state = self._keys[key]
            state.leases.pop(lease, None)
            if status == 429:
                self.paused += 1
                pause = retry_after_s if retry_after_s is not None else self.limits.default_pause_s
                state.paused_until = max(state.paused_until, self.clock() + pause)

    def in_flight(self, key: str) -> int:
        with self._lock:
            state = self._keys.get(key)
            return len(state.leases) if state else 0


class Limiter(Protocol):
    """What the HTTP path asks: `acquire` blocks until a request to `key` may start."""

    def acquire(self, key: str) -> int: ...

    def release(self, lease: int, status: int | None, retry_after_s: float | None) -> None: ...


class LocalLimiter:
    """A `Gate` in this process (one process's threads; the cluster uses a Ray actor)."""

    def __init__(self, limits: RateLimits) -> None:
        self.gate = Gate(limits)
        self._changed = threading.Condition()

    def acquire(self, key: str) -> int:
        while True:
            lease, wait = self.gate.try_take(key)
            if lease is not None:
                return lease
            with self._changed:
                self._changed.wait(wait)

    def release(self, lease: int, status: int | None, retry_after_s: float | None) -> None:
        self.gate.give(lease, status, retry_after_s)
        with self._changed:
            self._changed.notify_all()


_INSTALLED: list[Limiter] = []


def install(limiter: Limiter | None) -> None:
    """Make `limiter` govern every model request of this process (None: no limit)."""
    _INSTALLED.clear()
    if limiter is not None:
        _INSTALLED.append(limiter)


def installed() -> Limiter | None:
    return _INSTALLED[0] if _INSTALLED else None


class Slot:
    """One request's permit; `done` tells the limiter how the request ended."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.retry_after_s: float | None = None

    def done(self, status: int, retry_after_s: float | None) -> None:
        self.status, self.retry_after_s = status, retry_after_s


@contextlib.contextmanager
def request_slot(server: str, model: str) -> Iterator[Slot]:
    """Hold a permit for one request to `model` at `server` (a no-op without a limiter)."""
    slot = Slot()
    limiter = installed()
    if limiter is None:
        yield slot
        return
    lease = limiter.acquire(f"{server}|{model}")
    try:
        yield slot
    finally:
        limiter.release(lease, slot.status, slot.retry_after_s)
