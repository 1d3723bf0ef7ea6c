"""What one PoS episode knows: its `EpisodeState`, created by `PosAgent.start`, and the small
records the loop passes between its parts (the step's start, a belief update, a validated
transition of the health window)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from pos_agent.agents.base import Episode
from pos_agent.belief import Belief, Gap
from pos_agent.envs import Observation
from pos_agent.health import HealthConfig, WorldKeys
from pos_agent.recovery.constraint import RecoveryConstraint
from pos_agent.roles.limits import AgentLimits
from pos_agent.sentinel.audit import Sentinel, Transcript
from pos_agent.transition import Transition


@dataclass(frozen=True)
class Validated:
    """One validated transition in the health window."""

    belief: Belief
    world: WorldKeys
    progress: int


@dataclass(frozen=True)
class Update:
    """The outcome of one transition for the belief: B_t+1 and the progress label u_t+1."""

    belief: Belief
    """The committed candidate, or B_t kept (stamped with the new step)."""
    accepted: bool
    progress: int
    degraded: bool
    """A belief or sentinel call gave no usable answer."""


@dataclass
class StepStart:
    """What one step of the loop knows before it acts."""

    t: int
    belief: Belief
    """B_t, the belief the decision is conditioned on."""
    world: WorldKeys
    """Record keys of B_t (the state before the action, for static recovery)."""
    gap: Gap | None
    """Δ_t, the gap active before the step: progress is judged against it."""


@dataclass
class EpisodeState:
    """Everything one episode knows, created by `PosAgent.start` when the episode begins."""

    goal: str
    max_steps: int
    health: HealthConfig
    """The health settings, with the environment's task kind."""
    limits: AgentLimits
    """Budgets and schema bounds per role (the config's, else each role's model's profile and
    the paper's budget for this environment)."""
    transcript: Transcript
    """What the sentinel may cite: every observation and the trajectory so far."""
    sentinel: Sentinel
    observation: Observation
    """The latest observation."""
    belief: Belief
    """B_t, the validated belief."""
    window: deque[Validated]
    """The last K validated transitions (the health window)."""
    transitions: deque[Transition]
    """The same transitions as the recovery logic reads them."""
    constraint: RecoveryConstraint | None = None
    """The recovery constraint while trapped."""
    episode: Episode = field(default_factory=Episode)
    t: int = 0
    """Steps taken."""
    done: bool = False
    """The environment ended the episode."""

    @property
    def diagnostic(self) -> bool:
        return self.health.task == "diagnosis"

    @property
    def preferred_gap(self) -> Literal["epistemic", "achievement"]:
        return "epistemic" if self.diagnostic else "achievement"

    @property
    def over(self) -> bool:
        """The environment ended the episode, or the step budget is spent."""
        return self.done or self.t >= self.max_steps
