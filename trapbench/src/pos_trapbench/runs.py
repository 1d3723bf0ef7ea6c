"""One shape for a trajectory of either family, as the detectors and the scorer see it.

A `BenchRun` is a trajectory reduced to what a detector may use at each step (the action, the
observation, the error flag, the progress label and the true-state belief) plus the labels the
scorer needs. `textworld_run` and `tools_run` build it from the two on-disk formats.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pos_agent.monitor import Facts
from pos_trapbench.metrics import Span
from pos_trapbench.records import Trajectory
from pos_trapbench.toolagent.records import ToolTrajectory

TEXTWORLD_TRAPS = ("static", "cycle", "drift")


@dataclass(frozen=True, slots=True)
class BenchStep:
    action: str
    """The action as one line: a TextWorld command, or `name {json arguments}`."""
    tool: str | None
    """The tool name of a tool call; None for a text command."""
    arguments: str | None
    """A tool call's arguments as the agent sent them (JSON text)."""
    observation: str
    error: bool
    progress: int
    belief: Facts
    """The belief written from the true state (the oracle facts, the seen workspace facts)."""
    label: str

    def call(self) -> dict[str, str] | None:
        """The tool call in the OpenAI shape, None for a text command."""
        if self.tool is None:
            return None
        return {"name": self.tool, "arguments": self.arguments or ""}

    def canonical_call(self) -> str:
        """Tool name and arguments with JSON key order and whitespace ignored (what the
        anchors hash); a text command lower-cased with its spaces collapsed."""
        if self.tool is None:
            return " ".join(self.action.lower().split())
        try:
            arguments = json.dumps(json.loads(self.arguments or "{}"), sort_keys=True)
        except ValueError:
            arguments = " ".join((self.arguments or "").split())
        return f"{self.tool}:{arguments}"


@dataclass(frozen=True, slots=True)
class BenchRun:
    id: str
    family: str
    goal: str
    clean: bool
    steps: tuple[BenchStep, ...]
    segments: tuple[Span, ...]


def textworld_run(
    trajectory: Trajectory, worlds: Iterable[frozenset[str]] | None = None
) -> BenchRun:
    """`worlds`: the oracle fact set of each step, when not rebuilt from the trajectory."""
    steps = []
    for step, world in zip(trajectory.steps, worlds or trajectory.worlds(), strict=True):
        belief = Facts(
            world=world,
            goals=frozenset(step.oracle.open_goals),
            questions=frozenset(f"seen({o})" for o in step.oracle.unseen_goal_objects),
            about=frozenset(step.oracle.about),
        )
        steps.append(
            BenchStep(
                step.action,
                None,
                None,
                step.observation,
                step.error,
                step.progress,
                belief,
                step.label,
            )
        )
    segments = tuple(
        Span(s.kind, s.start - 1, s.end - 1, s.kind if s.kind in TEXTWORLD_TRAPS else None)
        for s in trajectory.segments
    )
    return BenchRun(
        trajectory.id,
        "textworld",
        trajectory.goal,
        trajectory.kind == "clean",
        tuple(steps),
        segments,
    )


def tools_run(trajectory: ToolTrajectory) -> BenchRun:
    steps = tuple(
        BenchStep(
            step.action,
            step.tool,
            step.arguments,
            step.observation,
            step.error,
            step.progress,
            belief,
            step.label,
        )
        for step, belief in zip(trajectory.steps, trajectory.beliefs(), strict=True)
    )
    segments = tuple(Span(s.kind, s.start - 1, s.end - 1, s.pattern) for s in trajectory.segments)
    return BenchRun(
        trajectory.id,
        trajectory.family,
        trajectory.goal,
        trajectory.kind == "clean",
        steps,
        segments,
    )


def bench_run(trajectory: Trajectory | ToolTrajectory | BenchRun) -> BenchRun:
    if isinstance(trajectory, BenchRun):
        return trajectory
    if isinstance(trajectory, ToolTrajectory):
        return tools_run(trajectory)
    return textworld_run(trajectory)
