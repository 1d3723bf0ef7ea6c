"""Run a suite: cases x methods in worker processes, resumable, one experiment per run folder.

Layout: `runs/<run>/config.json` (the run's identity, written once), `runs/<run>/summary.json`,
and one folder per case, `runs/<run>/<agent>__<case>/`, with `events.jsonl` and `result.json`.

Before any case starts, `run_bench` checks the cases (methods, duplicates, model specs, task
ids), the run folder (its name, its lock, and that a resume asks for the same experiment) and,
with one small call each, that every model answers. A broken set-up is refused, never scored.

A case is finished when its `result.json` has a scored status (success, failure), was written
by a known result version with the run's settings, and its trace is complete; `--resume` keeps
those and reruns everything else whole. Results are written atomically by the one process that
played the case, so killing the runner at any moment loses no finished result.

Each worker process plays one case at a time over its own pipe; one that dies costs only its
case (`infra_error`) and is replaced. A case retried after an infrastructure error waits out
the model server's circuit breaker first. Ctrl-C, SIGTERM and SIGHUP stop the run the same way
(bench/signals.py).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
from pos_agent.bench.executors import Timeline, executor_for
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.preflight import Preflight, check_models, preflight, validate_cases
from pos_agent.bench.recorder import DISK_FULL, case_fields
from pos_agent.bench.run_folder import RunFolder, RunPlan
from pos_agent.llm import ModelOptions, RateLimits
from pos_agent.trace import (
    KNOWN_RESULT_VERSIONS,
    TRACE_VERSION,
    CaseResult,
    Status,
    is_scored,
    read_result,
    write_json_atomic,
    write_result,
)

STOP_GRACE_S = 30.0  # after Ctrl-C, how long interrupted workers get to write their results
RETRY_CAP_S = 120.0  # the longest an infra retry waits before it may start
POLL_S = 0.5  # how often the runner looks at a stop request while its workers play

Deliver = Callable[[CaseResult], None]


@dataclass
class BenchConfig:
    """How to run a list of cases."""

    run_dir: Path
    workers: int = 1
    resume: bool = False
    infra_retries: int = 2
    model_options: dict[str, Any] = field(default_factory=dict)
    case_timeout_s: float | None = None
    """Wall-clock limit per case; reaching it ends the case as unscored infra_error."""
    preflight: bool = True
    """One small call per distinct model before the first case; a broken model is refused."""
    describe: dict[str, Any] = field(default_factory=dict)
    """Recorded in config.json for humans (suite, methods, workers); not part of the identity."""
    executor: str = "local"
    """Where the cases are played: local (worker processes here) or ray (bench/executors/)."""
    ray_address: str | None = None
    """The Ray cluster to use (auto, HOST:PORT); None: a Ray started for this run."""
    max_concurrency: int | None = None
    """Ray: cases played at once (None: one per CPU of the cluster)."""
    rate_limits: RateLimits | None = None
    """Ray: one limit per model for the whole cluster (concurrency, pace, 429 Retry-After)."""
    timeline: Timeline | None = None
    """When set, each case's send, receive and play times are noted (perf.workers)."""


@dataclass
class Progress:
    """Running totals for the progress display and summary.json."""

    total: int
    skipped: int = 0
    done: int = 0
    by_agent: dict[str, Counter[str]] = field(default_factory=dict)

    def count(self, result: CaseResult) -> None:
        self.by_agent.setdefault(result.agent, Counter())[result.status] += 1

    def success_line(self) -> str:
        parts = []
        for agent, counts in sorted(self.by_agent.items()):
            scored = sum(n for status, n in counts.items() if is_scored(status))
            rate = counts["success"] / scored if scored else 0.0
            parts.append(f"{agent} {rate:.0%} ({counts['success']}/{scored})")
        return "  ".join(parts)


def case_dir(run_dir: Path, spec: CaseSpec) -> Path:
    return run_dir / spec.folder


