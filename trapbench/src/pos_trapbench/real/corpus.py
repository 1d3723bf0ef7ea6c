"""A built real corpus read back for `eval`: each trajectory of a split as a `BenchRun`.

A real trajectory has no belief and no progress label, so only model-free detectors apply.
Its labelled stretches become segments: stuck ones are traps (scored for recall, with the
diagnosis `EXPECTED_PATTERN` names as the right pattern), productive ones are hard negatives.
Steps outside every stretch are labelled "none" and count as non-trap steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from pos_agent.monitor import Facts
from pos_trapbench.metrics import Span
from pos_trapbench.real.build import TRAJECTORIES_FILE
from pos_trapbench.real.manifest import (
    EXPECTED_PATTERN,
    LABELS_FILE,
    MANIFEST_FILE,
    SourceEntry,
    Split,
    TaskKind,
    TrajectoryLabels,
    load_labels,
    load_manifest,
)
from pos_trapbench.records import load_records
from pos_trapbench.runs import BenchRun, BenchStep

REAL_FAMILY = "real"
_NO_BELIEF = Facts(world=frozenset())


class StepLine(BaseModel):
    action: str
    tool: str | None
    arguments: str | None
    observation: str
    error: bool | None


class TrajectoryLine(BaseModel):
    """One line of a built corpus's trajectories.jsonl."""

    id: str
    goal: str
    steps: list[StepLine]


@dataclass(frozen=True, slots=True)
class RealRun:
    entry: SourceEntry
    run: BenchRun

    @property
    def kind(self) -> TaskKind:
        return self.entry.kind


def bench_run_of(
    entry: SourceEntry, trajectory: TrajectoryLine, labels: TrajectoryLabels
) -> BenchRun:
    """The trajectory as detectors and the scorer see it; raises ValueError when a stretch
    lies outside its steps."""
    stretches = sorted(labels.stretches, key=lambda s: (s.start, s.end))
    names = ["none"] * len(trajectory.steps)
    for stretch in stretches:
        if stretch.end >= len(names):
            raise ValueError(
                f"{entry.id}: stretch {stretch.start}-{stretch.end} lies past its "
                f"{len(names)} steps"
            )
        names[stretch.start : stretch.end + 1] = [stretch.type] * (stretch.end - stretch.start + 1)
    steps = tuple(
        BenchStep(s.action, s.tool, s.arguments, s.observation, bool(s.error), 0, _NO_BELIEF, name)
        for s, name in zip(trajectory.steps, names, strict=True)
    )
    segments = tuple(
        Span(s.type, s.start, s.end, EXPECTED_PATTERN[s.type] if s.kind == "stuck" else None)
        for s in stretches
    )
    clean = not any(s.kind == "stuck" for s in stretches)
    return BenchRun(entry.id, REAL_FAMILY, trajectory.goal, clean, steps, segments)


def load_real(folder: Path, split: Split) -> list[RealRun]:
    """The built corpus in `folder` (`pos trapbench real build`), the trajectories of one
    split, in manifest order. Raises FileNotFoundError when it is not built, ValueError when a
    file is malformed."""
    path = folder / TRAJECTORIES_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: build the real corpus first with "
            f"`pos trapbench real build --from SOURCES --out {folder}`"
        )
    entries = load_manifest(folder / MANIFEST_FILE)
    labels = load_labels(folder / LABELS_FILE)
    lines = {t.id: t for t in load_records(path, TrajectoryLine, "a real trajectory")}
    runs = []
    for entry in entries:
        if entry.split != split or entry.id not in lines:
            continue
        found = labels.get(entry.id, TrajectoryLabels(id=entry.id, stretches=[]))
        runs.append(RealRun(entry, bench_run_of(entry, lines[entry.id], found)))
    return runs
