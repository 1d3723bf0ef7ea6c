"""The PoS agent's prompts: the belief updater's (initialization, update and revision, from
`pos_agent.updater.prompts`, re-exported here) and the policy's.

Prompts carry the belief, never the transcript. Observations reach the belief model and the
policy whole. The layout is the updater's (`updater/prompts.py`): one shared system text, then
the task and B_t, then the role's instructions (the policy's, moved from the system message,
unchanged), then what changes; on tool environments the policy's tool schemas, the same all
episode, come first, as in every method's prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pos_agent.llm import Message
from pos_agent.roles.prompts import actions_block, clip, tools_block
from pos_agent.transition import Transition
from pos_agent.updater.prompts import (
    BELIEF_SYSTEM,
    DIAGNOSIS_NOTE,
    belief_head,
    belief_init,
    belief_revision,
    belief_system,
    belief_update,
    global_revision,
    messages_of,
)

__all__ = [
    "BELIEF_SYSTEM",
    "DIAGNOSIS_NOTE",
    "POLICY_SYSTEM",
    "belief_head",
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
    # Tool schemas are the same all episode: first, as in every method's prompt. The belief
    # opens with the goal; the prompt names it only when the belief does not.
    parts = [tools_block(tools, max_calls)] if tools else []
    if not belief_text.startswith(f"Goal: {goal}"):
        parts.append(f"Goal: {goal}")
    parts.append(belief_head(belief_text))
    # Breakpoints: after the tools and goal (stable all episode), after B_t (shared in a step).
    breaks = range(len(parts) - 2, len(parts))
    parts.append(POLICY_SYSTEM)
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
    if not tools:
        parts.append(actions_block(actions, None, max_calls, limit=action_limit))
    return messages_of(*parts, breaks=breaks)
