"""Belief mode: a PoS belief per session, kept from the tool outputs the proxy sees.

The belief model (any `--model` spec) writes the initial belief from the goal and the first
tool output, then one patch per step, with the public updater (`pos_agent.updater`: the PoS
agent's prompts and patch schema). Each patch goes through `apply_update`: `apply_patch` with
its structural checks, then the sentinel's rules; a candidate with findings is rejected and the
previous belief kept, as the PoS agent does when its revision fails. The proxy does not run the sentinel's LLM audit (that needs
the environment's admissible actions and a second model call per step).

A belief-model call that fails returns None: the monitor reads that step model-free, and the
request goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pos_agent.belief import Belief, apply_patch_detailed, render_belief, with_first_gap
from pos_agent.events import (
    BeliefCommitEvent,
    BeliefInitEvent,
    BeliefPatchEvent,
    BeliefRejectEvent,
    DegradedEvent,
    Event,
)
from pos_agent.llm import Message, Model
from pos_agent.roles.limits import RoleLimits, paper_generation_tokens, role_limits
from pos_agent.updater import apply_update, init_messages, patch_schema, update_messages

__all__ = ["BeliefTracker", "belief_limits"]

OBSERVATIONS_KEPT = 64
"""Tool outputs the sentinel's rules may cite as evidence (the most recent)."""


def belief_limits(spec: str) -> RoleLimits:
    """The belief role's limits for a model spec (the `compact` profile for `local`)."""
    return role_limits("belief", model=spec, generation_tokens=paper_generation_tokens("execution"))


class BeliefTracker:
    """One session's belief. Not thread-safe: the session's lock serialises its calls."""

    def __init__(self, model: Model, goal: str, limits: RoleLimits) -> None:
        self.model = model
        self.goal = goal
        self.limits = limits
        self.belief: Belief | None = None
        self.observations: dict[int, str] = {}

    def observe(
        self, step: int, action: str, observation: str
    ) -> tuple[Belief | None, list[Event]]:
        """The belief after `step` (None: the belief model failed, read this step model-free)
        and the trace events of the update."""
        self.observations[step] = observation
        for old in [s for s in self.observations if s <= step - OBSERVATIONS_KEPT]:
            del self.observations[old]
        try:
            if self.belief is None:
                return self._initialize(step, observation)
            return self._update(step, action, observation)
        except Exception as error:  # a belief-model bug never breaks the request
            reason = f"{type(error).__name__}: {error}"
            return None, [
                DegradedEvent(
                    step=step,
                    role="belief",
                    reason=reason[:500],
                    fallback="model-free for this step",
                )
            ]

    def render(self) -> str | None:
        """The belief as the PoS agent shows it, or None before the first step."""
        if self.belief is None:
            return None
        return render_belief(self.belief, max_entities=self.limits.render_entities)

    def _patch(self, messages: Sequence[Message], *, initial: bool, purpose: str) -> list[Any]:
        answer = self.model.complete(
            messages,
            schema=patch_schema(self.limits.bounds, initial=initial),
            max_tokens=self.limits.max_tokens,
            role="belief",
            purpose=purpose,
        )
        parsed = answer.parsed
        if parsed is None:
            raise ValueError("the belief model gave no patch")
        return [op.model_dump(exclude_none=True) for op in getattr(parsed, "ops", [])]

    def _initialize(self, step: int, observation: str) -> tuple[Belief | None, list[Event]]:
        # The profile's line follows the belief model's instructions (the updater's layout).
        messages = init_messages(self.goal, observation, note=self.limits.patch_note)
        ops = self._patch(messages, initial=True, purpose="init")
        outcome = apply_patch_detailed(Belief(goal=self.goal, step=step), ops)
        belief = with_first_gap(outcome.belief, "achievement")
        self.belief = belief
        event = BeliefInitEvent(
            step=step,
            ops=ops,
            rejected=[r.to_dict() for r in outcome.rejected],
            belief=belief.to_dict(),
        )
        return belief, [event]

    def _update(
        self, step: int, action: str, observation: str
    ) -> tuple[Belief | None, list[Event]]:
        assert self.belief is not None
        messages = update_messages(
            self.belief,
            step,
            action,
            observation,
            max_entities=self.limits.render_entities,
            note=self.limits.patch_note,
        )
        ops = self._patch(messages, initial=False, purpose="update")
        update = apply_update(self.belief, {"ops": ops}, step=step, observations=self.observations)
        events: list[Event] = [
            BeliefPatchEvent(
                step=step,
                ops=ops,
                rejected=[r.to_dict() for r in update.rejected],
                changed=sorted(update.changed),
            )
        ]
        if update.findings:
            events.append(
                BeliefRejectEvent(
                    step=step,
                    findings=[f.reason for f in update.findings],
                    reason="the sentinel's rules rejected the patch; previous belief kept",
                )
            )
            self.belief = self.belief.at_step(step)
        else:
            events.append(BeliefCommitEvent(step=step))
            self.belief = update.belief
        return self.belief, events
