"""Scoring a detector's alarms against labelled trajectories (pure functions).

Definitions (as in the comparable loop-detection study docs/trapbench.md cites):

- A **trap segment** is detected when an alarm *starts* (is on at a step whose previous step
  had none) inside it or within `grace` steps after it. Its **delay** is the step of that first
  start minus the segment's first step (0 = on the segment's first step). The **pattern** is
  judged at that start, against the segment's right diagnosis (`Span.pattern`).
- **Productive segments** (hard negatives: exploration, tests re-run after real edits, paging,
  many distinct files, a poll that finishes) are non-trap steps; one counts as **alarmed** when
  the alarm is on at any of its steps.
- **Non-trap steps** are all steps outside trap segments and outside the `grace` steps after
  each one. **Alarmed steps** per 100 non-trap steps count those with the alarm on; **new alarm
  starts** count those whose previous step had no alarm.
- **Clean runs alarmed** is the share of trajectories without a trap that have any alarm.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

GRACE_STEPS = 2


@dataclass(frozen=True, slots=True)
class Span:
    """One labelled segment of a run, 0-based and inclusive."""

    kind: str
    first: int
    last: int
    pattern: str | None = None
    """The right diagnosis of a trap; None marks productive repetition (a hard negative)."""

    @property
    def trap(self) -> bool:
        return self.pattern is not None


@dataclass(frozen=True, slots=True)
class LabelledRun:
    """One trajectory as the scorer sees it: per-step labels and the detector's alarms."""

    labels: tuple[str, ...]
    segments: tuple[Span, ...]
    alarms: tuple[bool, ...]
    patterns: tuple[str | None, ...]
    clean: bool


@dataclass
class DetectorScore:
    """Every figure of one detector's row in a table."""

    detected: Counter[str] = field(default_factory=Counter)
    segments: Counter[str] = field(default_factory=Counter)
    delays: list[int] = field(default_factory=list)
    pattern_right: int = 0
    non_trap_steps: int = 0
    false_alarm_steps: int = 0
    new_alarm_starts: int = 0
    clean_runs: int = 0
    clean_runs_alarmed: int = 0
    productive_segments: Counter[str] = field(default_factory=Counter)
    productive_alarmed: Counter[str] = field(default_factory=Counter)

    def recall(self, kind: str | None = None) -> float:
        kinds = list(self.segments) if kind is None else [kind]
        total = sum(self.segments[k] for k in kinds)
        return sum(self.detected[k] for k in kinds) / total if total else 0.0

    @property
    def median_delay(self) -> float | None:
        return statistics.median(self.delays) if self.delays else None

    @property
    def false_alarms_per_100(self) -> float:
        return 100.0 * self.false_alarm_steps / self.non_trap_steps if self.non_trap_steps else 0.0

    @property
    def new_starts_per_100(self) -> float:
        return 100.0 * self.new_alarm_starts / self.non_trap_steps if self.non_trap_steps else 0.0

    @property
    def pattern_accuracy(self) -> float:
        found = sum(self.detected.values())
        return self.pattern_right / found if found else 0.0

    @property
    def clean_alarmed_share(self) -> float:
        return self.clean_runs_alarmed / self.clean_runs if self.clean_runs else 0.0

    def productive_alarmed_share(self, kind: str | None = None) -> float:
        kinds = list(self.productive_segments) if kind is None else [kind]
        total = sum(self.productive_segments[k] for k in kinds)
        return sum(self.productive_alarmed[k] for k in kinds) / total if total else 0.0


def alarm_starts(alarms: Sequence[bool]) -> list[int]:
    """Indices where an alarm is on and was off (or absent) at the previous step."""
    return [i for i, on in enumerate(alarms) if on and (i == 0 or not alarms[i - 1])]


def score_runs(runs: Sequence[LabelledRun], grace: int = GRACE_STEPS) -> DetectorScore:
    """Score one detector over all runs."""
    score = DetectorScore()
    for run in runs:
        _score_run(run, grace, score)
    return score


def _score_run(run: LabelledRun, grace: int, score: DetectorScore) -> None:
    if len(run.alarms) != len(run.labels) or len(run.patterns) != len(run.labels):
        raise ValueError("alarms, patterns and labels must have one entry per step")
    starts = alarm_starts(run.alarms)
    excluded: set[int] = set()
    for span in run.segments:
        if not span.trap:
            score.productive_segments[span.kind] += 1
            alarmed = any(run.alarms[i] for i in range(span.first, span.last + 1))
            score.productive_alarmed[span.kind] += alarmed
            continue
        excluded.update(i for i in range(span.first, span.last + grace + 1) if i < len(run.labels))
        score.segments[span.kind] += 1
        start = next((i for i in starts if span.first <= i <= span.last + grace), None)
        if start is None:
            continue
        score.detected[span.kind] += 1
        score.delays.append(start - span.first)
        score.pattern_right += run.patterns[start] == span.pattern
    start_set = set(starts)
    for i in range(len(run.labels)):
        if i in excluded:
            continue
        score.non_trap_steps += 1
        score.false_alarm_steps += run.alarms[i]
        score.new_alarm_starts += i in start_set
    if run.clean:
        score.clean_runs += 1
        score.clean_runs_alarmed += any(run.alarms)
