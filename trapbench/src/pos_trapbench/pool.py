"""Worker processes for corpus building that the parent can always take back.

`make` builds one game per task in long-lived worker processes (spawned, so TextWorld is imported
once per worker, not per game). The parent never blocks on a worker:

- it waits on the workers' result pipes and process sentinels together, with a timeout, so a
  worker that dies (killed, out of memory, crashed in C code) ends its task as failed at once;
- a task running longer than `Limits.time_s` gets its worker killed, and the task fails;
- a worker whose resident memory passes `Limits.kill_mb` is killed, and the task fails;
- inside each worker a `MemoryGuard` raises `MemoryBoundExceeded` in the task when the process
  passes `Limits.memory_mb`, so a search that grows without end ends as an error the task can
  record (the kill above is the backstop when the guard cannot interrupt it).

A killed or dead worker is replaced by a fresh process for the remaining tasks. Each task reports
the peak resident memory of its worker while it ran (Linux's VmHWM, reset before the task).
"""

from __future__ import annotations

import _thread
import contextlib
import multiprocessing
import os
import resource
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

MB = 1 << 20
TIME_LIMIT_S = 600.0
"""Default wall-clock limit of one task (one game); a game normally takes seconds."""
MEMORY_LIMIT_MB = 2048
"""Default memory bound of a worker while it builds one game (normal games stay far below)."""
KILL_FACTOR = 1.25
"""A worker is killed when its memory passes this many times the memory bound."""
RETIRE_FRACTION = 0.5
"""A worker that still holds this share of its memory bound after a task is replaced."""
STARTED = "started"
"""What a worker sends once it has the task (imports done): the time limit counts from there."""
STARTUP_S = 300.0
"""Time a new worker may take to start (import TextWorld) before its first task is timed."""
POLL_S = 0.25
"""How often the parent checks the workers' time and memory."""


class MemoryBoundExceeded(RuntimeError):
    """The worker's memory passed its bound while a task ran (raised inside the task)."""


@dataclass(frozen=True, slots=True)
class Limits:
    time_s: float = TIME_LIMIT_S
    memory_mb: int = MEMORY_LIMIT_MB

    @property
    def kill_mb(self) -> int:
        return int(self.memory_mb * KILL_FACTOR)


@dataclass(frozen=True, slots=True)
class Running:
    """A task in progress, as the progress callback sees it."""

    key: str
    worker: int
    """Position of the worker in the pool, from 1 (kept by a replacement process)."""
    pid: int
    seconds: float
    rss_mb: float


@dataclass(frozen=True, slots=True)
class TaskResult:
    """How one task ended: `value` when it returned, `error` when it failed."""

    key: str
    value: Any = None
    error: str | None = None
    worker: int = 0
    seconds: float = 0.0
    peak_mb: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class _Task:
    key: str
    function: Callable[..., Any]
    arguments: tuple[Any, ...]


@dataclass
class _Worker:
    number: int
    process: Any
    connection: Connection
    task: _Task | None = None
    started: float = 0.0
    acknowledged: bool = False
    """The worker said it has the task (until then, it may still be starting up)."""
    peak_mb: float = 0.0
    """Largest resident memory the parent sampled while the current task ran."""


@dataclass
class WorkerPeak:
    """The largest memory a worker position reached, and in which task."""

    mb: float = 0.0
    key: str = ""


