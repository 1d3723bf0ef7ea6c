"""All prompt templates, kept together. Each builder returns chat messages for one role call.

Prompts carry the belief, never the transcript (except the `raw` baseline, whose point is the
transcript). The stable parts come first so that llama.cpp can reuse the KV prefix across calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pos_agent.llm import Message

OBSERVATION_CHARS = 1_500  # one observation as shown to a model
ACTION_LIST_LIMIT = 60  # admissible actions listed in a prompt


@dataclass(frozen=True, slots=True)
class Step:
    """One action and the observation it produced, for prompts."""

    step: int
    action: str
    observation: str


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
problems; an empty list is a good answer.{progress}"""

AUDIT_PROGRESS = """
Also judge progress: 1 if the last action narrowed the active gap, acquired information needed
for it, or advanced a plausible path to the goal; otherwise 0. Give a short reason."""

PROGRESS_SYSTEM = """You judge one step of an agent. Answer progress 1 if the last action narrowed
the active gap, acquired information needed for it, or advanced a plausible path to the goal;
otherwise 0. Give a short reason."""

POLICY_SYSTEM = """You are an agent acting in a text environment to reach a goal.
Decide the next action from your belief state: what you know, what is still open, and the active
gap you are working on. Pick one action that makes progress on the active gap.
If a RECOVERY note is shown, follow it: you are stuck and must change what you do."""

RAW_SYSTEM = """You are an agent acting in a text environment to reach a goal.
Read the history of your actions and observations, think briefly, then pick the next action."""


def clip(text: str, limit: int = OBSERVATION_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 15].rstrip() + " ...[truncated]"


def _actions_block(
    actions: Sequence[str] | None, tools: Sequence[dict[str, Any]] | None = None
) -> str:
    if tools:
        lines = []
        for tool in tools:
            params = tool.get("parameters", {}).get("properties", {})
            args = ", ".join(
                f"{name}: {spec.get('type', 'string')}" for name, spec in params.items()
            )
            lines.append(
                f"- {tool.get('name')}({args}): {clip(str(tool.get('description', '')), 160)}"
            )
        return "Tools (answer with one tool and its args):\n" + "\n".join(lines)
    if not actions:
        return "Write the action as a short command."
    shown = list(actions)[:ACTION_LIST_LIMIT]
    more = f"\n(+{len(actions) - len(shown)} more)" if len(actions) > len(shown) else ""
    return "Admissible actions:\n" + "\n".join(f"- {a}" for a in shown) + more


def belief_init(goal: str, observation: str, *, diagnostic: bool = False) -> list[Message]:
    user = (
        f"Goal: {goal}\n\nObservation at step 0:\n{clip(observation)}\n\n"
        "Create the initial belief: the entities that matter for the goal with what step 0 shows "
        "about them, an achievement gap for the goal, epistemic gaps for what you must find out, "
        "and activate the gap to work on first."
    )
    return [Message("system", belief_system(diagnostic)), Message("user", user)]


def belief_update(belief_text: str, step: Step, *, diagnostic: bool = False) -> list[Message]:
    user = (
        f"Current belief:\n{belief_text}\n\n"
        f"Action at step {step.step - 1}: {step.action}\n"
        f"Observation at step {step.step}:\n{clip(step.observation)}\n\n"
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
        f"Observation at step {step.step}:\n{clip(step.observation)}\n\n"
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


def audit(
    changed_text: str, gaps_text: str, recent: Sequence[Step], *, judge_progress: bool
) -> list[Message]:
    system = AUDIT_SYSTEM.format(progress=AUDIT_PROGRESS if judge_progress else "")
    transitions = "\n".join(
        f"step {s.step - 1}: {s.action} -> step {s.step}: {clip(s.observation, 400)}"
        for s in recent
    )
    user = (
        f"Changed records and their neighbours:\n{changed_text}\n\n{gaps_text}\n\n"
        f"Recent transitions:\n{transitions}"
    )
    return [Message("system", system), Message("user", user)]


def progress(gaps_text: str, last: Step) -> list[Message]:
    user = (
        f"{gaps_text}\n\nLast action (step {last.step - 1}): {last.action}\n"
        f"Observation (step {last.step}): {clip(last.observation, 600)}"
    )
    return [Message("system", PROGRESS_SYSTEM), Message("user", user)]


def global_audit(belief_text: str, trajectory: Sequence[Step]) -> list[Message]:
    lines = "\n".join(f"{s.step}: {s.action} -> {clip(s.observation, 120)}" for s in trajectory)
    user = f"Whole belief:\n{belief_text}\n\nTrajectory (step: action -> observation):\n{lines}"
    return [Message("system", AUDIT_SYSTEM.format(progress="")), Message("user", user)]


def policy(
    goal: str,
    belief_text: str,
    observation: Step,
    actions: Sequence[str] | None,
    recovery: str | None,
    tools: Sequence[dict[str, Any]] | None = None,
) -> list[Message]:
    parts = [f"Goal: {goal}", f"Belief:\n{belief_text}"]
    if recovery:
        parts.append(recovery)
    parts.append(f"Current observation (step {observation.step}):\n{clip(observation.observation)}")
    parts.append(_actions_block(actions, tools))
    return [Message("system", POLICY_SYSTEM), Message("user", "\n\n".join(parts))]


def raw_policy(
    goal: str,
    first_observation: str,
    history: Sequence[Step],
    actions: Sequence[str] | None,
    tools: Sequence[dict[str, Any]] | None = None,
) -> list[Message]:
    turns = "\n".join(f"> {s.action}\n{clip(s.observation)}" for s in history)
    user = (
        f"Goal: {goal}\n\nStep 0:\n{clip(first_observation)}\n"
        + (f"\nHistory:\n{turns}\n" if turns else "")
        + f"\n{_actions_block(actions, tools)}"
    )
    return [Message("system", RAW_SYSTEM), Message("user", user)]
