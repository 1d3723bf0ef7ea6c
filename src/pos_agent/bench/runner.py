"""Run a suite: cases x methods in worker processes, resumable, with live progress.

Layout: `runs/<run>/config.json`, `runs/<run>/summary.json`, and one folder per case,
`runs/<run>/<agent>__<case>/` with `events.jsonl` and `result.json`. A case is finished when its
`result.json` exists with a scored status; `--resume` skips those and reruns anything else
whole (a half-written trace is deleted first). Results are written atomically by the case that
produced them, so killing the runner at any moment loses no finished result.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.bench.case import CaseSpec, ModelLoader, default_loader, run_case
from pos_agent.llm import ModelOptions
from pos_agent.trace import CaseResult, read_result, write_json_atomic, write_result

FINISHED = ("success", "failure", "error")  # statuses a resume keeps; the rest are rerun


@dataclass
class BenchConfig:
    """How to run a list of cases."""

    run_dir: Path
    workers: int = 1
    resume: bool = False
    infra_retries: int = 2
    model_options: dict[str, Any] = field(default_factory=dict)


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
            scored = counts["success"] + counts["failure"] + counts["error"]
            rate = counts["success"] / scored if scored else 0.0
            parts.append(f"{agent} {rate:.0%} ({counts['success']}/{scored})")
        return "  ".join(parts)


def case_dir(run_dir: Path, spec: CaseSpec) -> Path:
    return run_dir / spec.folder


def pending(
    specs: list[CaseSpec], run_dir: Path, resume: bool
) -> tuple[list[CaseSpec], list[CaseResult]]:
    """The cases still to run, and the finished results a resume keeps."""
    todo, kept = [], []
    for spec in specs:
        result = read_result(case_dir(run_dir, spec)) if resume else None
        if result is not None and result.status in FINISHED:
            kept.append(result)
        else:
            todo.append(spec)
    return todo, kept


def run_bench(
    specs: list[CaseSpec],
    config: BenchConfig,
    *,
    on_result: Callable[[CaseResult, Progress], None] | None = None,
) -> list[CaseResult]:
    """Run every case (in `config.workers` processes) and return all results, kept ones included."""
    run_dir = config.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    if not config.resume:
        clash = [s for s in specs if (case_dir(run_dir, s) / "result.json").exists()]
        if clash:
            raise ValueError(
                f"{run_dir} already holds results ({len(clash)} of these cases); "
                "pass --resume to continue it, or choose another --run name"
            )
    todo, results = pending(specs, run_dir, config.resume)
    progress = Progress(total=len(specs), skipped=len(results))
    for result in results:
        progress.count(result)
    run_name = run_dir.name
    for result in _execute(todo, config, run_name):
        results.append(result)
        progress.done += 1
        progress.count(result)
        write_summary(run_dir, results, progress)
        if on_result is not None:
            on_result(result, progress)
    write_summary(run_dir, results, progress)
    return results


def _execute(todo: list[CaseSpec], config: BenchConfig, run_name: str) -> Iterator[CaseResult]:
    attempts: Counter[str] = Counter()
    if config.workers <= 1:
        load = default_loader(ModelOptions(**config.model_options))
        queue = list(todo)
        while queue:
            spec = queue.pop(0)
            result = run_case(spec, case_dir(config.run_dir, spec), run_name=run_name, load=load)
            if _retry(result, spec, attempts, config):
                queue.append(spec)
                continue
            yield result
        return
    context = multiprocessing.get_context("spawn")
    queue = list(todo)
    while queue:
        # A worker that dies (killed, out of memory) breaks the whole pool: its cases are
        # recorded as infrastructure errors, retried, and a fresh pool takes over.
        with ProcessPoolExecutor(
            max_workers=config.workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(config.model_options,),
        ) as pool:
            running: dict[Future[CaseResult], CaseSpec] = {}
            broken = False
            try:
                while (queue and not broken) or running:
                    while queue and not broken and len(running) < config.workers * 2:
                        spec = queue.pop(0)
                        running[pool.submit(_worker_case, spec, str(config.run_dir), run_name)] = (
                            spec
                        )
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        spec = running.pop(future)
                        try:
                            result = future.result()
                        except Exception as exc:
                            broken = broken or isinstance(exc, BrokenProcessPool)
                            result = _lost(spec, config.run_dir, run_name, exc)
                        if _retry(result, spec, attempts, config):
                            queue.append(spec)
                            continue
                        yield result
            except KeyboardInterrupt:
                pool.shutdown(wait=False, cancel_futures=True)
                raise


def _retry(result: CaseResult, spec: CaseSpec, attempts: Counter[str], config: BenchConfig) -> bool:
    key = f"{spec.agent}/{spec.case_id}"
    if result.status == "infra_error" and attempts[key] < config.infra_retries:
        attempts[key] += 1
        return True
    return False


def _lost(spec: CaseSpec, run_dir: Path, run_name: str, exc: BaseException) -> CaseResult:
    result = CaseResult(
        run=run_name,
        case=spec.case_id,
        env=spec.env,
        task=spec.task,
        agent=spec.agent,
        models=spec.models(),
        status="infra_error",
        success=False,
        error=f"worker process failed: {type(exc).__name__}: {exc}",
    )
    write_result(case_dir(run_dir, spec), result)
    return result


# -- worker process side: one model loader per process ------------------------------------------

_WORKER_LOAD: ModelLoader | None = None


def _init_worker(model_options: dict[str, Any]) -> None:
    global _WORKER_LOAD
    _WORKER_LOAD = default_loader(ModelOptions(**model_options))


def _worker_case(spec: CaseSpec, run_dir: str, run_name: str) -> CaseResult:
    load = _WORKER_LOAD or default_loader()
    return run_case(spec, case_dir(Path(run_dir), spec), run_name=run_name, load=load)


def write_summary(run_dir: Path, results: list[CaseResult], progress: Progress) -> None:
    """`summary.json`: counts and success per method, rewritten atomically after every case."""
    by_agent: dict[str, dict[str, Any]] = {}
    for result in results:
        entry = by_agent.setdefault(
            result.agent, {"cases": 0, "scored": 0, "success": 0, "statuses": Counter()}
        )
        entry["cases"] += 1
        entry["statuses"][result.status] += 1
        if result.status != "infra_error" and result.status != "interrupted":
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
            "methods": by_agent,
        },
    )


def write_config(run_dir: Path, data: dict[str, Any]) -> None:
    write_json_atomic(run_dir / "config.json", data)