@dataclass
class WorkerPool:
    """A fixed number of worker processes running submitted tasks; see the module doc."""

    workers: int
    limits: Limits = field(default_factory=Limits)
    poll_s: float = POLL_S
    peaks: dict[int, WorkerPeak] = field(default_factory=dict)
    _queue: deque[_Task] = field(default_factory=deque)
    _idle: list[_Worker] = field(default_factory=list)
    _busy: list[_Worker] = field(default_factory=list)
    _free_numbers: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._free_numbers = list(range(self.workers, 0, -1))
        self.peaks = {n: WorkerPeak() for n in range(1, self.workers + 1)}

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(
        self, key: str, function: Callable[..., Any], *arguments: Any, first: bool = False
    ) -> None:
        """Queue `function(*arguments)` (picklable: a module-level function); `first` puts it
        before the tasks already queued."""
        task = _Task(key, function, arguments)
        if first:
            self._queue.appendleft(task)
        else:
            self._queue.append(task)

    @property
    def pending(self) -> bool:
        return bool(self._queue or self._busy)

    def running(self) -> list[Running]:
        now = time.monotonic()
        return [
            Running(
                w.task.key, w.number, w.process.pid, now - w.started, _rss_mb(w.process.pid) or 0.0
            )
            for w in self._busy
            if w.task is not None
        ]

    def results(
        self, on_tick: Callable[[list[Running]], None] | None = None
    ) -> Iterator[TaskResult]:
        """Run queued tasks and yield each result as it comes; tasks submitted meanwhile run
        too. `on_tick` sees the tasks in progress every `poll_s`. Returns when nothing is
        queued or running."""
        while self.pending:
            self._dispatch()
            if on_tick is not None:
                on_tick(self.running())
            yield from self._collect()

    def close(self) -> None:
        """Stop every worker (the tasks in flight are lost)."""
        for worker in self._busy + self._idle:
            self._stop(worker, kill=worker in self._busy)
        self._busy.clear()
        self._idle.clear()

    def _dispatch(self) -> None:
        while self._queue and (self._idle or self._free_numbers):
            worker = self._idle.pop() if self._idle else self._spawn(self._free_numbers.pop())
            task = self._queue.popleft()
            try:
                worker.connection.send((task.function, task.arguments, self.limits.memory_mb))
            except (BrokenPipeError, OSError):
                # The idle worker died: replace it and try the task again.
                self._stop(worker, kill=True)
                self._free_numbers.append(worker.number)
                self._queue.appendleft(task)
                continue
            worker.task, worker.started, worker.peak_mb = task, time.monotonic(), 0.0
            worker.acknowledged = False
            self._busy.append(worker)

    def _collect(self) -> Iterator[TaskResult]:
        waitables: list[Any] = [w.connection for w in self._busy]
        waitables += [w.process.sentinel for w in self._busy]
        ready = set(wait(waitables, timeout=self.poll_s))
        for worker in list(self._busy):
            result: TaskResult | None
            if worker.connection in ready or worker.process.sentinel in ready:
                # A death is seen through the sentinel; a result through the pipe.
                result = self._receive(worker)
            else:
                result = self._check(worker)
            if result is not None:
                self._note_peak(worker, result)
                yield result

    def _receive(self, worker: _Worker) -> TaskResult | None:
        """The task's result once the worker sent it; a failure when the worker died; None
        when the worker only said it started the task (its time counts from then)."""
        assert worker.task is not None
        key = worker.task.key
        message: Any = None
        try:
            while worker.connection.poll():
                message = worker.connection.recv()
                if message != STARTED:
                    break
                worker.started, worker.acknowledged = time.monotonic(), True
                message = None
        except (EOFError, OSError):
            message = None
        seconds = time.monotonic() - worker.started
        if message is None:
            if worker.process.is_alive():
                return self._check(worker)
            worker.process.join(timeout=5)
            code = worker.process.exitcode
            how = (
                f"killed by signal {-code}"
                if code is not None and code < 0
                else f"exited with code {code}"
            )
            return self._lost(worker, key, f"the worker died ({how})", seconds)
        value, error, peak_mb, retiring = message
        worker.peak_mb = max(worker.peak_mb, peak_mb)
        if retiring:  # it keeps too much memory from this task: a fresh process takes over
            worker.process.join(timeout=5)
            self._stop(worker, kill=True)
            self._retire(worker)
        else:
            self._busy.remove(worker)
            worker.task = None
            self._idle.append(worker)
        return TaskResult(
            key, value=value, error=error, worker=worker.number, seconds=seconds, peak_mb=peak_mb
        )

    def _check(self, worker: _Worker) -> TaskResult | None:
        """Kill the worker when its task is over time or over memory."""
        assert worker.task is not None
        seconds = time.monotonic() - worker.started
        rss = _rss_mb(worker.process.pid)
        if rss is not None:
            worker.peak_mb = max(worker.peak_mb, rss)
        reason = None
        if seconds > self.limits.time_s and (worker.acknowledged or seconds > STARTUP_S):
            reason = f"over the time limit ({self.limits.time_s:.0f} s)"
        elif rss is not None and rss > self.limits.kill_mb:
            reason = f"over the memory limit ({rss:.0f} MB > {self.limits.kill_mb} MB)"
        if reason is None:
            return None
        key = worker.task.key
        self._stop(worker, kill=True)
        return self._lost(worker, key, f"the worker was stopped: {reason}", seconds)

    def _lost(self, worker: _Worker, key: str, error: str, seconds: float) -> TaskResult:
        """Retire a worker that died or was stopped; the failed result of its task."""
        self._retire(worker)
        return TaskResult(
            key, error=error, worker=worker.number, seconds=seconds, peak_mb=worker.peak_mb
        )

    def _note_peak(self, worker: _Worker, result: TaskResult) -> None:
        peak = max(result.peak_mb, worker.peak_mb)
        best = self.peaks.setdefault(worker.number, WorkerPeak())
        if peak > best.mb:
            best.mb, best.key = peak, result.key

    def _retire(self, worker: _Worker) -> None:
        """Forget a dead or killed worker; its position gets a fresh process when needed."""
        if worker in self._busy:
            self._busy.remove(worker)
        worker.task = None
        with contextlib.suppress(OSError):
            worker.connection.close()
        self._free_numbers.append(worker.number)

    def _spawn(self, number: int) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_worker_main, args=(child,), name=f"trapbench-worker-{number}", daemon=True
        )
        process.start()
        child.close()
        return _Worker(number, process, parent)

    def _stop(self, worker: _Worker, *, kill: bool) -> None:
        process = worker.process
        if process.is_alive():
            if kill:
                process.kill()
            else:
                with contextlib.suppress(OSError):
                    worker.connection.send(None)  # asks the worker to exit
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        with contextlib.suppress(OSError):
            worker.connection.close()


