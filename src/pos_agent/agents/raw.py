"""The `raw` baseline: ReAct over the complete chronological action-observation history.

Same harness, budgets, action validation and degradation as PoS; the only difference is what
the policy is conditioned on: the task, the first observation and every action and observation
since, unclipped (paper Table 7), instead of a belief. Its prompt therefore grows with every
step, which is the cost PoS is built to avoid.

By default the history is never cut (the paper's policy, the same for every method): a prompt
that does not fit the model's window ends the case as a scored failure (`context_overflow`).
Only with an explicit `context_window` (`--context-window`, recorded in the settings hash) are
the oldest turns left out when the prompt would not fit it; the prompt says so, and the cut is
traced (`context_cut`) and counted in the result (`context_cuts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from pos_agent.agents import prompts
from pos_agent.agents.backbone import BackboneAgent, BackboneOptions
from pos_agent.agents.base import (
    Episode,
    finish,
    observation_event,
)
from pos_agent.envs import Environment, Observation
from pos_agent.events import ContextCutEvent
from pos_agent.llm import Message, Model
from pos_agent.roles.limits import RoleLimits
from pos_agent.roles.schemas import decision_schema
from pos_agent.roles.transition import Transition

# Prompt tokens are estimated, not counted (the agent has no tokenizer): about three characters
# a token errs on the side of cutting a little early. The margin covers the chat template.
CHARS_PER_TOKEN = 3
TEMPLATE_TOKENS = 64


def estimated_tokens(messages: Sequence[Message]) -> int:
    """A deliberately high estimate of a prompt's tokens."""
    return sum(len(m.content) for m in messages) // CHARS_PER_TOKEN + TEMPLATE_TOKENS


class RawAgent(BackboneAgent):
    """ReAct over the raw trajectory."""

    name = "raw"

    def __init__(
        self,
        model: Model,
        *,
        context_window: int | None = None,
        **options: Unpack[BackboneOptions],
    ) -> None:
        super().__init__(model, **options)
        self.context_window = context_window
        """Tokens a prompt plus its answer must fit in; None never cuts the history."""

    def run(self, env: Environment) -> Episode:
        limits = self.policy_limits(env)
        episode = Episode()
        observation = env.reset()
        first = observation.text
        self.call.emit(observation_event(0, observation))
        history: list[Transition] = []
        try:
            for t in range(env.max_steps):
                admissible = observation.admissible_actions
                messages = self._prompt(env.goal, first, history, observation, t, limits, episode)
                answer = self.call(
                    "policy",
                    self.model,
                    messages,
                    decision_schema(
                        admissible,
                        observation.tools,
                        limits.bounds,
                        max_calls=observation.max_calls,
                    ),
                    step=t,
                    max_tokens=limits.max_tokens,
                    temperature=self.temperature,
                    purpose="act",
                )
                recent = [s.action for s in history[-2:]]
                decision = self.call.settle_action(answer, observation, admissible, recent, t)
                episode.degraded_steps += decision.degraded
                observation = env.step(decision.action)
                self.record_step(
                    episode, t + 1, decision.action, observation, degraded=decision.degraded
                )
                history.append(Transition(t + 1, decision.action, observation.text))
                if observation.done:
                    break
        finally:
            finish(episode, observation)
        return episode

    def _prompt(
        self,
        goal: str,
        first: str,
        history: list[Transition],
        observation: Observation,
        t: int,
        limits: RoleLimits,
        episode: Episode,
    ) -> list[Message]:
        """The whole history, or, when it would not fit the context window, the newest turns
        that do (the cut traced and counted)."""
        args: dict[str, Any] = {
            "actions": observation.admissible_actions,
            "tools": observation.tools,
            "max_calls": observation.max_calls,
            "action_limit": limits.action_list,
        }
        messages = prompts.raw_policy(goal, first, history, **args)
        if self.context_window is None:
            return messages
        room = self.context_window - limits.max_tokens
        if estimated_tokens(messages) <= room:
            return messages
        # Drop whole turns from the oldest until the estimate fits (or nothing is left to drop).
        excess = (estimated_tokens(messages) - room) * CHARS_PER_TOKEN
        dropped = 0
        while dropped < len(history) and excess > 0:
            turn = history[dropped]
            excess -= len(turn.action) + len(turn.observation.strip()) + 3
            dropped += 1
        kept = history[dropped:]
        messages = prompts.raw_policy(goal, first, kept, dropped=dropped, **args)
        episode.context_cuts += 1
        self.call.emit(
            ContextCutEvent(
                step=t, kept=len(kept), dropped=dropped, context_window=self.context_window
            )
        )
        return messages
