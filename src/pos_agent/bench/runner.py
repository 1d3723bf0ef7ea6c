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
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.bench import workers
from pos_agent.bench.case import (
    CaseBusyError,
    CaseInterrupted,
    CaseSpec,
    RecordError,
    default_loader,
    run_case,
)
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.preflight import Preflight, check_models, preflight, validate_cases
from pos_agent.bench.run_folder import RunFolder, RunPlan
from pos_agent.llm import ModelOptions
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
    validate_cases(specs)
    options = ModelOptions(**config.model_options)
    plan = RunPlan.of(specs, options)
    folder = RunFolder(config.run_dir)
    folder.check(plan, resume=config.resume)  # refuse early, before any model call
    if config.preflight:
        check_models(specs, options, check)
    folder.open(plan, resume=config.resume, describe=config.describe)
    with folder:
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
    `deliver`. Ctrl-C: the case(s) in progress record themselves as interrupted, are
    delivered, and KeyboardInterrupt is raised; no further case starts."""
    retry = _Retries(config.infra_retries)
    if config.workers <= 1:
        _execute_here(todo, config, deliver, retry)
    else:
        _execute_in_workers(todo, config, deliver, retry)


@dataclass
class _Retries:
    limit: int
    attempts: Counter[str] = field(default_factory=Counter)

    def again(self, result: CaseResult, spec: CaseSpec) -> bool:
        if result.status == "infra_error" and self.attempts[spec.folder] < self.limit:
            self.attempts[spec.folder] += 1
            return True
        return False


def _execute_here(
    todo: Sequence[CaseSpec], config: BenchConfig, deliver: Deliver, retry: _Retries
) -> None:
    options = ModelOptions(**config.model_options)
    load = default_loader(options)
    queue = deque(todo)
    while queue:
        spec = queue.popleft()
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
            deliver(_unwritten(spec, config.run_dir.name, str(busy)))
            continue
        if retry.again(result, spec):
            queue.append(spec)
            continue
        deliver(result)


def _execute_in_workers(
    todo: Sequence[CaseSpec], config: BenchConfig, deliver: Deliver, retry: _Retries
) -> None:
    context = multiprocessing.get_context("spawn")
    options = worker_options(config)
    queue = deque(todo)
    while queue:
        # A worker that dies (killed, out of memory) breaks the whole pool: its cases are
        # recorded as infrastructure errors, retried, and a fresh pool takes over.
        pool = ProcessPoolExecutor(
            max_workers=config.workers,
            mp_context=context,
            initializer=workers.init_worker,
            initargs=(options, os.getpid()),
        )
        running: dict[Future[CaseResult | None], CaseSpec] = {}
        try:
            broken = False
            while (queue and not broken) or running:
                while queue and not broken and len(running) < config.workers * 2:
                    spec = queue.popleft()
                    future = pool.submit(
                        workers.worker_case,
                        spec,
                        str(config.run_dir),
                        config.run_dir.name,
                        config.case_timeout_s,
                    )
                    running[future] = spec
                finished_now, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished_now:
                    spec = running.pop(future)
                    broken = broken or isinstance(future.exception(), BrokenProcessPool)
                    result = _outcome(future, spec, config.run_dir)
                    if result is None:
                        continue
                    if retry.again(result, spec):
                        queue.append(spec)
                        continue
                    deliver(result)
        except KeyboardInterrupt:
            _stop(pool, running, deliver)
            raise
        except BaseException:
            _kill_workers(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _outcome(future: Future[CaseResult | None], spec: CaseSpec, run_dir: Path) -> CaseResult | None:
    """The result a worker returned, or one standing in for a worker that failed."""
    error = future.exception()
    if error is None:
        return future.result()
    if isinstance(error, RecordError):
        raise error  # the disk is full or unwritable: no further case can be recorded
    if isinstance(error, CaseBusyError):
        return _unwritten(spec, run_dir.name, str(error))
    if isinstance(error, KeyboardInterrupt):
        return None  # interrupted before its case started: nothing was written
    status: Status = "infra_error" if isinstance(error, BrokenProcessPool) else "harness_error"
    result = _stand_in(spec, run_dir.name, status, f"worker process failed: {error!r}")
    try:
        with FileLock(case_dir(run_dir, spec) / ".lock"):
            write_result(case_dir(run_dir, spec), result)
    except LockHeld:
        pass  # some process still writes there; its own result will stand
    except OSError as exc:
        raise RecordError(exc.errno, f"cannot write the result of {spec.folder}: {exc}") from None
    return result


def _stop(
    pool: ProcessPoolExecutor,
    running: dict[Future[CaseResult | None], CaseSpec],
    deliver: Deliver,
) -> None:
    """After Ctrl-C: start nothing new, interrupt the cases in progress, deliver their
    `interrupted` results (a second Ctrl-C stops waiting), then end the workers."""
    for future in running:
        future.cancel()
    _signal_workers(pool, signal.SIGINT)  # a no-op for workers the terminal already reached
    waiting = {f for f in running if not f.cancelled()}
    deadline = time.monotonic() + STOP_GRACE_S
    try:
        while waiting and time.monotonic() < deadline:
            done, waiting = wait(
                waiting, timeout=deadline - time.monotonic(), return_when=FIRST_COMPLETED
            )
            for future in done:
                if future.exception() is None and (result := future.result()) is not None:
                    deliver(result)
    except KeyboardInterrupt:
        pass
    finally:
        _kill_workers(pool)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    _signal_workers(pool, signal.SIGKILL)


def _signal_workers(pool: ProcessPoolExecutor, signum: int) -> None:
    # ProcessPoolExecutor has no public way to reach its processes before Python 3.14.
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        if process.pid is not None and process.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signum)


def _stand_in(spec: CaseSpec, run_name: str, status: Status, error: str) -> CaseResult:
    return CaseResult(
        run=run_name,
        case=spec.case_id,
        env=spec.env,
        task=spec.task,
        agent=spec.agent,
        models=spec.models(),
        status=status,
        success=False,
        error=error,
    )


def _unwritten(spec: CaseSpec, run_name: str, error: str) -> CaseResult:
    """A case another process is writing: reported as an infrastructure error, not written."""
    return _stand_in(spec, run_name, "infra_error", error)


# -- summary -------------------------------------------------------------------------------------


def write_summary(run_dir: Path, results: list[CaseResult], progress: Progress) -> None:
    """`summary.json`: counts and success per method, rewritten atomically after every case."""
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
