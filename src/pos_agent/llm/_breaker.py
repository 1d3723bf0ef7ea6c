"""A circuit breaker per server: stop calling a base URL that is clearly down, for a while.

Without it, every case of a benchmark spends its full retry budget (minutes of timeouts and
backoff) on a server that died, one case after another. After `threshold` consecutive outage
failures (connection errors, timeouts, 5xx) the breaker opens: calls fail at once for
`cooldown_s`. Then it lets calls through again; the first failure re-opens it, a success closes
it. The state is per process and shared by every model of that base URL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

Clock = Callable[[], float]


@dataclass
class CircuitBreaker:
    """Consecutive-failure counter for one server. Thread-safe."""

    threshold: int
    cooldown_s: float
    clock: Clock = time.monotonic
    failures: int = 0
    opened_at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def refusal(self) -> float | None:
        """Seconds until calls are let through again, or None when a call may go ahead."""
        with self._lock:
            if self.threshold <= 0 or self.opened_at is None:
                return None
            left = self.opened_at + self.cooldown_s - self.clock()
            return left if left > 0 else None

    def record_success(self) -> None:
        with self._lock:
            self.failures = 0
            self.opened_at = None

    def record_outage(self) -> bool:
        """Count one outage failure; True when this failure opened (or re-opened) the breaker."""
        with self._lock:
            self.failures += 1
            if self.threshold > 0 and self.failures >= self.threshold:
                self.opened_at = self.clock()
                return True
            return False


_BREAKERS: dict[str, CircuitBreaker] = {}
_BREAKERS_LOCK = threading.Lock()


def breaker_for(
    base_url: str, *, threshold: int, cooldown_s: float, clock: Clock | None = None
) -> CircuitBreaker:
    """The process-wide breaker of `base_url` (credential-free), created on first use.

    The first caller's settings hold for the URL; later callers share its state.
    """
    with _BREAKERS_LOCK:
        breaker = _BREAKERS.get(base_url)
        if breaker is None:
            breaker = CircuitBreaker(threshold, cooldown_s, clock or time.monotonic)
            _BREAKERS[base_url] = breaker
        return breaker


def forget_breakers() -> None:
    """Drop every breaker's state (tests; a long-lived process that knows a server is back)."""
    with _BREAKERS_LOCK:
        _BREAKERS.clear()
