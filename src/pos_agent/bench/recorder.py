"""The records of one case: its trace, what its steps reported, its outcome and `result.json`.

`bench/case.py` plays a case; everything it writes goes through one `CaseRecorder`, which
starts the trace afresh, counts the steps the agent reports (so a case cut short still records
what it played), says once what was to run (`episode_start`), and at the end writes the
`episode_end` event and the result. A disk that refuses a write is remembered (`disk_full`):
the case is then recorded as unscored, and the caller stops the run.
"""

from __future__ import annotations

import contextlib
import errno
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pos_agent.agents.base import Episode, StepCallback, StepInfo
from pos_agent.agents.methods import METHODS
from pos_agent.bench.identity import (
    git_commit,
    pos_version,
    result_options,
    served_models,
    settings_hash,
    spec_settings,
)
from pos_agent.events import EpisodeEndEvent, EpisodeStartEvent, Event
from pos_agent.llm import ModelOptions, TokenLedger
from pos_agent.trace import (
    CaseResult,
    RoleTokens,
    Status,
    TraceWriter,
    is_scored,
    write_result,
)

if TYPE_CHECKING:
    from pos_agent.bench.spec import CaseSpec

# errno values that mean "this disk will not take more", not "the code has a bug"
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


class RecordError(OSError):
    """A run record could not be written (disk full, folder not writable); the runner stops."""


@dataclass(frozen=True)
class Outcome:
    """How a case ended: its status, what went wrong, and why a scored failure failed."""

    status: Status
    error: str | None = None
    failure_reason: str | None = None
    """Why a scored case failed when the episode did not simply run out (`context_overflow`)."""