def worker_options(config: BenchConfig) -> dict[str, Any]:
    """The model options each process gets: with several workers, a local model's llama.cpp
    threads are split between them (one per core in total), unless threads were set."""
    options = dict(config.model_options)
    if config.workers > 1 and options.get("n_threads") is None:
        options["n_threads"] = max(1, available_cores() // config.workers)
    return options


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run_bench(
    specs: Sequence[CaseSpec],
    config: BenchConfig,
    *,
    on_result: Callable[[CaseResult, Progress], None] | None = None,
    check: Preflight = preflight,
) -> list[CaseResult]:
    """Run every case (in `config.workers` processes) and return all results, kept ones included.

    Raises SetupError or RunFolderError (both ValueError) before anything runs when the set-up
    or the run folder is wrong, KeyboardInterrupt after Ctrl-C (the interrupted results and
    summary.json are written first), and RecordError when records cannot be written.
    """
    with signals.stop_on_signals():  # SIGTERM and SIGHUP take Ctrl-C's path
        return _run_bench(specs, config, on_result, check)


def _run_bench(
    specs: Sequence[CaseSpec],
    config: BenchConfig,
    on_result: Callable[[CaseResult, Progress], None] | None,
    check: Preflight,
) -> list[CaseResult]:
    validate_cases(specs)
    options = ModelOptions(**config.model_options)
    plan = RunPlan.of(specs, options)
    folder = RunFolder(config.run_dir)
    folder.check(plan, resume=config.resume)  # refuse early, before any model call
    folder.lock(plan, resume=config.resume)  # a run in progress is refused before pre-flight
    with folder:
        if config.preflight:
            check_models(specs, options, check)
        folder.record(plan, describe=config.describe)
        todo, results = pending(specs, config.run_dir, plan, config.resume)
        before = unscored_before(todo, config.run_dir) if config.resume else {}
        progress = Progress(total=len(specs), skipped=len(results))
        for result in results:
            progress.count(result)

        def deliver(result: CaseResult) -> None:
            earlier = before.get(f"{result.agent}__{result.case}")
            if earlier is not None and mark_repeat(result, earlier):
                write_result(case_dir(config.run_dir, earlier[0]), result)
            results.append(result)
            progress.done += 1
            progress.count(result)
            write_summary(config.run_dir, results, progress)
            if on_result is not None:
                on_result(result, progress)

        try:
            execute(todo, config, deliver)
        except BaseException:
            # The disk that failed the run may fail this too; the cause is what is raised.
            with contextlib.suppress(OSError):
                write_summary(config.run_dir, results, progress)
            raise
        write_summary(config.run_dir, results, progress)
    return results


def pending(
    specs: Sequence[CaseSpec], run_dir: Path, plan: RunPlan, resume: bool
) -> tuple[list[CaseSpec], list[CaseResult]]:
    """The cases still to run, and the finished results a resume keeps."""
    todo, kept = [], []
    for spec in specs:
        folder = case_dir(run_dir, spec)
        result = read_result(folder) if resume else None
        if result is not None and finished(result, folder, plan.hashes[spec.folder]):
            kept.append(result)
        elif (
            result is not None
            and repeated_failure(result)
            and result.settings_hash == plan.hashes[spec.folder]
        ):
            kept.append(result)  # the same failure every time: reported, not retried forever
        else:
            todo.append(spec)
    return todo, kept


# A case whose runs end with the same infrastructure error this many times in a row (a data
# generator that fails on every attempt, a set-up over its timeout) is not rerun by `--resume`:
# its result stays, and the report lists it with the count. Other unscored statuses (a fixed
# set-up, an interrupted case) are always rerun.
REPEAT_LIMIT = 2
REPEATABLE: tuple[Status, ...] = ("infra_error",)


def unscored_before(
    todo: Sequence[CaseSpec], run_dir: Path
) -> dict[str, tuple[CaseSpec, CaseResult]]:
    """The unscored results a resume is about to replace, by case folder."""
    found = {}
    for spec in todo:
        result = read_result(case_dir(run_dir, spec))
        if result is not None and not is_scored(result.status):
            found[spec.folder] = (spec, result)
    return found


def failure_line(result: CaseResult) -> str:
    """The failure a repeat is recognised by: the status and the error's first line, without a
    previous repeat note."""
    text = (result.error or "").strip().splitlines()
    line = text[0] if text else ""
    return f"{result.status}: {line.split(_REPEAT_NOTE, 1)[-1].strip()}"


_REPEAT_NOTE = "the same failure on resume:"


def mark_repeat(result: CaseResult, earlier: tuple[CaseSpec, CaseResult]) -> bool:
    """Count a failure that repeats the previous run's (True when `result` was changed)."""
    previous = earlier[1]
    if result.status not in REPEATABLE or failure_line(result) != failure_line(previous):
        return False
    count = int(previous.extra.get("repeated_failures", 1)) + 1
    result.extra["repeated_failures"] = count
    line = failure_line(result).split(": ", 1)[-1]
    rest = (result.error or "").strip().splitlines()[1:]
    result.error = "\n".join([f"{count} runs ended with {_REPEAT_NOTE} {line}", *rest])
    return True


def repeated_failure(result: CaseResult) -> bool:
    """An unscored result that `--resume` keeps instead of rerunning it once more."""
    return result.status in REPEATABLE and (
        int(result.extra.get("repeated_failures", 1)) >= REPEAT_LIMIT
    )


def finished(result: CaseResult, folder: Path, expected_hash: str) -> bool:
    """A result a resume may keep: scored, of a known version, made with this run's settings,
    and with a complete trace."""
    return (
        is_scored(result.status)
        and result.version in KNOWN_RESULT_VERSIONS
        and result.settings_hash == expected_hash
        and trace_complete(folder)
    )


def trace_complete(folder: Path) -> bool:
    """True when the trace's last line is a readable `episode_end` of a known trace version."""
    try:
        with (folder / "events.jsonl").open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 65536))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return False
    lines = [line for line in tail.splitlines() if line.strip()]
    if not lines:
        return False
    try:
        last = json.loads(lines[-1])
    except ValueError:
        return False
    return (
        isinstance(last, dict)
        and last.get("event") == "episode_end"
        and isinstance(last.get("v"), int)
        and last["v"] <= TRACE_VERSION
    )


