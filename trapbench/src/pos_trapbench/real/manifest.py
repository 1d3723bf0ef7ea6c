"""The real corpus's records: which source file each trajectory comes from, and its labels.

The repository holds these (`manifest.jsonl`, `labels.jsonl`, `split.json` beside this module),
not the trajectories: they are rebuilt from the source files (`build.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, model_validator

from pos_agent.kinds import TrapPattern
from pos_trapbench.records import load_records

DATA = Path(__file__).parent
MANIFEST_FILE = "manifest.jsonl"
LABELS_FILE = "labels.jsonl"
SPLIT_FILE = "split.json"

Split = Literal["dev", "test"]
SPLITS: tuple[Split, ...] = ("dev", "test")
TaskKind = Literal["text-game", "tool"]
TASK_KINDS: tuple[TaskKind, ...] = ("text-game", "tool")

STUCK_TYPES = ("same-call", "alternation", "cycle", "drift", "semantic", "polling")
"""Loop types, in table order: the same call again; two calls in turn; a period of three or
more through the same states; busy with things the goal does not need; varied attempts ending
in the same failure; a poll that never resolves."""
PRODUCTIVE_TYPES = ("search-sweep", "edit-test", "poll-success", "paging", "exploration", "meter")
"""Productive repetition (hard negatives): the same tool on new inputs; edit then run with new
results each round; a poll that ends in success; paging; new rooms, containers or files; a
progress meter that moves."""
EXPECTED_PATTERN: dict[str, TrapPattern] = {
    "same-call": "static",
    "alternation": "cycle",
    "cycle": "cycle",
    "drift": "drift",
    "semantic": "drift",
    "polling": "static",
}
"""The diagnosis that is right for each loop type (as for the tool-agent family's traps)."""


class SourceEntry(BaseModel):
    """One trajectory of the corpus: the source file it is read from, and what it is."""

    id: str
    repo: str
    """The public repository (owner/name), or for an issue thread its repository."""
    path: str
    """The file's path in the repository at `commit`; `issues/N` for an issue thread."""
    commit: str | None
    """The commit (40 hex) the file is read at; None for an issue thread's excerpt."""
    licence: str
    """SPDX id as the repository's licence file says, or "unknown"."""
    sha256: str
    """Of the source file's bytes: a rebuilt file must match it."""
    index: int
    """Which of the trajectories the converter finds in the file (0 = the first)."""
    format: str
    """The converter (`formats.CONVERTERS`)."""
    framework: str
    model: str
    kind: TaskKind
    steps: int
    split: Split

    @property
    def issue_thread(self) -> bool:
        return self.commit is None


class Stretch(BaseModel):
    """A labelled stretch of steps, 0-based and inclusive."""

    start: int
    end: int
    kind: Literal["stuck", "productive"]
    type: str
    reason: str
    """One line: why the labeller read it so."""

    @model_validator(mode="after")
    def _known_type(self) -> Self:
        known = STUCK_TYPES if self.kind == "stuck" else PRODUCTIVE_TYPES
        if self.type not in known:
            raise ValueError(f"{self.kind} type {self.type!r} is not one of {', '.join(known)}")
        if not 0 <= self.start <= self.end:
            raise ValueError(f"stretch {self.start}-{self.end} is not a range of steps")
        return self


class TrajectoryLabels(BaseModel):
    id: str
    stretches: list[Stretch]


def load_manifest(path: Path | None = None) -> list[SourceEntry]:
    """The manifest (the packaged one by default); raises ValueError naming a bad line."""
    return load_records(path or DATA / MANIFEST_FILE, SourceEntry, "a manifest entry")


def load_labels(path: Path | None = None) -> dict[str, TrajectoryLabels]:
    """The labels by trajectory id (the packaged ones by default)."""
    records = load_records(path or DATA / LABELS_FILE, TrajectoryLabels, "a label line")
    return {r.id: r for r in records}


def load_split_rule(path: Path | None = None) -> dict[str, object]:
    """split.json: the rule and which sources are in which split."""
    loaded = json.loads((path or DATA / SPLIT_FILE).read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}
