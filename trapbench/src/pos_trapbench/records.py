"""The corpus on disk: one JSON object per trajectory, versioned, plus a manifest of games.

A corpus folder holds:

- `games/<game id>.z8` and `.json`: the TextWorld games, as `tw-make` writes them;
- `trajectories/<game id>.jsonl`: that game's trajectories, written whole once the game is done;
- `corpus.jsonl`: every trajectory, written last (its presence means the corpus is complete);
- `manifest.json`: the seed, the settings and each game's status (used, or skipped or failed
  and why).

Each step stores the oracle world as a diff against the previous step (`added`/`removed`), so
the corpus stays small while anyone can rebuild the full fact set of any step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

RecordT = TypeVar("RecordT", bound=BaseModel)

CORPUS_VERSION = 1

Label = Literal["none", "static", "cycle", "drift", "explore"]
SegmentKind = Literal["static", "cycle", "drift", "explore"]
GameFamily = Literal["tw-cooking", "custom"]
TrajectoryKind = Literal["clean", "injected"]


class OracleState(BaseModel):
    """The oracle belief after a step: the game's true facts about what has been seen."""

    added: list[str] = Field(default_factory=list)
    """Facts true now that were not at the previous step (all facts at the initial state)."""
    removed: list[str] = Field(default_factory=list)
    """Facts true at the previous step that are not now."""
    about: list[str]
    """What the focus is about: the first open goal fact's objects and the player."""
    focus: list[str]
    """The known facts that mention one of `about` (the goal's objects, the player's place)."""
    open_goals: list[str]
    """Win facts that do not hold yet (the achievement gaps)."""
    unseen_goal_objects: list[str]
    """Objects named by win facts that no observation has shown yet (the epistemic gaps)."""
    plan_length: int
    """Length of the game's shortest known winning plan from here (see `oracle.py`)."""


class StepRecord(BaseModel):
    """One executed step of a trajectory."""

    t: int
    """Step number, 1 for the first action."""
    action: str
    observation: str
    """The real game's text after the action."""
    label: Label
    """The injected segment kind this step belongs to, or "none"."""
    segment: int | None = None
    """Index of that segment in `Trajectory.segments`."""
    error: bool = False
    """The game did not accept the command."""
    progress: int
    """1 iff the shortest winning plan got shorter with this step."""
    score: int
    oracle: OracleState


class Segment(BaseModel):
    """An injected stretch of a trajectory."""

    kind: SegmentKind
    start: int
    """First step number of the segment."""
    end: int
    """Last step number of the segment."""
    detail: str = ""
    """How it was built, e.g. "repeat 'look'" or "rooms kitchen, pantry"."""


class Trajectory(BaseModel):
    """One trajectory executed in one real game."""

    version: int = CORPUS_VERSION
    id: str
    game: str
    """Game file relative to the corpus folder (`games/<id>.z8`)."""
    family: GameFamily
    kind: TrajectoryKind
    goal: str
    """The game's objective text."""
    won: bool
    """The real game printed its winning end."""
    initial_observation: str
    initial: OracleState
    steps: list[StepRecord]
    segments: list[Segment] = Field(default_factory=list)

    def worlds(self) -> Iterator[frozenset[str]]:
        """The full oracle fact set after each step (the initial state excluded)."""
        facts = set(self.initial.added)
        for step in self.steps:
            facts.difference_update(step.oracle.removed)
            facts.update(step.oracle.added)
            yield frozenset(facts)


class GameEntry(BaseModel):
    """One generated game in the manifest."""

    id: str
    family: GameFamily
    seed: int
    command: str
    """The equivalent `tw-make` command line."""
    status: Literal["used", "skipped", "failed"]
    """used; skipped (unusable, or past a search bound: `reason` says which); failed (its
    worker died or went over the time or memory limit: the next run builds the slot again)."""
    reason: str = ""
    trajectories: int = 0
    steps: int = 0


class Manifest(BaseModel):
    version: int = CORPUS_VERSION
    seed: int
    games_requested: int
    textworld: str
    games: list[GameEntry] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)


def dump_trajectories(trajectories: Iterable[Trajectory]) -> str:
    return "".join(t.model_dump_json() + "\n" for t in trajectories)


def load_records(path: Path, record: type[RecordT], what: str) -> list[RecordT]:
    """Read a JSONL file of `record`s; raises ValueError naming the bad line (`what` names
    what the line should have been)."""
    records = []
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                records.append(record.model_validate(json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not {what} ({exc})") from exc
    return records


def load_trajectories(path: Path) -> list[Trajectory]:
    """Read a JSONL file of trajectories; raises ValueError naming the bad line."""
    return load_records(path, Trajectory, "a trajectory record")
