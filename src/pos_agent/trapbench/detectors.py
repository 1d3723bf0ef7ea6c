"""The detectors `eval` compares, behind one small interface.

- belief health through the public `TrapMonitor`, `paper` and `improved`, each fed either the
  oracle belief of the corpus (true facts, gaps, focus and the plan-based progress label) or
  nothing but the actions and observations (model-free);
- the exact-repeat rules of OpenHands, Gemini CLI and AgentBoard (`rules.py`).
"""

from __future__ import annotations

from typing import Protocol

from pos_agent.monitor import Facts, TrapMonitor
from pos_agent.trapbench.records import StepRecord, Trajectory
from pos_agent.trapbench.rules import (
    AgentBoardRules,
    Alarm,
    GeminiCliRules,
    OpenHandsRules,
    RuleStep,
)


class Detector(Protocol):
    name: str

    def start(self, trajectory: Trajectory) -> None:
        """Forget everything: a new trajectory begins."""

    def step(self, step: StepRecord, world: frozenset[str]) -> Alarm:
        """The verdict after one step; `world` is the oracle's full fact set after it."""


class HealthDetector:
    """Belief health (`paper` or `improved`) through `TrapMonitor`."""

    def __init__(self, diagnosis: str, *, oracle: bool) -> None:
        self.diagnosis = diagnosis
        self.oracle = oracle
        self.name = f"{diagnosis} · {'oracle belief' if oracle else 'model-free'}"
        self.monitor = TrapMonitor(health=diagnosis)  # type: ignore[arg-type]

    def start(self, trajectory: Trajectory) -> None:
        self.monitor = TrapMonitor(goal=trajectory.goal, health=self.diagnosis)  # type: ignore[arg-type]

    def step(self, step: StepRecord, world: frozenset[str]) -> Alarm:
        if self.oracle:
            facts = Facts(
                world=world,
                goals=frozenset(step.oracle.open_goals),
                questions=frozenset(f"seen({o})" for o in step.oracle.unseen_goal_objects),
                about=frozenset(step.oracle.about),
            )
            report = self.monitor.observe(
                step.action, step.observation, facts, progress=step.progress
            )
        else:
            report = self.monitor.observe(step.action, step.observation)
        return Alarm(report.trapped, report.health.pattern)


class RuleDetector:
    """An exact-repeat rule set, fed the action, the observation and the error flag."""

    def __init__(self, rules: OpenHandsRules | GeminiCliRules | AgentBoardRules) -> None:
        self.rules = rules
        self.name = rules.name

    def start(self, trajectory: Trajectory) -> None:
        self.rules.reset()

    def step(self, step: StepRecord, world: frozenset[str]) -> Alarm:
        return self.rules.step(RuleStep(step.action, step.observation, step.error))


def all_detectors() -> list[Detector]:
    """Every detector of the table, in its row order."""
    return [
        HealthDetector("improved", oracle=True),
        HealthDetector("paper", oracle=True),
        HealthDetector("improved", oracle=False),
        HealthDetector("paper", oracle=False),
        RuleDetector(OpenHandsRules()),
        RuleDetector(GeminiCliRules()),
        RuleDetector(AgentBoardRules()),
    ]
