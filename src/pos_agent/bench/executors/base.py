"""What every executor shares: the queue of cases to play, the record that stands in for a
case whose worker gave no result, and how a played case's result is handed on."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from pathlib import Path

from pos_agent.bench.case import CaseSpec, RecordError
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.recorder import DISK_FULL, case_fields
from pos_agent.trace import CaseResult, Status, write_result

STOP_GRACE_S = 30.0  # after Ctrl-C, how long interrupted workers get to write their results
RETRY_CAP_S = 120.0  # the longest an infra retry waits before it may start
POLL_S = 0.5  # how often the runner looks at a stop request while its workers play

Deliver = Callable[[CaseResult], None]
"""Takes every final result: the runner counts it and rewrites summary.json."""


def case_dir(run_dir: Path, spec: CaseSpec) -> Path:
    return run_dir / spec.folder


class CaseQueue:
    """The cases still to play, in order; a case retried after an infrastructure error waits
    `base_s * 2**(attempt - 1)` seconds (at most RETRY_CAP_S) before it may start again."""

    def __init__(self, todo: Sequence[CaseSpec], limit: int, base_s: float) -> None:
        self.items: deque[tuple[float, CaseSpec]] = deque((0.0, spec) for spec in todo)
        self.limit = limit
        self.base_s = base_s
        self.attempts: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self.items)

    def retry(self, result: CaseResult, spec: CaseSpec, *, wait: bool = True) -> bool:
        """Queue `spec` again when `result` is an infrastructure error with retries left;
        `wait=False` (a lost node, not a failing server) lets it start again at once."""
        if result.status != "infra_error" or self.attempts[spec.folder] >= self.limit:
            return False
        self.attempts[spec.folder] += 1
        delay = min(RETRY_CAP_S, self.base_s * 2 ** (self.attempts[spec.folder] - 1))
        delay = delay if wait else 0.0
        self.items.append((time.monotonic() + delay, spec))
        return True

    def settle(
        self, result: CaseResult, spec: CaseSpec, deliver: Deliver, *, wait: bool = True
    ) -> bool:
        """Queue the case again (`retry`), else hand its result to `deliver`; True when it
        was delivered."""
        if self.retry(result, spec, wait=wait):
            return False
        deliver(result)
        return True

    def next_due(self) -> CaseSpec | None:
        """The first case that may start now (taken off the queue), or None."""
        now = time.monotonic()
        for index, (due, spec) in enumerate(self.items):
            if due <= now:
                del self.items[index]
                return spec
        return None

    def wait_s(self) -> float:
        """Seconds until the earliest waiting case may start."""
        if not self.items:
            return 0.0
        return max(0.0, min(due for due, _ in self.items) - time.monotonic())


def stand_in(spec: CaseSpec, run_name: str, status: Status, error: str) -> CaseResult:
    """An unscored result for a case that gave none of its own."""
    return CaseResult(**case_fields(spec, run_name), status=status, success=False, error=error)


def write_stand_in(folder: Path, spec: CaseSpec, result: CaseResult) -> None:
    """Write a result standing in for a case whose worker gave none, under the case's lock;
    a full disk is a RecordError, a lock held by a live writer leaves that writer's result."""
    try:
        with FileLock(folder / ".lock"):
            write_result(folder, result)
    except LockHeld:
        pass  # some process still writes there; its own result will stand
    except OSError as exc:
        if exc.errno in DISK_FULL:
            raise RecordError(
                exc.errno, f"cannot write the result of {spec.folder}: {exc}"
            ) from None
