"""The local executor: the cases played on this machine, in this process with one worker, else
in worker processes.

Each worker process plays one case at a time over its own pipe; one that dies costs only its
case (`infra_error`) and is replaced. Ctrl-C, SIGTERM and SIGHUP interrupt the cases in
progress, which record themselves `interrupted` (bench/signals.py).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_handles
from pathlib import Path
from typing import Any

from pos_agent.bench import signals, workers
from pos_agent.bench.case import (
    CaseBusyError,
    CaseInterrupted,
    CaseSpec,
    RecordError,
    default_loader,
    run_case,
)
from pos_agent.bench.config import BenchConfig
from pos_agent.bench.executors.base import (
    POLL_S,
    STOP_GRACE_S,
    CaseQueue,
    Deliver,
    case_dir,
    stand_in,
    write_stand_in,
)
from pos_agent.llm import ModelOptions
from pos_agent.trace import CaseResult, Status


def execute_locally(queue: CaseQueue, config: BenchConfig, deliver: Deliver) -> None:
    """The local executor: in this process with one worker, else in worker processes."""
    if config.workers <= 1:
        _execute_here(queue, config, deliver)
    else:
        _execute_in_workers(queue, config, deliver)


def worker_options(config: BenchConfig) -> dict[str, Any]:
    """The model options each process gets: with several workers, a local model's llama.cpp
    threads are split between them (one per core in total), unless threads were set."""
    options = dict(config.model_options)
    if config.workers > 1 and options.get("n_threads") is None:
        options["n_threads"] = threads_each(config.workers)
    return options


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads_each(workers: int = 1, *, busy: float = 0.0) -> int:
    """llama.cpp threads for each of `workers` processes: the cores this process may use, less
    the `busy` ones other work keeps running (`busy_cores()`), split evenly; at least one.

    llama.cpp's threads wait for each other at every layer, so one thread more than there are
    free cores makes each model call many times slower, never faster.
    """
    free = max(1, round(available_cores() - max(0.0, busy)))
    return max(1, free // max(1, workers))


def busy_cores() -> float:
    """How many cores other work keeps busy: the one-minute load average (0 where the system
    does not report it). Read before this process starts its own work."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def _settle(
    queue: CaseQueue, config: BenchConfig, spec: CaseSpec, result: CaseResult, deliver: Deliver
) -> bool:
    """A played case's result: noted on the timeline, then retried or delivered (True)."""
    if config.timeline is not None:
        config.timeline.receive(spec.folder, result.duration_s)
    return queue.settle(result, spec, deliver)


def _execute_here(queue: CaseQueue, config: BenchConfig, deliver: Deliver) -> None:
    options = ModelOptions(**config.model_options)
    load = default_loader(options)
    while queue:
        signals.check()
        spec = queue.next_due()
        if spec is None:
            _pause(queue.wait_s())
            continue
        if config.timeline is not None:
            config.timeline.send(spec.folder)
        try:
            result = run_case(
                spec,
                case_dir(config.run_dir, spec),
                run_name=config.run_dir.name,
                options=options,
                load=load,
                time_limit_s=config.case_timeout_s,
            )
        except CaseInterrupted as interrupted:
            deliver(interrupted.result)
            raise
        except CaseBusyError as busy:
            deliver(stand_in(spec, config.run_dir.name, "infra_error", str(busy)))
            continue
        _settle(queue, config, spec, result, deliver)


def _pause(seconds: float) -> None:
    """Wait for a retry to come due; a stop signal ends the wait at once."""
    threading.Event().wait(seconds)
    signals.check()


@dataclass
class _Worker:
    process: Any  # multiprocessing's SpawnProcess
    conn: Connection
    spec: CaseSpec | None = None


