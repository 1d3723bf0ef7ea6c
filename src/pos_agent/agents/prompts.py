"""All prompt templates, kept together. Each builder returns chat messages for one role call.

Prompts carry the belief, never the transcript (except the `raw` baseline, whose point is the
transcript). The stable parts come first so that llama.cpp can reuse the KV prefix across calls.
Observations reach the belief model, the policy and the raw baseline whole; the only clips are
the sentinel's views of past transitions and evidence, which are `PosConfig` settings.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pos_agent.llm import Message

ACTION_LIST_LIMIT = 60  # admissible actions listed in a prompt (the schema's enum has them all)


@dataclass(frozen=True, slots=True)
class Step:
    """One action and the observation it produced, for prompts."""

    step: int
    action: str
    observation: str


# -- the turn scaffolding every ReAct-style method shares (Raw, ACON, PACE, HiAgent, the
# LongHorizon executor): each past turn is labelled with its step, and the prompt says which step
# the agent is at. Only what each method keeps of the turns differs.


def turn_text(step: int, action: str, observation: str) -> str:
    """One past turn: the action sent at step `step - 1` and the observation of step `step`."""
    return f"[step {step}] > {action}\n{observation.strip()}"


def position_line(step: int) -> str:
    """Where the agent is: the line before the actions of every ReAct-style prompt."""
    if step:
        return f"You are at step {step}; the last step above is the latest observation."
    return "You are at step 0: act on the observation above."


BELIEF_SYSTEM = """You maintain the belief state of an agent that works on a task.
The belief has entities (ids e1, e2, ...), states of entities (s1, ...: entity, attribute, value),
relations between entities (r1, ...) and gaps (g1, ...): what is not yet known (kind "epistemic")
or not yet achieved (kind "achievement"). One gap is active.
Answer with a patch: {"ops": [...]} using only these operations:
- upsert_entity: name, type
- upsert_state: entity (id or name), attribute, value, confidence 0..1, source "observed" or
  "inferred", evidence [step], quote (exact words from that step's observation)
- remove_state: id
- upsert_relation: src, type, dst (ids or names), confidence, source, evidence
- remove_relation: id
- add_gap: kind, text, refs (ids or names), activate true to make it the active gap
- resolve_gap: id (when the observation shows the gap is closed)
- set_active_gap: id
Rules: refer to existing records by id; new entities by name. One entity has one value per
attribute; a new value replaces the old one. Mark what an observation shows as observed, with
its step and a short exact quote. Keep only what matters for the goal. Return few ops."""

DIAGNOSIS_NOTE = """
This is a diagnosis task. Keep each candidate answer (diagnosis, root cause) as an inferred state
of the patient or system, attribute "hypothesis: <candidate>", with your confidence in it; raise
or lower that confidence as each finding arrives, and keep an epistemic gap for what would tell
the candidates apart."""


def belief_system(diagnostic: bool) -> str:
    return BELIEF_SYSTEM + DIAGNOSIS_NOTE if diagnostic else BELIEF_SYSTEM


AUDIT_SYSTEM = """You audit one update of an agent's belief state against what it observed.
Report only real problems: "internal" when records contradict each other, "external" when a
record contradicts an observation (give evidence_step and an exact quote from it). Do not invent
problems; an empty list is a good answer."""

# One progress question for the audit (full method) and the judge (no_consistency): progress is
# judged against the gap that was active before the step, even when the step resolved it.
PROGRESS_QUESTION = """Judge progress: 1 if the last action narrowed the gap that was active
before it (shown as "active before this step"), acquired information needed for that gap, or
advanced a plausible path to the goal; otherwise 0. Give a short reason."""

PROGRESS_SYSTEM = "You judge one step of an agent.\n" + PROGRESS_QUESTION


def audit_system(judge_progress: bool) -> str:
    return AUDIT_SYSTEM + ("\n" + PROGRESS_QUESTION if judge_progress else "")


POLICY_SYSTEM = """You are an agent acting in a text environment to reach a goal.
Decide the next action from your belief state: what you know, what is still open, and the active
gap you are working on. Pick one action that makes progress on the active gap.
If a RECOVERY note is shown, follow it: you are stuck and must change what you do."""

RAW_SYSTEM = """You are an agent acting in a text environment to reach a goal.
Read the history of your actions and observations, think briefly, then pick the next action."""


def clip(text: str, limit: int | None) -> str:
    """`text` stripped, and cut to `limit` characters with a marker (None: whole)."""
    text = text.strip()
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 15)].rstrip() + " ...[truncated]"


def tools_block(tools: Sequence[dict[str, Any]], max_calls: int = 1) -> str:
    """The tools with every argument: type, required or optional, allowed values, description."""
    how = (
        f'Answer with "calls": a list of 1 to {max_calls} tool calls for this turn.'
        if max_calls > 1
        else 'Answer with one tool call in "call".'
    )
    lines = [f"Tools ({how}):"]
    for tool in tools:
        parameters = tool.get("parameters") or {}
        required = set(parameters.get("required") or [])
        lines.append(f"- {tool.get('name')}: {str(tool.get('description', '')).strip()}")
        for name, spec in (parameters.get("properties") or {}).items():
            spec = spec if isinstance(spec, dict) else {}
            facts = [str(spec.get("type", "any")), "required" if name in required else "optional"]
            if spec.get("enum"):
                facts.append("one of: " + ", ".join(map(str, spec["enum"])))
            for bound, word in (("minimum", "min"), ("maximum", "max")):
                if spec.get(bound) is not None:
                    facts.append(f"{word} {spec[bound]}")
            about = str(spec.get("description", "")).strip()
            lines.append(f"    {name} ({'; '.join(facts)})" + (f": {about}" if about else ""))
    return "\n".join(lines)


def _actions_block(
    actions: Sequence[str] | None,
    tools: Sequence[dict[str, Any]] | None = None,
    max_calls: int = 1,
) -> str:
    if tools:
        return tools_block(tools, max_calls)
    if not actions:
        return "Write the action as a short command."
    shown = list(actions)[:ACTION_LIST_LIMIT]
    more = f"\n(+{len(actions) - len(shown)} more)" if len(actions) > len(shown) else ""
    return "Admissible actions:\n" + "\n".join(f"- {a}" for a in shown) + more


def belief_init(goal: str, observation: str, *, diagnostic: bool = False) -> list[Message]:
    user = (
        f"Goal: {goal}\n\nObservation at step 0:\n{observation.strip()}\n\n"
        "Create the initial belief: the entities that matter for the goal with what step 0 shows "
        "about them, an achievement gap for the goal, epistemic gaps for what you must find out, "
        "and activate the gap to work on first."
    )
    return [Message("system", belief_system(diagnostic)), Message("user", user)]


def belief_update(belief_text: str, step: Step, *, diagnostic: bool = False) -> list[Message]:
    user = (
        f"Current belief:\n{belief_text}\n\n"
        f"Action at step {step.step - 1}: {step.action}\n"
        f"Observation at step {step.step}:\n{step.observation.strip()}\n\n"
        "Return the patch that brings the belief up to date with this observation."
    )
    return [Message("system", belief_system(diagnostic)), Message("user", user)]


def belief_revision(
    belief_text: str,
    step: Step,
    patch: object,
    findings: Sequence[str],
    evidence: str,
    *,
    diagnostic: bool = False,
) -> list[Message]:
    user = (
        f"Current belief (before your patch):\n{belief_text}\n\n"
        f"Action at step {step.step - 1}: {step.action}\n"
        f"Observation at step {step.step}:\n{step.observation.strip()}\n\n"
        f"Your patch:\n{json.dumps(patch, ensure_ascii=False)}\n\n"
        "Problems found in it:\n"
        + "\n".join(f"- {f}" for f in findings)
        + (f"\n\nEvidence:\n{evidence}" if evidence else "")
        + "\n\nReturn a corrected patch against the current belief."
    )
    return [Message("system", belief_system(diagnostic)), Message("user", user)]


def global_revision(
    belief_text: str, findings: Sequence[str], *, diagnostic: bool = False
) -> list[Message]:
    user = (
        f"Current belief:\n{belief_text}\n\nA full audit found these problems:\n"
        + "\n".join(f"- {f}" for f in findings)
        + "\n\nReturn the patch that fixes them."
    )
    return [Message("system", belief_system(diagnostic)), Message("user", user)]


def transition_lines(recent: Sequence[Step], limit: int | None) -> str:
    return "\n".join(
        f"step {s.step - 1}: {s.action} -> step {s.step}: {clip(s.observation, limit)}"
        for s in recent
    )


def audit(
    changed_text: str,
    gaps_text: str,
    recent: Sequence[Step],
    *,
    judge_progress: bool,
    observation_chars: int | None,
) -> list[Message]:
    # The transitions come last: the newest one is the prompt's last line.
    user = (
        f"Changed records and their neighbours:\n{changed_text}\n\n{gaps_text}\n\n"
        f"Recent transitions:\n{transition_lines(recent, observation_chars)}"
    )
    return [Message("system", audit_system(judge_progress)), Message("user", user)]


def progress(gaps_text: str, last: Step, *, observation_chars: int | None) -> list[Message]:
    user = f"{gaps_text}\n\nLast transition:\n{transition_lines([last], observation_chars)}"
    return [Message("system", PROGRESS_SYSTEM), Message("user", user)]


def global_audit(
    belief_text: str, trajectory: Sequence[Step], *, observation_chars: int | None
) -> list[Message]:
    lines = "\n".join(
        f"{s.step}: {s.action} -> {clip(s.observation, observation_chars)}" for s in trajectory
    )
    user = f"Whole belief:\n{belief_text}\n\nTrajectory (step: action -> observation):\n{lines}"
    return [Message("system", AUDIT_SYSTEM), Message("user", user)]


def policy(
    goal: str,
    belief_text: str,
    observation: Step,
    actions: Sequence[str] | None,
    recovery: str | None,
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    max_calls: int = 1,
    observation_chars: int | None = None,
) -> list[Message]:
    parts = [f"Goal: {goal}", f"Belief:\n{belief_text}"]
    if recovery:
        parts.append(recovery)
    parts.append(
        f"Current observation (step {observation.step}):\n"
        + clip(observation.observation, observation_chars)
    )
    parts.append(_actions_block(actions, tools, max_calls))
    return [Message("system", POLICY_SYSTEM), Message("user", "\n\n".join(parts))]


def raw_policy(
    goal: str,
    first_observation: str,
    history: Sequence[Step],
    actions: Sequence[str] | None,
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    max_calls: int = 1,
    dropped: int = 0,
) -> list[Message]:
    """The whole trajectory: task, first observation, every action and observation since, in
    the shared turn scaffolding."""
    turns = "\n\n".join(turn_text(s.step, s.action, s.observation) for s in history)
    step = history[-1].step if history else dropped
    cut = (
        f"\n(The {dropped} oldest turns are left out: the history no longer fits the model's "
        "context window.)"
        if dropped
        else ""
    )
    user = (
        f"Goal: {goal}\n\nStep 0:\n{first_observation.strip()}\n"
        + (f"\nHistory:{cut}\n{turns}\n" if turns else "")
        + f"\n{position_line(step)}\n\n{_actions_block(actions, tools, max_calls)}"
    )
    return [Message("system", RAW_SYSTEM), Message("user", user)]


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
) -> list[Message]:
    """The shared ReAct prompt of a context method: goal, step 0, the method's memory (which
    ends with the latest observation), the lookups made at this step, the actions."""
    system = CONTEXT_SYSTEM + (f"\n{method_note}" if method_note else "")
    parts = [f"Goal: {goal}", f"Step 0:\n{first_observation.strip()}"]
    if memory.strip():
        parts.append(memory.strip())
    parts.append(position_line(step))
    if lookups:
        parts.append(
            "Looked up at this step (no action spent):\n" + "\n".join(f"- {x}" for x in lookups)
        )
    block = _actions_block(actions, tools, max_calls)
    parts.append(block + (f"\n{lookup_hint}" if lookup_hint else ""))
    return [Message("system", system), Message("user", "\n\n".join(parts))]


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
) -> list[Message]:
    """One LongHorizon-Harness decision (executor action, auditor query, final answer): the
    role's context as the harness built it, the latest observation if the role needs it, and
    the actions the role may take."""
    parts = [context.strip()]
    if observation is not None:
        parts.append(f"Current observation:\n{observation.strip()}")
    if step is not None:
        parts.append(position_line(step))
    block = _actions_block(actions, tools, max_calls)
    if finish_hint:
        block += '\nAnswer "finish" to end your turn without an action.'
    parts.append(block)
    return [Message("system", LONG_HORIZON_SYSTEM), Message("user", "\n\n".join(parts))]