# -- execution -----------------------------------------------------------------------------------


def execute(todo: Sequence[CaseSpec], config: BenchConfig, deliver: Deliver) -> None:
    """Play the cases, retrying infrastructure errors, and hand each final result to
    `deliver`. Ctrl-C, SIGTERM or SIGHUP: the case(s) in progress record themselves as
    interrupted, are delivered, and Interrupted (a KeyboardInterrupt) is raised; no further
    case starts."""
    queue = _Queue(todo, config.infra_retries, _retry_base_s(config))
    executor_for(config.executor)(queue, config, deliver)


def execute_locally(queue: _Queue, config: BenchConfig, deliver: Deliver) -> None:
    """The local executor: in this process with one worker, else in worker processes."""
    if config.workers <= 1:
        _execute_here(queue, config, deliver)
    else:
        _execute_in_workers(queue, config, deliver)


def _retry_base_s(config: BenchConfig) -> float:
    """The first infra retry waits out the model servers' circuit breaker (it opens for
    `breaker_cooldown_s` after consecutive outages), so that a short outage does not spend
    every retry in milliseconds against a breaker that is still open."""
    options = ModelOptions(**config.model_options)
    return options.breaker_cooldown_s if options.breaker_failures > 0 else options.backoff_base_s


class _Queue:
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


def _execute_here(queue: _Queue, config: BenchConfig, deliver: Deliver) -> None:
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
            deliver(_stand_in(spec, config.run_dir.name, "infra_error", str(busy)))
            continue
        if config.timeline is not None:
            config.timeline.receive(spec.folder, result.duration_s)
        if queue.retry(result, spec):
            continue
        deliver(result)


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
        return workers.Reply("died", message=_death(worker.process.exitcode))

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


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        cause = " (as an out-of-memory kill does)" if -exitcode == signal.SIGKILL else ""
        return f"the worker process was killed by {name}{cause}"
    return f"the worker process exited with code {exitcode}"


def _send_signal(pid: int | None, signum: int) -> None:
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _execute_in_workers(queue: _Queue, config: BenchConfig, deliver: Deliver) -> None:
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
                result = _outcome(reply, spec, config.run_dir)
                if result is None:
                    continue
                if config.timeline is not None:
                    config.timeline.receive(spec.folder, result.duration_s)
                if queue.retry(result, spec):
                    continue
                deliver(result)
                if result.status == "interrupted":
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


def _outcome(reply: workers.Reply, spec: CaseSpec, run_dir: Path) -> CaseResult | None:
    """The result of a worker's reply, or one standing in for a worker that failed."""
    if reply.kind == "result":
        return reply.result
    if reply.kind == "record_error":
        # the disk is full or unwritable: no further case can be recorded
        raise RecordError(reply.errno, reply.message)
    if reply.kind == "busy":
        return _stand_in(spec, run_dir.name, "infra_error", reply.message)
    if reply.kind == "skipped":
        return None  # interrupted before its case started: nothing was written
    status: Status = "infra_error" if reply.kind == "died" else "harness_error"
    result = _stand_in(spec, run_dir.name, status, f"{reply.message} while playing this case")
    folder = case_dir(run_dir, spec)
    if not folder.is_dir():
        return result  # the case never started: there is no folder to write into
    write_stand_in(folder, spec, result)
    return result


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
                    result = _outcome(reply, spec, pool.config.run_dir)
                    if result is not None:
                        deliver(result)
    except KeyboardInterrupt:
        pass
    finally:
        pool.close(kill=True)


def _stand_in(spec: CaseSpec, run_name: str, status: Status, error: str) -> CaseResult:
    return CaseResult(**case_fields(spec, run_name), status=status, success=False, error=error)


# -- summary -------------------------------------------------------------------------------------


def write_summary(run_dir: Path, results: list[CaseResult], progress: Progress) -> None:
    """`summary.json`: counts and success per method, rewritten atomically after every case;
    RecordError when the disk refuses it."""
    try:
        _write_summary(run_dir, results, progress)
    except OSError as exc:
        message = f"cannot write {run_dir / 'summary.json'}: {exc.strerror or exc}"
        raise RecordError(exc.errno, message) from None


def _write_summary(run_dir: Path, results: list[CaseResult], progress: Progress) -> None:
    by_agent: dict[str, dict[str, Any]] = {}
    for result in results:
        entry = by_agent.setdefault(
            result.agent, {"cases": 0, "scored": 0, "success": 0, "statuses": Counter()}
        )
        entry["cases"] += 1
        entry["statuses"][result.status] += 1
        if is_scored(result.status):
            entry["scored"] += 1
            entry["success"] += int(result.success)
    for entry in by_agent.values():
        entry["success_rate"] = entry["success"] / entry["scored"] if entry["scored"] else None
        entry["statuses"] = dict(entry["statuses"])
    write_json_atomic(
        run_dir / "summary.json",
        {
            "updated_at": time.time(),
            "total_cases": progress.total,
            "finished": len(results),
            "scored": sum(is_scored(r.status) for r in results),
            "methods": by_agent,
        },
    )
