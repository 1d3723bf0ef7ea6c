"""The `raw` baseline: ReAct over the complete chronological action-observation history.

Same harness, budgets, action validation and degradation as PoS; the only difference is what
the policy is conditioned on: the task, the first observation and every action and observation
since, unclipped (paper Table 7), instead of a belief. Its prompt therefore grows with every
step, which is the cost PoS is built to avoid.

By default the history is never cut (the paper's policy, the same for every method): a prompt
that does not fit the model's window ends the case as a scored failure (`context_overflow`).
Only with an explicit `context_window` (`--context-window`, recorded in the settings hash) are
the oldest turns left out when the prompt would not fit it, by the rule every history-based
method shares (`agents/fit.py`); the prompt says so, and the cut is traced (`context_cut`) and
counted in the result (`context_cuts`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pos_agent.agents import prompts
from pos_agent.agents.backbone import BackboneAgent
from pos_agent.agents.base import (
    Episode,
    finish,
    observation_event,
)
from pos_agent.envs import Environment, Observation
from pos_agent.llm import Message
from pos_agent.roles.limits import RoleLimits
from pos_agent.roles.schemas import decision_schema
from pos_agent.transition import Transition


class RawAgent(BackboneAgent):
    """ReAct over the raw trajectory."""

    name = "raw"

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
                schema = decision_schema(
                    admissible, observation.tools, limits.bounds, max_calls=observation.max_calls
                )
                messages = self._prompt(
                    env.goal, first, history, observation, t, limits, episode, schema
                )
                answer = self.call(
                    "policy",
                    self.model,
                    messages,
                    schema,
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
        schema: type[BaseModel],
    ) -> list[Message]:
        """The whole history, or, when it would not fit the context window, the newest turns
        that do (the cut traced and counted)."""
        args: dict[str, Any] = {
            "actions": observation.admissible_actions,
            "tools": observation.tools,
            "max_calls": observation.max_calls,
            "action_limit": limits.action_list,
        }

        def build(dropped: int) -> list[Message]:
            return prompts.raw_policy(goal, first, history[dropped:], dropped=dropped, **args)

        return self.fitted_prompt(
            build,
            len(history),
            step=t,
            max_tokens=limits.max_tokens,
            schema=schema,
            episode=episode,
        )
