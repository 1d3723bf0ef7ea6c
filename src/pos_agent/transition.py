"""The one record of a transition: the action sent at step `step - 1` and the observation it
produced as step `step`. Prompts, the context methods' memories, the sentinel and the recovery
logic all read this record; `progress` and `state_before` are known only once the transition is
validated (the PoS loop and the monitor fill them).

It is part of the core: importing it (as the monitor and the recovery logic do) loads no model
machinery (`tokens`, which the context methods read, is the package's rough estimate).
This module is its one home: import it from here (no package re-exports it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pos_agent.health.distance import WorldKeys
from pos_agent.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class Transition:
    """One action and the observation it produced (observations kept whole)."""

    step: int
    action: str
    observation: str
    progress: int = 0
    """u_t, the progress label of the transition (0 until judged)."""
    state_before: WorldKeys | None = None
    """The record keys of the full world before the action, if known."""

    def render(self) -> str:
        return f"[step {self.step}] > {self.action}\n{self.observation.strip()}"

    @property
    def tokens(self) -> int:
        """Estimated tokens of `render()` (the estimate the context methods' thresholds use)."""
        return estimate_tokens(self.render())

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "action": self.action,
            "observation": self.observation,
            "progress": self.progress,
        }


def render_transitions(transitions: Iterable[Transition]) -> str:
    return "\n\n".join(t.render() for t in transitions)