def _worker_main(connection: Connection) -> None:
    """A worker: run tasks from the parent until it sends None or goes away."""
    # The parent owns the build and stops the workers itself on Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is None:
            return
        function, arguments, memory_mb = message
        try:
            connection.send(STARTED)
        except (BrokenPipeError, OSError):
            return
        reset_peak_memory()
        value, error = None, None
        try:
            with MemoryGuard(memory_mb):
                value = function(*arguments)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        # Memory a runaway search took is not always given back to the system: a worker left
        # with much of its bound in use exits, and the parent starts a fresh one.
        retiring = (_rss_mb(os.getpid()) or 0.0) > memory_mb * RETIRE_FRACTION
        try:
            connection.send((value, error, peak_memory_mb(), retiring))
        except (BrokenPipeError, OSError):
            return
        if retiring:
            return


class MemoryGuard:
    """Raises `MemoryBoundExceeded` in the main thread while this process's resident memory is
    above `limit_mb` (checked every `interval_s` by a thread; again every second while it stays
    above, in case something in between swallowed the first one).

    Pure-Python searches are interrupted at once; code inside a C call is interrupted when the
    call returns."""

    def __init__(self, limit_mb: float, interval_s: float = 0.05) -> None:
        self.limit_mb = limit_mb
        self.interval_s = interval_s
        self._active = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous: Any = None
        self._over_mb = 0.0

    def __enter__(self) -> MemoryGuard:
        if (
            threading.current_thread() is not threading.main_thread()
            or _rss_mb(os.getpid()) is None
        ):
            return self  # signals reach only the main thread; no way to measure here
        self._previous = signal.signal(signal.SIGUSR1, self._raise)
        self._active = True
        self._thread = threading.Thread(target=self._watch, name="memory-guard", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._active = False  # first: a signal arriving from here on raises nothing
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            signal.signal(signal.SIGUSR1, self._previous)

    def _watch(self) -> None:
        last = 0.0
        pid = os.getpid()
        while not self._stop.wait(self.interval_s):
            rss = _rss_mb(pid) or 0.0
            now = time.monotonic()
            if rss > self.limit_mb and now - last >= 1.0:
                self._over_mb, last = rss, now
                _thread.interrupt_main(signal.SIGUSR1)

    def _raise(self, signum: int, frame: object) -> None:
        if self._active:
            raise MemoryBoundExceeded(
                f"memory bound: {self._over_mb:.0f} MB > {self.limit_mb:.0f} MB"
            )


def _rss_mb(pid: int) -> float | None:
    """Resident memory of a process (Linux /proc); None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as stream:
            pages = int(stream.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / MB


def reset_peak_memory() -> None:
    """Start this process's peak-memory count afresh (Linux: VmHWM via clear_refs)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


def peak_memory_mb() -> float:
    """Peak resident memory of this process since `reset_peak_memory` (or since it started)."""
    try:
        with open("/proc/self/status", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MB if sys.platform == "darwin" else peak / 1024
