"""The tool-agent corpus on disk: one JSON object per trajectory, versioned.

A step holds the tool call as the model sent it (`tool`, `arguments` as JSON text), the tool's
output, its label and segment, whether the call failed, the progress label and the workspace's
remaining-steps count, and the belief as a diff: the true facts the agent has seen that were
added or removed by the step, the open questions and what the current task is about. The goal
facts are the trajectory's. `ToolTrajectory.beliefs()` rebuilds the `Facts` of every step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, Field

from pos_agent.kinds import TrapPattern
from pos_agent.monitor import Facts

TOOLS_VERSION = 1

ToolLabel = Literal[
    "none",
    "repeat",
    "alternation",
    "cycle",
    "semantic",
    "polling",
    "retest",
    "paging",
    "iterate",
    "poll_done",
]
TOOL_TRAP_KINDS = ("repeat", "alternation", "cycle", "semantic", "polling")
"""Injected traps, in table order."""
TOOL_PRODUCTIVE_KINDS = ("retest", "paging", "iterate", "poll_done")
"""Productive repetition (hard negatives): tests re-run after real edits, paging through search
results, editing many distinct files, polling a job or a boot that finishes."""
EXPECTED_PATTERN: dict[str, TrapPattern] = {
    "repeat": "static",
    "alternation": "cycle",
    "cycle": "cycle",
    "semantic": "drift",
    "polling": "static",
}
"""The diagnosis that is right for each trap: nothing changes (static), the same few calls come
round again (cycle), the workspace changes without getting closer to done (drift)."""


class ToolStep(BaseModel):
    """One executed tool call."""

    t: int
    """Step number, 1 for the first call."""
    task: str
    """The workspace task the agent is on (`tests`, `service`, `pipeline`, `migration`)."""
    tool: str
    arguments: str
    """The arguments as JSON text, in the key order the agent sent."""
    observation: str
    label: ToolLabel
    segment: int | None = None
    """Index of the step's segment in `ToolTrajectory.segments`."""
    error: bool = False
    """The call itself failed (missing file, an edit that matched nothing, unknown job)."""
    progress: int
    """1 iff the workspace's remaining steps to done went down with this step."""
    remaining: int
    """Agent steps the task still needs, judged from the true workspace state."""
    added: list[str] = Field(default_factory=list)
    """Belief facts true now that were not at the previous step."""
    removed: list[str] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    """Open questions (epistemic gaps) after the step."""
    about: list[str] = Field(default_factory=list)
    """What the current task is about (the focus of the belief)."""

    @property
    def action(self) -> str:
        """The call as one line: `name {json arguments}`."""
        return f"{self.tool} {self.arguments}"

    def call(self) -> dict[str, str]:
        """The call in the OpenAI tool-call shape (`name`, `arguments` as JSON text)."""
        return {"name": self.tool, "arguments": self.arguments}

    def parsed_arguments(self) -> object:
        try:
            return json.loads(self.arguments)
        except ValueError:
            return self.arguments


class ToolSegment(BaseModel):
    kind: str
    start: int
    end: int
    detail: str = ""
    pattern: TrapPattern | None = None
    """The right diagnosis of a trap; None for productive repetition."""


class ToolTrajectory(BaseModel):
    version: int = TOOLS_VERSION
    family: Literal["tools", "tools-b"] = "tools"
    id: str
    seed: int
    tasks: list[str]
    kind: Literal["clean", "injected"]
    goal: str
    goals: list[str]
    """Facts that hold when every task is done (the achievement gaps until they hold)."""
    done: bool
    """The workspace's remaining steps reached 0 at the end."""
    initial_observation: str
    initial: list[str] = Field(default_factory=list)
    """Belief facts before the first call."""
    steps: list[ToolStep]
    segments: list[ToolSegment] = Field(default_factory=list)

    def beliefs(self) -> Iterator[Facts]:
        """The belief after each step: the seen true facts, the goals, the open questions."""
        facts = set(self.initial)
        goals = frozenset(self.goals)
        for step in self.steps:
            facts.difference_update(step.removed)
            facts.update(step.added)
            yield Facts(
                world=frozenset(facts),
                goals=goals,
                questions=frozenset(step.questions),
                about=frozenset(step.about),
            )


class ToolManifest(BaseModel):
    version: int = TOOLS_VERSION
    seed: int
    trajectories: int
    steps: int
    segments: dict[str, int]
