"""The belief updater as public API: the prompts and the answer schema the PoS agent's belief
model gets, and one call that applies a model's answer and checks it with the sentinel rules.

Use it to keep a PoS belief in your own agent, with your own model client:

    from pos_agent.belief import Belief
    from pos_agent.updater import apply_update, init_messages, patch_json_schema, update_messages

    belief = Belief(goal="heat the mug", step=0)
    messages = init_messages(belief.goal, first_observation)  # [system, user] Messages
    answer = my_model(messages, json_schema=patch_json_schema(initial=True))  # JSON text
    update = apply_update(belief, answer, step=0, observations={0: first_observation})
    belief = update.belief  # rejected ops in update.rejected, rule findings in update.findings

    # each later step: the action sent at step t-1 and the observation of step t
    messages = update_messages(belief, t, action, observation)

The prompts and the schema are the ones `pos run --agent pos` uses (`agents/pos` imports them
from here); the schema is unbounded unless given `SchemaBounds` (the `compact` profile's bounds
are for the embedded 135M model only). Whatever passes the schema still goes through
`apply_patch`, where the real validation is, and the sentinel's deterministic rules
(`pos_agent.sentinel.check_rules`); the sentinel's LLM audit is `pos_agent.sentinel.audit`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from pos_agent.belief import Belief, PatchOutcome, RejectedOp, apply_patch_detailed, render_belief
from pos_agent.llm import Message
from pos_agent.roles.limits import SchemaBounds
from pos_agent.sentinel import Finding, check_rules
from pos_agent.transition import Transition
from pos_agent.updater.prompts import (
    BELIEF_SYSTEM,
    DIAGNOSIS_NOTE,
    belief_init,
    belief_revision,
    belief_system,
    belief_update,
    global_revision,
)
from pos_agent.updater.schemas import BeliefPatch, BeliefRevision, patch_schema, revision_schema

__all__ = [
    "BELIEF_SYSTEM",
    "DIAGNOSIS_NOTE",
    "BeliefPatch",
    "BeliefRevision",
    "Message",
    "Update",
    "apply_update",
    "belief_init",
    "belief_revision",
    "belief_system",
    "belief_update",
    "global_revision",
    "init_messages",
    "parse_patch",
    "patch_json_schema",
    "patch_schema",
    "revision_schema",
    "update_messages",
]

UNBOUNDED = SchemaBounds()


@dataclass(frozen=True, slots=True)
class Update:
    """What one model answer did to the belief."""

    belief: Belief
    """The belief after the accepted ops (the input belief when nothing was accepted)."""
    rejected: list[RejectedOp]
    """Ops `apply_patch` refused, with the reason in words a model can act on (an answer that
    is not a patch at all is one entry at index -1)."""
    findings: list[Finding]
    """The sentinel rules' findings on the new belief (contradictions, unsupported claims,
    conflicts, dangling ids, ...): what a revision prompt (`belief_revision`) shows the model."""
    changed: frozenset[str]
    """Ids of the records created, changed or removed."""


def init_messages(
    goal: str, observation: str, *, diagnostic: bool = False, note: str = ""
) -> list[Message]:
    """The prompt that creates the initial belief from the goal and the step-0 observation
    (`note`: a profile's line after the instructions, as `RoleLimits.patch_note`)."""
    return belief_init(goal, observation, diagnostic=diagnostic, note=note)


def update_messages(
    belief: Belief,
    step: int,
    action: str,
    observation: str,
    *,
    diagnostic: bool = False,
    max_entities: int | None = None,
    note: str = "",
) -> list[Message]:
    """The prompt that brings `belief` up to date with one transition: `action` (sent at step
    `step - 1`) and the `observation` of step `step` (`note`: as for `init_messages`)."""
    text = render_belief(belief, max_entities=max_entities)
    return belief_update(
        text, Transition(step, action, observation), diagnostic=diagnostic, note=note
    )


def patch_json_schema(
    bounds: SchemaBounds | None = None, *, initial: bool = False
) -> dict[str, Any]:
    """The JSON schema of the updater's answer (`{"ops": [...]}`), for a server's structured
    output mode; unbounded unless `bounds` are given."""
    return patch_schema(bounds or UNBOUNDED, initial=initial).model_json_schema()


def parse_patch(answer: str | Mapping[str, Any] | BeliefPatch) -> list[dict[str, Any]]:
    """The ops of an answer (JSON text, a dict, or a `BeliefPatch`), validated by the schema.

    Raises ValueError when the answer is not a patch."""
    if isinstance(answer, BeliefPatch):
        patch = answer
    else:
        try:
            if isinstance(answer, str):
                patch = BeliefPatch.model_validate_json(answer)
            else:
                patch = BeliefPatch.model_validate(dict(answer))
        except ValidationError as error:
            raise ValueError(f"not a belief patch: {error}") from error
    return [op.model_dump(exclude_none=True) for op in patch.ops]


def apply_update(
    belief: Belief,
    answer: str | Mapping[str, Any] | BeliefPatch,
    *,
    step: int,
    observations: Mapping[int, str],
) -> Update:
    """Apply a model's answer to `belief` as the belief of step `step`, then run the sentinel's
    rules on what changed. Never raises on a bad answer: an answer that is not a patch leaves
    the belief as it was, with the reason in `rejected`."""
    base = belief.at_step(step)
    try:
        ops: list[Any] = parse_patch(answer)
    except ValueError as error:
        raw = answer if isinstance(answer, str) else json.dumps(dict(answer), default=str)
        return Update(base, [RejectedOp(-1, raw[:2000], str(error))], [], frozenset())
    outcome: PatchOutcome = apply_patch_detailed(base, ops)
    findings = check_rules(outcome.belief, observations, patch=ops, changed=outcome.changed)
    return Update(outcome.belief, outcome.rejected, findings, outcome.changed)
