"""The expert agent: plays the environment's own expert or gold actions, no model involved.

It validates adapters and set-ups (an environment whose expert cannot win is broken) and
gives the runner something deterministic to run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pos_agent.envs import Environment, Observation


class NoExpertActionError(RuntimeError):
    """The environment offers no expert action here and no gold path is left to walk."""


@dataclass(frozen=True)
class EpisodeOutcome:
    """How an episode ended."""

    success: bool
    steps: int
    score: float
    actions: tuple[str, ...] = ()
    error: str | None = None


class ExpertAgent:
    """Plays `info["expert_action"]`; falls back to walking a given gold path."""

    name = "expert"

    def __init__(self, gold_path: Sequence[str] | None = None) -> None:
        self._gold_path = list(gold_path or [])
        self._position = 0

    def reset(self) -> None:
        """Start again from the beginning of the gold path."""
        self._position = 0

    def act(self, observation: Observation) -> str:
        expert = observation.info.get("expert_action")
        if isinstance(expert, str) and expert.strip():
            return expert
        if self._position < len(self._gold_path):
            action = self._gold_path[self._position]
            self._position += 1
            return action
        raise NoExpertActionError(
            "The environment gave no expert action for this state and there is no gold path "
            "left to follow (an expert only knows the way while it stays on its own path)."
        )


def run_expert(
    env: Environment,
    *,
    agent: ExpertAgent | None = None,
    on_reset: Callable[[Observation], None] | None = None,
    on_step: Callable[[str, Observation], None] | None = None,
) -> EpisodeOutcome:
    """Reset `env` and let the expert play until the episode ends.

    `on_reset(observation)` sees the first observation and `on_step(action, observation)`
    every later one (the CLI prints with them).
    An expert that runs out of actions ends the episode as a failure with `error` set;
    `InfrastructureError` from the backend propagates so that the caller can retry.
    """
    expert = agent or ExpertAgent()
    expert.reset()
    observation = env.reset()
    if on_reset is not None:
        on_reset(observation)
    actions: list[str] = []
    while not observation.done:
        try:
            action = expert.act(observation)
        except NoExpertActionError as exc:
            return EpisodeOutcome(
                success=False,
                steps=len(actions),
                score=observation.score,
                actions=tuple(actions),
                error=str(exc),
            )
        observation = env.step(action)
        actions.append(action)
        if on_step is not None:
            on_step(action, observation)
    return EpisodeOutcome(
        success=observation.success,
        steps=len(actions),
        score=observation.score,
        actions=tuple(actions),
        error=None if observation.success else _failure_reason(observation),
    )


def _failure_reason(observation: Observation) -> str:
    if observation.info.get("budget_exhausted"):
        return f"The step budget of {observation.info.get('budget')} was exhausted."
    error = observation.info.get("error")
    return str(error) if error else "The episode ended without success."
