"""The belief updater's prompts: the belief's initialization, update and revision.

Prompts carry the belief, never the transcript. Observations reach the belief model whole. The
PoS agent uses them (`agents/pos/prompts.py` adds the policy's); so can any agent
(`pos_agent.updater`).

Cache-aware layout (the rule every method follows, `roles/prompts.py`): the roles of one PoS
step share one prefix, byte for byte: the shared system text (`SHARED_SYSTEM`), then the task
and the rendered B_t (`belief_head`; the belief opens with the goal); each role's own
instructions come after it (here `belief_system`, moved from the system message, unchanged),
then what changes within the step (the action, the observation, the patch, the findings).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from pos_agent.llm import Message
from pos_agent.roles.prompts import SHARED_SYSTEM, goal_and_start, part_ends
from pos_agent.transition import Transition

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
its step and a short exact quote; what no observation shows is inferred. States say what is, not
what you plan: a plan or an intention is a gap. Keep only what matters for the goal."""

DIAGNOSIS_NOTE = """
This is a diagnosis task. Keep each candidate answer (diagnosis, root cause) as an inferred state
of the patient or system, attribute "hypothesis: <candidate>", with your confidence in it; raise
or lower that confidence as each finding arrives, and keep an epistemic gap for what would tell
the candidates apart."""


def belief_system(diagnostic: bool, note: str = "") -> str:
    """The belief model's instructions (the diagnosis note on diagnosis tasks; the profile's
    `patch_note` after them)."""
    text = BELIEF_SYSTEM + DIAGNOSIS_NOTE if diagnostic else BELIEF_SYSTEM
    return f"{text} {note}" if note else text


def belief_head(belief_text: str) -> str:
    """The prefix every role of a step shares after the system text: the task and B_t."""
    return f"Current belief:\n{belief_text}"


def messages_of(*parts: str, breaks: Collection[int] = ()) -> list[Message]:
    """The shared system text, then the non-empty parts as one user turn; a cache breakpoint
    after the system text and after each part whose index is in `breaks`."""
    kept = [(index, part) for index, part in enumerate(parts) if part]
    ends = part_ends([part for _, part in kept])
    marks = tuple(end for (index, _), end in zip(kept, ends, strict=True) if index in breaks)
    return [
        Message("system", SHARED_SYSTEM, (len(SHARED_SYSTEM),)),
        Message("user", "\n\n".join(part for _, part in kept), marks),
    ]


def belief_init(
    goal: str, observation: str, *, diagnostic: bool = False, note: str = ""
) -> list[Message]:
    return messages_of(
        "\n\n".join(goal_and_start(goal, observation, "Observation at step 0:")),
        belief_system(diagnostic, note),
        "Create the initial belief: the entities that matter for the goal with what step 0 shows "
        "about them, an achievement gap for the goal, epistemic gaps for what you must find out, "
        "and activate the gap to work on first.",
        breaks=(0,),
    )


def belief_update(
    belief_text: str, step: Transition, *, diagnostic: bool = False, note: str = ""
) -> list[Message]:
    return messages_of(
        belief_head(belief_text),
        belief_system(diagnostic, note),
        f"Action at step {step.step - 1}: {step.action}\n"
        f"Observation at step {step.step}:\n{step.observation.strip()}",
        "Return the patch that brings the belief up to date with this observation.",
        breaks=(0,),
    )


def belief_revision(
    belief_text: str,
    step: Transition,
    patch: object,
    findings: Sequence[str],
    evidence: str,
    *,
    diagnostic: bool = False,
    note: str = "",
) -> list[Message]:
    user = (
        f"Action at step {step.step - 1}: {step.action}\n"
        f"Observation at step {step.step}:\n{step.observation.strip()}\n\n"
        "Your patch (against the current belief above, before it):\n"
        f"{json.dumps(patch, ensure_ascii=False)}\n\n"
        "Problems found in it:\n"
        + "\n".join(f"{n}. {f}" for n, f in enumerate(findings, 1))
        + (f"\n\nEvidence:\n{evidence}" if evidence else "")
        + "\n\nReturn the corrected patch against the current belief, with every op you keep. "
        "A rule finding ([rule name]) is fixed in the patch. An [audit] finding you can show to "
        'be wrong may be answered instead: add to "answers" its number, the step whose '
        "observation shows you are right and an exact quote from it, and keep the op."
    )
    return messages_of(belief_head(belief_text), belief_system(diagnostic, note), user, breaks=(0,))


def global_revision(
    belief_text: str, findings: Sequence[str], *, diagnostic: bool = False, note: str = ""
) -> list[Message]:
    return messages_of(
        belief_head(belief_text),
        belief_system(diagnostic, note),
        "A full audit found these problems:\n"
        + "\n".join(f"- {f}" for f in findings)
        + "\n\nReturn the patch that fixes them.",
        breaks=(0,),
    )
