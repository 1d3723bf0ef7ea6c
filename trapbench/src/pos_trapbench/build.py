"""Playing a game's trajectories for the corpus: the walkthrough, and runs with injected segments.

Every trajectory is executed in the real game. A run with injected segments follows the game's
winning plan from wherever the agent is, and at chosen points plays a planned segment (see
`segments.py`) instead. A trajectory that does not end in the game's win is discarded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pos_trapbench.records import (
    GameFamily,
    Label,
    OracleState,
    Segment,
    SegmentKind,
    StepRecord,
    Trajectory,
)
from pos_trapbench.segments import Simulation, plan_segment, relevant_objects
from pos_trapbench.session import GameError, GameSession, Oracle, current_room

MAX_STEPS = 250
MIN_PLAN_STEPS_BETWEEN = 4
"""Plan steps played between two segments (more than the 2-step grace after a segment)."""
SEGMENT_KINDS: tuple[SegmentKind, ...] = ("static", "cycle", "drift")
INJECTED_RUNS = 3
EXPLORE_SEGMENTS = 2


class UnusableGame(RuntimeError):
    """The game cannot give a valid corpus (its walkthrough does not win, ...)."""


@dataclass
class _Recorder:
    """Collects the steps of one trajectory with their oracle states."""

    session: GameSession
    oracle: Oracle
    steps: list[StepRecord] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    visited_rooms: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    initial_observation: str = ""
    initial: OracleState | None = None
    plan_length: int = 0

    def start(self) -> None:
        observation = self.session.reset()
        self.initial_observation = observation
        self.plan_length = len(self.session.plan)
        self.initial = self.oracle.observe(observation, self.plan_length)
        self._track()

    def play(self, command: str, label: Label = "none", segment: int | None = None) -> None:
        error = command not in self.session.admissible()
        observation = self.session.step(command)
        plan_length = 0 if self.session.won else len(self.session.plan)
        oracle = self.oracle.observe(observation, plan_length)
        self.steps.append(
            StepRecord(
                t=len(self.steps) + 1,
                action=command,
                observation=observation,
                label=label,
                segment=segment,
                error=error,
                progress=int(plan_length < self.plan_length),
                score=self.session.score,
                oracle=oracle,
            )
        )
        self.plan_length = plan_length
        self._track()

    def _track(self) -> None:
        facts = self.session.facts
        room = current_room(facts)
        if room is not None:
            self.visited_rooms.add(room)
        self.opened.update(f.names[0] for f in facts if f.name == "open")

    def trajectory(
        self, trajectory_id: str, game: str, family: GameFamily, clean: bool
    ) -> Trajectory:
        assert self.initial is not None
        return Trajectory(
            id=trajectory_id,
            game=game,
            family=family,
            kind="clean" if clean else "injected",
            goal=self.session.objective,
            won=self.session.won,
            initial_observation=self.initial_observation,
            initial=self.initial,
            steps=self.steps,
            segments=self.segments,
        )


def play_walkthrough(
    session: GameSession, game: str, family: GameFamily, game_id: str
) -> Trajectory:
    """The clean run: the game's own walkthrough, which must win."""
    walkthrough = list(session.game.walkthrough or [])
    if not walkthrough:
        raise UnusableGame("the game has no walkthrough")
    recorder = _Recorder(session, Oracle(session))
    recorder.start()
    for command in walkthrough:
        if session.won or session.lost:
            break
        recorder.play(command)
    if not session.won:
        raise UnusableGame("the walkthrough does not win in the real game")
    return recorder.trajectory(f"{game_id}__clean", game, family, clean=True)


def play_injected(
    session: GameSession,
    kinds: list[SegmentKind],
    rng: random.Random,
    *,
    trajectory_id: str,
    game: str,
    family: GameFamily,
) -> Trajectory | None:
    """A run along the winning plan with `kinds` injected; None when it could not be won."""
    recorder = _Recorder(session, Oracle(session))
    recorder.start()
    points = _insertion_points(recorder.plan_length, len(kinds), rng)
    kinds = kinds[: len(points)]
    plan_steps = 0
    while not session.won and len(recorder.steps) < MAX_STEPS:
        if kinds and plan_steps >= points[0]:
            simulation = Simulation.of(
                session.game, session.state["_game_progression"].state, session.inform7
            )
            planned = plan_segment(
                kinds[0],
                simulation,
                rng,
                relevant=relevant_objects(session.goal_objects(), session.plan_actions),
                visited_rooms=recorder.visited_rooms,
                opened=recorder.opened,
            )
            if planned is None:
                points[0] += 1  # not possible here: try one plan step later
            else:
                index = len(recorder.segments)
                first = len(recorder.steps) + 1
                for command in planned.commands:
                    recorder.play(command, planned.kind, index)
                recorder.segments.append(
                    Segment(
                        kind=planned.kind,
                        start=first,
                        end=len(recorder.steps),
                        detail=planned.detail,
                    )
                )
                kinds.pop(0)
                points.pop(0)
                points = [max(p, plan_steps + MIN_PLAN_STEPS_BETWEEN) for p in points]
                continue
        plan = session.plan
        if not plan or session.lost:
            return None
        recorder.play(plan[0])
        plan_steps += 1
    if not session.won:
        return None
    return recorder.trajectory(trajectory_id, game, family, clean=False)


def _insertion_points(plan_length: int, count: int, rng: random.Random) -> list[int]:
    """Plan steps after which segments start, at least MIN_PLAN_STEPS_BETWEEN apart."""
    slots = list(range(1, max(2, plan_length - 1)))
    points: list[int] = []
    for slot in rng.sample(slots, len(slots)):
        if len(points) == count:
            break
        if all(abs(slot - p) >= MIN_PLAN_STEPS_BETWEEN for p in points):
            points.append(slot)
    return sorted(points)


def segment_plan(rng: random.Random) -> list[list[SegmentKind]]:
    """The segment kinds of one game's injected runs: each trap kind twice, exploration twice,
    shuffled over INJECTED_RUNS runs."""
    kinds: list[SegmentKind] = [*SEGMENT_KINDS, *SEGMENT_KINDS] + ["explore"] * EXPLORE_SEGMENTS
    rng.shuffle(kinds)
    runs: list[list[SegmentKind]] = [[] for _ in range(INJECTED_RUNS)]
    for i, kind in enumerate(kinds):
        runs[i % INJECTED_RUNS].append(kind)
    return runs


def play_game(
    session: GameSession, *, game_id: str, game: str, family: GameFamily, seed: int
) -> list[Trajectory]:
    """All trajectories of one game: the clean walkthrough and the injected runs that won."""
    rng = random.Random(f"{game_id}:{seed}")
    try:
        clean = play_walkthrough(session, game, family, game_id)
    except GameError as exc:
        raise UnusableGame(str(exc)) from exc
    trajectories = [clean]
    for number, kinds in enumerate(segment_plan(rng), 1):
        run = play_injected(
            session,
            list(kinds),
            rng,
            trajectory_id=f"{game_id}__injected-{number}",
            game=game,
            family=family,
        )
        if run is not None:
            trajectories.append(run)
    return trajectories
