"""The `raw` baseline: ReAct over the full chronological action-observation history.

Same harness, budgets, action validation and degradation as PoS; the only difference is what
the policy is conditioned on: the whole transcript instead of a belief. Its prompt therefore
grows with every step, which is the cost PoS is built to avoid. When the transcript would no
longer fit `max_history_chars`, the oldest turns are dropped (and the drop is traced), since a
prompt the model cannot read at all would help no one.
"""

from __future__ import annotations

from pos_agent.agents import prompts
from pos_agent.agents.base import (
    Episode,
    RoleCaller,
    StepCallback,
    StepInfo,
    finish,
    observation_info,
)
from pos_agent.agents.prompts import Step
from pos_agent.agents.schemas import decision_schema
from pos_agent.envs import Environment
from pos_agent.llm import Model, TokenLedger
from pos_agent.trace import TraceWriter


class RawAgent:
    """ReAct over the raw trajectory."""

    name = "raw"

    def __init__(
        self,
        model: Model,
        *,
        ledger: TokenLedger | None = None,
        trace: TraceWriter | None = None,
        on_step: StepCallback | None = None,
        policy_tokens: int = 128,
        max_history_chars: int = 24_000,
        temperature: float = 0.0,
    ) -> None:
        self.model = model
        self.ledger = ledger or TokenLedger()
        self.call = RoleCaller(self.ledger, trace)
        self.on_step = on_step
        self.policy_tokens = policy_tokens
        self.max_history_chars = max_history_chars
        self.temperature = temperature

    def run(self, env: Environment) -> Episode:
        episode = Episode()
        observation = env.reset()
        first = observation.text
        self.call.emit("observation", 0, **observation_info(observation))
        history: list[Step] = []
        try:
            for t in range(env.max_steps):
                admissible = observation.admissible_actions
                shown = self._fit(history, t)
                answer = self.call(
                    "policy",
                    self.model,
                    prompts.raw_policy(env.goal, first, shown, admissible, observation.tools),
                    decision_schema(admissible, observation.tools),
                    step=t,
                    max_tokens=self.policy_tokens,
                    temperature=self.temperature,
                    purpose="act",
                )
                recent = [s.action for s in history[-2:]]
                action, degraded = self.call.settle_action(answer, admissible, recent, t)
                episode.degraded_steps += degraded
                observation = env.step(action)
                episode.steps = t + 1
                self.call.emit("observation", t + 1, **observation_info(observation))
                history.append(Step(t + 1, action, observation.text))
                if self.on_step is not None:
                    self.on_step(
                        StepInfo(
                            t + 1,
                            action,
                            observation.success,
                            degraded=degraded,
                            tokens=self.call.tokens(),
                        )
                    )
                if observation.done:
                    break
        finally:
            finish(episode, observation)
        return episode

    def _fit(self, history: list[Step], t: int) -> list[Step]:
        """The newest turns that fit the character budget (all of them, until they do not)."""
        total = 0
        kept: list[Step] = []
        for step in reversed(history):
            total += len(step.action) + min(len(step.observation), prompts.OBSERVATION_CHARS) + 4
            if total > self.max_history_chars:
                self.call.emit(
                    "degraded", t, role="policy", reason="history truncated", kept=len(kept)
                )
                break
            kept.append(step)
        kept.reverse()
        return kept