class CaseRecorder:
    """Owns one case's trace, step tally, token ledger and result."""

    def __init__(
        self,
        spec: CaseSpec,
        case_dir: Path,
        run_name: str,
        options: ModelOptions,
        on_step: StepCallback | None,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.spec = spec
        self.case_dir = case_dir
        self.run_name = run_name
        self.options = options
        # A rerun of a half-finished case starts its trace afresh.
        try:
            (case_dir / "events.jsonl").unlink(missing_ok=True)
            (case_dir / "result.json").unlink(missing_ok=True)
            self.trace = TraceWriter(case_dir, on_event)
        except OSError as exc:
            raise RecordError(exc.errno, f"cannot write the trace in {case_dir}: {exc}") from None
        self.ledger = TokenLedger(spec.cache_rule, breakpoints=options.cache_breakpoints)
        self.tally = StepTally(on_step)
        self.started = time.time()
        self.settings: dict[str, Any] = {}
        self.env_labels: dict[str, str] = {}
        self.env_extra: dict[str, Any] = {}
        self.category: str | None = None
        self.max_steps = 0
        self.episode: Episode | None = None
        self.disk_full: OSError | None = None
        self._announced = False

    def announce(self, settings: dict[str, Any] | None = None) -> None:
        """Trace what is to run (`episode_start`), once."""
        if self._announced:
            return
        self._announced = True
        if settings is not None:
            self.settings = settings
        if self.options.cache_breakpoints:
            # It changes every request: in the trace header and the result's settings.
            self.settings = {**self.settings, "cache_breakpoints": True}
        spec = self.spec
        self.trace.emit(
            EpisodeStartEvent(
                step=0,
                run=self.run_name,
                spec=spec.model_dump(),
                models=spec.models(),
                settings=self.settings,
            )
        )

    def emit_quietly(self, event: Event) -> None:
        """Trace an event at the end of a case; a disk that is full already lost the trace."""
        with contextlib.suppress(OSError):
            self.trace.emit(event)

    def finish(self, outcome: Outcome) -> CaseResult:
        """Close the trace with `episode_end` and return the case's result (not yet written)."""
        played = self.episode if self.episode is not None else self.tally.episode()
        status, error = outcome.status, outcome.error
        success = played.success and status == "success"
        try:
            self.announce()  # the environment could not be made: still say what was to run
            self.trace.emit(
                EpisodeEndEvent(step=played.steps, status=status, success=success, error=error)
            )
            self.trace.close()
        except OSError as exc:
            self.disk_full = self.disk_full or exc
            with contextlib.suppress(OSError):
                self.trace.close()
            if is_scored(status):  # a score whose trace is cut short cannot be checked
                status, error, success = "infra_error", f"the disk refused a write: {exc}", False
        spec = self.spec
        method = METHODS.get(spec.agent)
        variant = bool(method and method.is_pos)
        reason = outcome.failure_reason if status == "failure" else None
        return CaseResult(
            **case_fields(spec, self.run_name),
            category=self.category,
            status=status,
            success=success,
            failure_reason=reason,
            **episode_fields(played),
            max_steps=self.max_steps,
            tokens={
                role: RoleTokens.model_validate(t)
                for role, t in self.ledger.by_role().items()
                if t["calls"]
            },
            settings=self.settings,
            error=error,
            started_at=self.started,
            duration_s=round(time.time() - self.started, 3),
            extra={
                **self.env_extra,
                **played.extra,
                "health_checked": bool(method and method.health_checked),
                **({"recovery": spec.recovery} if variant else {}),
                **({"health": spec.health} if variant else {}),
                **({"env_models": self.env_labels} if self.env_labels else {}),
                # The rule of the cached-token estimates, for `pos report`.
                "cache_rule": spec.cache_rule,
                # Code points no file can hold (lone surrogates), written as U+FFFD.
                **({"unencodable_replaced": self.trace.replaced} if self.trace.replaced else {}),
            },
            **self._provenance(),
        )

    def write(self, result: CaseResult) -> None:
        try:
            write_result(self.case_dir, result)
        except OSError as exc:
            raise RecordError(
                exc.errno,
                f"cannot write the result of {self.spec.folder} in {self.case_dir}: {exc}",
            ) from None

    def _provenance(self) -> dict[str, Any]:
        settings = spec_settings(self.spec)
        model_options = result_options(self.options, served_models(self.spec))
        return {
            "spec": settings,
            "model_options": model_options,
            "settings_hash": settings_hash(settings, model_options),
            "pos_version": pos_version(),
            "git_commit": git_commit(),
        }


def case_fields(spec: CaseSpec, run_name: str) -> dict[str, Any]:
    """The result fields that name a case: its run, id, environment, task, method, models."""
    names = {"case": spec.case_id, "env": spec.env, "task": spec.task, "agent": spec.agent}
    return {"run": run_name, **names, "models": spec.models()}


def episode_fields(played: Episode) -> dict[str, Any]:
    """The result fields an episode fills in: what it scored and what its steps reported."""
    counted = ("score", "steps", "trapped_steps", "recoveries", "degraded_steps", "context_cuts")
    fields = {name: getattr(played, name) for name in counted}
    return {**fields, "patterns": dict(played.patterns), "final_belief": played.final_belief}


class StepTally:
    """Counts what each step reported, so an episode cut short (Ctrl-C, a time limit, an
    error) still records the steps it played; passes every step on to the caller's callback."""

    def __init__(self, forward: StepCallback | None) -> None:
        self.forward = forward
        self.steps = 0
        self.success = False
        self.trapped_steps = 0
        self.patterns: Counter[str] = Counter()
        self.recoveries = 0  # constraints begun (a constraint in force after a step without one)
        self.degraded_steps = 0
        self._in_recovery = False

    def __call__(self, info: StepInfo) -> None:
        self.steps = max(self.steps, info.step)
        self.success = info.success
        self.trapped_steps += info.trapped
        if info.trapped and info.pattern:
            self.patterns[info.pattern] += 1
        self.recoveries += info.recovery and not self._in_recovery
        self._in_recovery = info.recovery
        self.degraded_steps += info.degraded
        if self.forward is not None:
            self.forward(info)

    def episode(self) -> Episode:
        return Episode(
            success=self.success,
            steps=self.steps,
            trapped_steps=self.trapped_steps,
            patterns=Counter(self.patterns),
            recoveries=self.recoveries,
            degraded_steps=self.degraded_steps,
        )
