"""The PoS agent's prompts: the belief updater's (initialization, update and revision, from
`pos_agent.updater.prompts`, re-exported here) and the policy's.

Prompts carry the belief, never the transcript. The stable parts come first so that llama.cpp
can reuse the KV prefix across calls. Observations reach the belief model and the policy whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pos_agent.llm import Message
from pos_agent.roles.prompts import actions_block, clip
from pos_agent.roles.transition import Transition
from pos_agent.updater.prompts import (
    BELIEF_SYSTEM,
    DIAGNOSIS_NOTE,
    belief_init,
    belief_revision,
    belief_system,
    belief_update,
    global_revision,
)

__all__ = [
    "BELIEF_SYSTEM",
    "DIAGNOSIS_NOTE",
    "POLICY_SYSTEM",
    "belief_init",
    "belief_revision",
    "belief_system",
    "belief_update",
    "global_revision",
    "policy",
]

POLICY_SYSTEM = """You are an agent acting in an environment to reach a goal.
Decide the next action from your belief state: what you know, what is still open, and the active
gap you are working on. Pick one action that makes progress on the active gap.
If a RECOVERY note is shown, follow it: you are stuck and must change what you do."""


def policy(
    goal: str,
    belief_text: str,
    observation: Transition,
    actions: Sequence[str] | None,
    recovery: str | None,
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    max_calls: int = 1,
    observation_chars: int | None = None,
    action_limit: int | None = None,
) -> list[Message]:
    # The belief opens with the goal; the prompt names it only when the belief does not.
    parts = [] if belief_text.startswith(f"Goal: {goal}") else [f"Goal: {goal}"]
    parts.append(f"Belief:\n{belief_text}")
    if recovery:
        parts.append(recovery)
    seen = observation.observation.strip()
    parts.append(
        f"Current observation (step {observation.step}):\n"
        # LOCA's first observation is the instruction, which the goal already shows.
        + (
            "(the task instruction, as in the goal)"
            if seen == goal.strip()
            else clip(seen, observation_chars)
        )
    )
    parts.append(actions_block(actions, tools, max_calls, limit=action_limit))
    return [Message("system", POLICY_SYSTEM), Message("user", "\n\n".join(parts))]
