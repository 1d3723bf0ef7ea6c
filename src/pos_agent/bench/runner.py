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

The cases are played by an executor (bench/executors/: worker processes here, or Ray actors).
A case retried after an infrastructure error waits out the model server's circuit breaker
first. Ctrl-C, SIGTERM and SIGHUP stop the run the same way (bench/signals.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pos_agent.bench import signals
from pos_agent.bench.case import CaseSpec, RecordError
from pos_agent.bench.config import BenchConfig
from pos_agent.bench.executors import executor_for
from pos_agent.bench.executors.base import CaseQueue, Deliver, case_dir
from pos_agent.bench.preflight import Preflight, check_models, preflight, validate_cases
from pos_agent.bench.run_folder import RunFolder, RunPlan
from pos_agent.llm import ModelOptions, owned_by_policy
from pos_agent.trace import (
    KNOWN_RESULT_VERSIONS,
    TRACE_VERSION,
    CaseResult,
    Status,
    is_scored,
    read_result,
    record_problems,
    write_json_atomic,
    write_result,
)


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
    # --base-url and the key are the policy's: a judge of another provider keeps its own.
    options = owned_by_policy(ModelOptions(**config.model_options), policy_specs(specs))
    if options.endpoint_provider is not None:
        owner = {"endpoint_provider": options.endpoint_provider}
        config = replace(config, model_options={**config.model_options, **owner})
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
        and not record_problems(folder, result)
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
    queue = CaseQueue(todo, config.infra_retries, _retry_base_s(config))
    executor_for(config.executor)(queue, config, deliver)


def policy_specs(specs: Sequence[CaseSpec]) -> list[str]:
    """The policy model spec of every case."""
    return [spec.models().get("policy", spec.model) for spec in specs]


def _retry_base_s(config: BenchConfig) -> float:
    """The first infra retry waits out the model servers' circuit breaker (it opens for
    `breaker_cooldown_s` after consecutive outages), so that a short outage does not spend
    every retry in milliseconds against a breaker that is still open."""
    options = ModelOptions(**config.model_options)
    return options.breaker_cooldown_s if options.breaker_failures > 0 else options.backoff_base_s


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
