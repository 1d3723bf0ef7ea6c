"""The baselines' prompts (raw, the context-management methods, LongHorizon-Harness decisions).

Each builder returns chat messages for one role call. The `raw` baseline carries the transcript
(that is its point). The PoS agent's prompts are in `agents/pos/prompts.py`, the sentinel's in
`sentinel/prompts.py`; the parts all of them share in `roles/prompts.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pos_agent.agents.fit import cut_note
from pos_agent.llm import Message, breakpoints_at
from pos_agent.roles.prompts import (
    actions_block,
    clip,
    goal_and_start,
    history_marks,
    part_ends,
    tools_block,
)
from pos_agent.transition import Transition, render_transitions

__all__ = ["actions_block", "clip", "tools_block"]  # shared parts, re-exported for the baselines


# -- the turn scaffolding every ReAct-style method shares (Raw, ACON, PACE, HiAgent, the
# LongHorizon executor): each past turn is labelled with its step (`Transition.render`:
# `[step N] > action` and the observation), and the prompt says which step the agent is at.
# Only what each method keeps of the turns differs.


def position_line(step: int) -> str:
    """Where the agent is: the line before the actions of every ReAct-style prompt."""
    if step:
        return f"You are at step {step}; the last step above is the latest observation."
    return "You are at step 0: act on the observation above."


RAW_SYSTEM = """You are an agent acting in an environment to reach a goal.
Read the history of your actions and observations, think briefly, then pick the next action."""


def raw_policy(
    goal: str,
    first_observation: str,
    history: Sequence[Transition],
    actions: Sequence[str] | None,
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    max_calls: int = 1,
    dropped: int = 0,
    action_limit: int | None = None,
) -> list[Message]:
    """The whole trajectory: task, first observation, every action and observation since, in
    the shared turn scaffolding."""
    turns = render_transitions(history)
    step = history[-1].step if history else dropped
    cut = f"\n{cut_note(dropped)}" if dropped else ""
    head = stable_tools(tools, max_calls) + "\n\n".join(goal_and_start(goal, first_observation))
    opening = f"\nHistory:{cut}\n"
    user = (
        head
        + "\n"
        + (f"{opening}{turns}\n" if turns else "")
        + f"\n{position_line(step)}"
        + ("" if tools else "\n\n" + actions_block(actions, None, max_calls, limit=action_limit))
    )
    # Breakpoints: after the system text, the tools and the task, and in the history.
    start = len(head) + 1 + len(opening)
    marks = [len(head), *(start + mark for mark in history_marks(turns))]
    return [system_message(RAW_SYSTEM), Message("user", user, breakpoints_at(user, marks))]


def system_message(text: str) -> Message:
    """A system message, a cache breakpoint at its end (the first stable prefix)."""
    return Message("system", text, (len(text),))


def stable_tools(tools: Sequence[dict[str, Any]] | None, max_calls: int) -> str:
    """The tool schemas, the same all episode: first in the user turn (the cache-aware layout
    of every method, `roles/prompts.py`), before the task and what changes."""
    return tools_block(tools, max_calls) + "\n\n" if tools else ""


# -- the context-management baselines (ACON, PACE, HiAgent; LongHorizon-Harness decisions) --------

CONTEXT_SYSTEM = """You are an agent acting in an environment to reach a goal.
Read the goal and your memory of the earlier steps, think briefly, then pick the next action."""


def context_policy(
    goal: str,
    first_observation: str,
    memory: str,
    step: int,
    actions: Sequence[str] | None,
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    max_calls: int = 1,
    method_note: str = "",
    lookup_hint: str = "",
    lookups: Sequence[str] = (),
    action_limit: int | None = None,
    dropped: int = 0,
    latest: str = "",
) -> list[Message]:
    """The shared ReAct prompt of a context method: goal, step 0, the method's memory (which
    ends with the latest observation), the lookups made at this step, the actions. `latest`
    (the latest observation) only places the memory's cache breakpoint."""
    system = CONTEXT_SYSTEM + (f"\n{method_note}" if method_note else "")
    parts = [tools_block(tools, max_calls)] if tools else []
    parts += goal_and_start(goal, first_observation)
    stable = len(parts) - 1
    if dropped:
        parts.append(cut_note(dropped))
    held = len(parts) if memory.strip() else None
    if memory.strip():
        parts.append(memory.strip())
    parts.append(position_line(step))
    if lookups:
        parts.append(
            "Looked up at this step (no action spent):\n" + "\n".join(f"- {x}" for x in lookups)
        )
    block = "" if tools else actions_block(actions, None, max_calls, limit=action_limit)
    hint = "\n".join(x for x in (block, lookup_hint) if x)
    if hint:
        parts.append(hint)
    user = "\n\n".join(parts)
    # Breakpoints: after the system text, the tools and the task, and in the memory's history.
    ends = part_ends(parts)
    marks = [ends[stable]]
    if held is not None:
        start = ends[held] - len(parts[held])
        marks += [start + mark for mark in history_marks(parts[held], latest)]
    return [system_message(system), Message("user", user, breakpoints_at(user, marks))]


LONG_HORIZON_SYSTEM = """You play one role in a managed long-horizon task, one action at a time.
Follow your role's instructions below and answer with one of the actions offered."""


def long_horizon_decision(
    context: str,
    actions: Sequence[str] | None,
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    max_calls: int = 1,
    observation: str | None = None,
    finish_hint: bool = False,
    step: int | None = None,
    action_limit: int | None = None,
) -> list[Message]:
    """One LongHorizon-Harness decision (executor action, auditor query, final answer): the
    role's context as the harness built it, the latest observation if the role needs it, and
    the actions the role may take."""
    parts = [tools_block(tools, max_calls)] if tools else []
    held = len(parts)
    parts.append(context.strip())
    if observation is not None:
        seen = observation.strip()
        # The first observation of LOCA is the instruction the context already holds.
        shown = "(the task instruction above)" if seen and seen in context else seen
        parts.append(f"Current observation:\n{shown}")
    if step is not None:
        parts.append(position_line(step))
    block = "" if tools else actions_block(actions, None, max_calls, limit=action_limit)
    if finish_hint:
        block += '\nAnswer "finish" to end your turn without an action.'
    if block.strip():
        parts.append(block.strip())
    user = "\n\n".join(parts)
    # Breakpoints: after the system text and the tools, and in the context's history.
    ends = part_ends(parts)
    start = ends[held] - len(parts[held])
    marks = ([ends[0]] if tools else []) + [start + m for m in history_marks(parts[held])]
    return [system_message(LONG_HORIZON_SYSTEM), Message("user", user, breakpoints_at(user, marks))]
