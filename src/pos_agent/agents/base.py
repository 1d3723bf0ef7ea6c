"""What every agent shares: the per-episode record, the `Agent` protocol and the step callback
the terminal display listens to. Role calls and action validation live in `pos_agent.roles`
(re-exported here for the modules that import them from this one)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pos_agent.envs import Environment, Observation
from pos_agent.events import ObservationEvent
from pos_agent.roles.caller import Decision, RoleCaller, fallback_action, validate_action

__all__ = [
    "Agent",
    "Decision",
    "Episode",
    "RoleCaller",
    "StepCallback",
    "StepInfo",
    "fallback_action",
    "finish",
    "observation_event",
    "validate_action",
]


@dataclass
class StepInfo:
    """What the live display shows after each step."""

    step: int
    action: str
    success: bool
    health: float | None = None
    trapped: bool = False
    pattern: str | None = None
    recovery: bool = False
    degraded: bool = False
    tokens: int = 0


StepCallback = Callable[[StepInfo], None]


@dataclass
class Episode:
    """The outcome of one episode, as the runner turns it into `result.json`."""

    success: bool = False
    score: float = 0.0
    steps: int = 0
    done: bool = False
    trapped_steps: int = 0
    patterns: Counter[str] = field(default_factory=Counter)
    recoveries: int = 0
    degraded_steps: int = 0
    """Steps at which any role fell back (at most one per step, for every method)."""
    context_cuts: int = 0
    """Steps whose prompt had to leave out old history to fit the context window."""
    final_belief: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Agent(Protocol):
    """Anything that can play one episode of an environment."""

    name: str

    def run(self, env: Environment) -> Episode: ...


def finish(episode: Episode, observation: Observation) -> None:
    """Copy the final observation's outcome (and diagnosis metrics, if any) into the episode."""
    episode.success = observation.success
    episode.score = observation.score
    episode.done = observation.done
    for key in ("metrics", "judge", "judge_failed", "subset"):
        if key in observation.info:
            episode.extra[key] = observation.info[key]


def observation_event(step: int, observation: Observation) -> ObservationEvent:
    """The part of an observation worth tracing."""
    return ObservationEvent(
        step=step,
        text=observation.text,
        done=observation.done,
        success=observation.success,
        score=observation.score,
        admissible=len(observation.admissible_actions or []),
        invalid_action=bool(observation.info.get("invalid_action")),
    )
