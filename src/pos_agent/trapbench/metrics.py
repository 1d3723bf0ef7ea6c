"""Scoring a detector's alarms against labelled trajectories (pure functions).

Definitions (as in the comparable study of `../shared/TRAPS.md`):

- A **segment** is detected when an alarm *starts* (is on at a step whose previous step had none)
  inside it or within `grace` steps after it. Its **delay** is the step of that first start
  minus the segment's first step (0 = on the segment's first step). The **pattern** is judged
  at that start.
- **Non-trap steps** are all steps outside trap segments and outside the `grace` steps after each
  one; exploration segments (hard negatives) are non-trap steps.
- **False alarms** per 100 non-trap steps count non-trap steps with the alarm on; **new alarm
  starts** count those whose previous step had no alarm.
- **Clean runs alarmed** is the share of clean trajectories with any alarm at all.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

TRAP_KINDS = ("static", "cycle", "drift")
GRACE_STEPS = 2


@dataclass(frozen=True, slots=True)
class LabelledRun:
    """One trajectory as the scorer sees it: per-step labels and the detector's alarms."""

    labels: tuple[str, ...]
    """Per step: "none", "explore" or a trap kind."""

    segments: tuple[tuple[str, int, int], ...]
    """(kind, first index, last index) of each injected segment, 0-based step indices."""

    alarms: tuple[bool, ...]
    patterns: tuple[str | None, ...]
    clean: bool


@dataclass
class DetectorScore:
    """Every figure of one detector's row in the table."""

    detected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TRAP_KINDS, 0))
    segments: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TRAP_KINDS, 0))
    delays: list[int] = field(default_factory=list)
    pattern_right: int = 0
    non_trap_steps: int = 0
    false_alarm_steps: int = 0
    new_alarm_starts: int = 0
    clean_runs: int = 0
    clean_runs_alarmed: int = 0
    explore_segments: int = 0
    explore_segments_alarmed: int = 0

    def recall(self, kind: str | None = None) -> float:
        kinds = TRAP_KINDS if kind is None else (kind,)
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

    @property
    def explore_alarmed_share(self) -> float:
        if not self.explore_segments:
            return 0.0
        return self.explore_segments_alarmed / self.explore_segments


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
    for kind, first, last in run.segments:
        window = range(first, last + grace + 1)
        if kind == "explore":
            score.explore_segments += 1
            score.explore_segments_alarmed += any(run.alarms[i] for i in range(first, last + 1))
            continue
        excluded.update(i for i in window if i < len(run.labels))
        score.segments[kind] += 1
        start = next((i for i in starts if first <= i <= last + grace), None)
        if start is None:
            continue
        score.detected[kind] += 1
        score.delays.append(start - first)
        score.pattern_right += run.patterns[start] == kind
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
