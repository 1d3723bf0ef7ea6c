"""One turn of a trajectory (the action and the observation it produced), as context methods
keep and render it. Observations are kept whole: a method decides what to cut, not the record."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pos_agent.agents import prompts
from pos_agent.agents.context.tokens import count_tokens


@dataclass(frozen=True, slots=True)
class Turn:
    """The action sent at step `step - 1` and the observation returned as step `step`."""

    step: int
    action: str
    observation: str

    def render(self) -> str:
        return prompts.turn_text(self.step, self.action, self.observation)

    @property
    def tokens(self) -> int:
        return count_tokens(self.render())


def render_turns(turns: Iterable[Turn]) -> str:
    return "\n\n".join(turn.render() for turn in turns)
