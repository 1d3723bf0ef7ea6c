"""Game tasks for `CorpusMaker` tests that need no TextWorld. They run in real worker processes
(spawned: they are imported there by name, so they live in a module, not in a test)."""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path

from pos_trapbench.corpus import GameOutcome
from pos_trapbench.games import GameSpec
from pos_trapbench.pool import MemoryBoundExceeded
from pos_trapbench.records import GameEntry, OracleState, Trajectory

HANGING_SLOT = "cook-002"
"""The slot whose game never ends in `hanging_game`."""


def fake_game(spec: GameSpec, out: Path) -> GameOutcome:
    """A used game with one empty clean trajectory."""
    state = OracleState(about=[], focus=[], open_goals=[], unseen_goal_objects=[], plan_length=0)
    trajectory = Trajectory(
        id=f"{spec.id}__clean",
        game=f"games/{spec.id}.z8",
        family=spec.family,
        kind="clean",
        goal="win",
        won=True,
        initial_observation="",
        initial=state,
        steps=[],
    )
    entry = GameEntry(
        id=spec.id,
        family=spec.family,
        seed=spec.seed,
        command=spec.command,
        status="used",
        trajectories=1,
    )
    return GameOutcome(entry, [trajectory])


def hanging_game(spec: GameSpec, out: Path) -> GameOutcome:
    """`fake_game`, except that the game of HANGING_SLOT never returns (a lost task)."""
    if spec.id == HANGING_SLOT:
        threading.Event().wait()
    return fake_game(spec, out)


def exploding_game(spec: GameSpec, out: Path) -> GameOutcome:
    """`fake_game`, except that the first seed of HANGING_SLOT runs a breadth-first search over
    an endless state space (every state has two successors, none is a goal), skipped like
    `build_game` skips a game past its memory bound."""
    if spec.id != HANGING_SLOT:
        return fake_game(spec, out)
    entry = GameEntry(
        id=spec.id, family=spec.family, seed=spec.seed, command=spec.command, status="skipped"
    )
    try:
        frontier: deque[tuple[int, str]] = deque([(1, "1")])
        seen: set[str] = set()
        while frontier:
            number, name = frontier.popleft()
            seen.add(name)
            for child in (2 * number, 2 * number + 1):
                frontier.append((child, f"state {child} reached from {name}"))
    except MemoryBoundExceeded as exc:
        entry.reason = str(exc)
    return GameOutcome(entry, [])
