"""The detectors `eval` compares, behind one small interface.

- belief health through the public `TrapMonitor`, `paper` and `improved`, each fed either the
  belief written from the true state (TextWorld's oracle facts, the workspace's seen facts),
  with its goals, open questions, focus and progress label, or nothing but the actions and
  observations (model-free);
- the anchors' rules at their current documented behaviour (`anchor_rules.py`): the OpenHands
  SDK, Gemini CLI, OpenRouter's doomLoop, a hashed-call proxy, and AgentBoard.

Tool calls reach the monitor as OpenAI-style `{"name", "arguments"}` calls when it reads tool
calls, else as one line of text (`name {json}`).
"""

from __future__ import annotations

from typing import Protocol

import pos_agent.monitor as monitor_api
from pos_agent.monitor import TrapMonitor
from pos_trapbench.anchor_rules import (
    AgentBoardRules,
    Alarm,
    GeminiCliRules,
    HashedCallRules,
    OpenHandsRules,
    OpenRouterRules,
    RuleSet,
    RuleStep,
)
from pos_trapbench.runs import BenchRun, BenchStep

_READS_TOOL_CALLS = hasattr(monitor_api, "ToolCall")
"""The monitor takes tool calls as actions (not only text commands)."""


class Detector(Protocol):
    name: str

    def start(self, run: BenchRun) -> None:
        """Forget everything: a new trajectory begins."""

    def step(self, step: BenchStep) -> Alarm:
        """The verdict after one step."""


class HealthDetector:
    """Belief health (`paper` or `improved`) through `TrapMonitor`."""

    def __init__(self, diagnosis: str, *, oracle: bool) -> None:
        self.diagnosis = diagnosis
        self.oracle = oracle
        self.name = f"{diagnosis} · {'oracle belief' if oracle else 'model-free'}"
        self.monitor = TrapMonitor(health=diagnosis)  # type: ignore[arg-type]

    def start(self, run: BenchRun) -> None:
        self.monitor = TrapMonitor(goal=run.goal, health=self.diagnosis)  # type: ignore[arg-type]

    def step(self, step: BenchStep) -> Alarm:
        call = step.call()
        action = call if call is not None and _READS_TOOL_CALLS else step.action
        if self.oracle:
            report = self.monitor.observe(
                action,
                step.observation,
                step.belief,
                progress=step.progress,
            )
        else:
            report = self.monitor.observe(action, step.observation)
        return Alarm(report.trapped, report.health.pattern)


class RuleDetector:
    """An anchor's rule set, fed the call, the observation and the error flag."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.name = rules.name

    def start(self, run: BenchRun) -> None:
        self.rules.reset()

    def step(self, step: BenchStep) -> Alarm:
        return self.rules.step(
            RuleStep(step.action, step.observation, step.error, step.canonical_call(), step.tool)
        )


RULE_SETS = (OpenHandsRules, GeminiCliRules, OpenRouterRules, HashedCallRules, AgentBoardRules)


def all_detectors() -> list[Detector]:
    """Every detector of the tables, in their row order."""
    return [
        HealthDetector("improved", oracle=True),
        HealthDetector("paper", oracle=True),
        HealthDetector("improved", oracle=False),
        HealthDetector("paper", oracle=False),
        *(RuleDetector(rules()) for rules in RULE_SETS),
    ]


def model_free_detectors() -> list[Detector]:
    """The detectors that read nothing but actions and observations (all a real trajectory
    has): belief health model-free, and every anchor's rules."""
    return [d for d in all_detectors() if not getattr(d, "oracle", False)]