class _Pool:
    """Worker processes, each playing one case at a time over its own pipe. A worker that dies
    costs only its own case: it is replaced by a fresh one."""

    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self.context = multiprocessing.get_context("spawn")
        self.options = worker_options(config)
        self.workers = [self._spawn() for _ in range(config.workers)]

    def _spawn(self) -> _Worker:
        mine, theirs = self.context.Pipe()
        process = self.context.Process(
            target=workers.worker_main,
            args=(theirs, self.options, os.getpid()),
            name="pos-bench-worker",
            daemon=True,
        )
        process.start()
        theirs.close()
        return _Worker(process, mine)

    @property
    def idle(self) -> list[_Worker]:
        return [w for w in self.workers if w.spec is None]

    @property
    def busy(self) -> list[_Worker]:
        return [w for w in self.workers if w.spec is not None]

    def submit(self, worker: _Worker, spec: CaseSpec) -> None:
        config = self.config
        worker.conn.send(
            workers.Job(spec, str(config.run_dir), config.run_dir.name, config.case_timeout_s)
        )
        worker.spec = spec
        if config.timeline is not None:
            config.timeline.send(spec.folder)

    def replies(self, timeout: float) -> list[tuple[CaseSpec, workers.Reply]]:
        """The replies of busy workers that answered (or died) within `timeout` seconds."""
        busy = self.busy
        if not busy:
            return []
        handles: list[Any] = [w.conn for w in busy] + [w.process.sentinel for w in busy]
        ready = set(wait_for_handles(handles, timeout))
        answered = []
        for index, worker in enumerate(self.workers):
            spec = worker.spec
            if spec is None or (worker.conn not in ready and worker.process.sentinel not in ready):
                continue
            reply = self._reply(worker)
            if reply is None:
                continue  # the process ended after its reply was read; nothing more to say
            worker.spec = None
            if reply.kind == "died":
                worker.conn.close()
                self.workers[index] = self._spawn()
            answered.append((spec, reply))
        return answered

    def _reply(self, worker: _Worker) -> workers.Reply | None:
        try:
            if worker.conn.poll():
                reply: workers.Reply = worker.conn.recv()
                return reply
        except (EOFError, OSError):
            pass
        worker.process.join(timeout=5)
        return workers.Reply("died", message=death(worker.process.exitcode))

    def signal_busy(self, signum: int) -> None:
        for worker in self.busy:
            _send_signal(worker.process.pid, signum)

    def close(self, *, kill: bool = False) -> None:
        """End every worker: ask idle ones to leave, kill the rest (or all, with `kill`)."""
        for worker in self.workers:
            if not kill and worker.spec is None:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
            else:
                _send_signal(worker.process.pid, signal.SIGKILL)
        for worker in self.workers:
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                _send_signal(worker.process.pid, signal.SIGKILL)
                worker.process.join(timeout=5)
            worker.conn.close()


def death(exitcode: int | None) -> str:
    """How a worker process ended, said for the record of the case it was playing."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        cause = " (as an out-of-memory kill does)" if -exitcode == signal.SIGKILL else ""
        return f"the worker process was killed by {name}{cause}"
    return f"the worker process exited with code {exitcode}"


def _send_signal(pid: int | None, signum: int) -> None:
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _execute_in_workers(queue: CaseQueue, config: BenchConfig, deliver: Deliver) -> None:
    pool = _Pool(config)
    try:
        while queue or pool.busy:
            signals.check()
            for worker in pool.idle:
                spec = queue.next_due()
                if spec is None:
                    break
                pool.submit(worker, spec)
            for spec, reply in pool.replies(POLL_S):
                result = outcome(reply, spec, config.run_dir)
                if result is None:
                    continue
                delivered = _settle(queue, config, spec, result, deliver)
                if delivered and result.status == "interrupted":
                    # The terminal's Ctrl-C reached the worker: the run stops, even if the
                    # parent's own signal went astray.
                    raise signals.Interrupted(signals.requested() or signal.SIGINT)
            if not pool.busy and queue:
                _pause(queue.wait_s())
    except KeyboardInterrupt:
        _stop(pool, deliver)
        raise
    except BaseException:
        pool.close(kill=True)
        raise
    pool.close()


def outcome(reply: workers.Reply, spec: CaseSpec, run_dir: Path) -> CaseResult | None:
    """The result of a worker's reply, or one standing in for a worker that failed."""
    if reply.kind == "result":
        return reply.result
    if reply.kind == "record_error":
        # the disk is full or unwritable: no further case can be recorded
        raise RecordError(reply.errno, reply.message)
    if reply.kind == "busy":
        return stand_in(spec, run_dir.name, "infra_error", reply.message)
    if reply.kind == "skipped":
        return None  # interrupted before its case started: nothing was written
    status: Status = "infra_error" if reply.kind == "died" else "harness_error"
    result = stand_in(spec, run_dir.name, status, f"{reply.message} while playing this case")
    folder = case_dir(run_dir, spec)
    if not folder.is_dir():
        return result  # the case never started: there is no folder to write into
    write_stand_in(folder, spec, result)
    return result


def _stop(pool: _Pool, deliver: Deliver) -> None:
    """After a stop signal: start nothing new, interrupt the cases in progress, deliver their
    `interrupted` results (a second signal stops waiting), then end the workers."""
    # The signal the run got (a no-op for workers the terminal already reached), so that
    # each interrupted record names it.
    pool.signal_busy(signals.requested() or signal.SIGINT)
    deadline = time.monotonic() + STOP_GRACE_S
    try:
        with signals.hurry():
            while pool.busy and time.monotonic() < deadline:
                for spec, reply in pool.replies(max(0.0, deadline - time.monotonic())):
                    result = outcome(reply, spec, pool.config.run_dir)
                    if result is not None:
                        deliver(result)
    except KeyboardInterrupt:
        pass
    finally:
        pool.close(kill=True)
