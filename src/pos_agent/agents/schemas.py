"""One pydantic schema per model role: what the policy, the belief model and the sentinel answer.

Schemas are kept flat and small: they are sent with every call (prompt tokens) and compiled to a
grammar for the embedded model's constrained decoding. Whatever passes these schemas still goes
through `apply_patch`, which is where the real validation lives.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

# Bounded strings and lists keep every answer finite: a small model under constrained decoding
# otherwise happily repeats an item until it runs out of tokens.
# Sized with the agents' token budgets (PosConfig): an answer near its bounds still fits at a
# few characters per token, so constrained decoding closes its JSON instead of being cut off.
Name = Annotated[str, Field(max_length=40)]
Text = Annotated[str, Field(max_length=80)]
Thought = Annotated[str, Field(max_length=60)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]
Source = Literal["observed", "inferred"]
Evidence = Annotated[list[int], Field(max_length=2)]


# Core fields are required; provenance fields are optional so that a model may stop early.
class UpsertEntity(BaseModel):
    op: Literal["upsert_entity"]
    name: Name
    type: Name | None = None


class UpsertState(BaseModel):
    op: Literal["upsert_state"]
    entity: Name
    attribute: Name
    value: Name
    confidence: Confidence | None = None
    source: Source | None = None
    evidence: Evidence | None = None
    quote: Text | None = None


class GapChoice(BaseModel):
    op: Literal["resolve_gap", "set_active_gap"]
    id: Name


class RemoveState(BaseModel):
    """By id, or by entity and attribute."""

    op: Literal["remove_state"]
    id: Name | None = None
    entity: Name | None = None
    attribute: Name | None = None


class RemoveRelation(BaseModel):
    """By id, or by its ends and type."""

    op: Literal["remove_relation"]
    id: Name | None = None
    src: Name | None = None
    type: Name | None = None
    dst: Name | None = None


class UpsertRelation(BaseModel):
    op: Literal["upsert_relation"]
    src: Name
    type: Name
    dst: Name
    confidence: Confidence | None = None
    source: Source | None = None
    evidence: Evidence | None = None


class AddGap(BaseModel):
    op: Literal["add_gap"]
    kind: Literal["epistemic", "achievement"]
    text: Text
    refs: Annotated[list[Name], Field(max_length=3)] | None = None
    activate: bool | None = None


PatchOp = (
    UpsertEntity | UpsertState | RemoveState | UpsertRelation | RemoveRelation | AddGap | GapChoice
)


class BeliefPatch(BaseModel):
    """The belief model's answer: a patch to the current belief (few ops per step)."""

    ops: Annotated[list[PatchOp], Field(max_length=6)] = Field(default_factory=list)


class AuditIssue(BaseModel):
    """One problem the sentinel found in the changed part of the belief."""

    records: Annotated[list[Name], Field(max_length=4)]
    kind: Literal["internal", "external"]
    problem: Text
    evidence_step: int | None = None
    quote: Text | None = None
    fix: Text | None = None


class AuditReport(BaseModel):
    """The sentinel's local audit of one transition; `progress` only for execution tasks."""

    issues: Annotated[list[AuditIssue], Field(max_length=3)]
    progress: Literal[0, 1] = 0
    reason: Text | None = None


class ProgressJudgment(BaseModel):
    """Execution progress alone (the no_consistency ablation, which has no audit)."""

    progress: Literal[0, 1]
    reason: Text | None = None


class GlobalAudit(BaseModel):
    """The periodic audit of the whole belief against a compact trajectory."""

    issues: Annotated[list[AuditIssue], Field(max_length=4)]


class PolicyAnswer(BaseModel):
    """The task agent's decision when actions are free text."""

    thought: Thought
    action: Text


ENUM_ACTION_LIMIT = 200  # longer admissible lists are not compiled into the decoding grammar


def policy_schema_for(admissible: Sequence[str] | None) -> type[BaseModel]:
    """The policy schema for this step: an action enum when the list is given and not huge."""
    if admissible and len(admissible) <= ENUM_ACTION_LIMIT:
        return policy_schema(tuple(admissible))
    return PolicyAnswer


@lru_cache(maxsize=64)
def policy_schema(actions: tuple[str, ...] | None) -> type[BaseModel]:
    """With a list of admissible actions, the action is an enum of exactly those strings, so
    constrained decoding cannot produce anything else."""
    if not actions:
        return PolicyAnswer
    choice: Any = Literal[actions]
    return create_model(
        "PolicyChoice",
        thought=(Thought, ...),
        action=(choice, ...),
    )


Scalar = str | int | float | bool


@lru_cache(maxsize=16)
def tool_schema(names: tuple[str, ...]) -> type[BaseModel]:
    """A tool call for diagnosis environments: the tool is an enum of the offered names."""
    choice: Any = Literal[names]
    return create_model(
        "ToolChoice",
        thought=(Thought, ...),
        tool=(choice, ...),
        args=(Annotated[dict[str, Scalar], Field(max_length=4)], ...),
    )


def decision_schema(
    admissible: Sequence[str] | None, tools: Sequence[dict[str, Any]] | None
) -> type[BaseModel]:
    """What the policy answers this step: a tool call, an admissible action, or free text."""
    if tools:
        return tool_schema(tuple(str(t.get("name", "")) for t in tools))
    return policy_schema_for(admissible)


def action_text(answer: BaseModel | None) -> str | None:
    """The action string the environment receives for a policy answer."""
    if answer is None:
        return None
    tool = getattr(answer, "tool", None)
    if tool is not None:
        return json.dumps({"tool": tool, "args": getattr(answer, "args", {})}, ensure_ascii=False)
    action = getattr(answer, "action", None)
    return action if isinstance(action, str) else None
