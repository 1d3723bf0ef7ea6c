"""The belief updater's answer schema: a patch of the ops `belief.PATCH_OPS` names.

The standard classes carry no length bounds (a real model's budget bounds it); `patch_schema`
builds the bounded variant for a role's `SchemaBounds`, cached per bounds. Whatever passes the
schema still goes through `apply_patch`, where the real validation lives. The op literals below
are tied to `PATCH_OPS` by a test (tests/test_belief.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field

from pos_agent.kinds import GapKind
from pos_agent.roles.limits import SchemaBounds
from pos_agent.roles.schemas import bounded_list, bounded_str, variant_of
from pos_agent.sentinel.schemas import Answer, answers_field

Confidence = Annotated[float, Field(ge=0.0, le=1.0)]
Source = Literal["observed", "inferred"]


# Core fields are required; provenance fields are optional so that a model may stop early.
class UpsertEntity(BaseModel):
    op: Literal["upsert_entity"]
    name: str
    type: str | None = None


class UpsertState(BaseModel):
    op: Literal["upsert_state"]
    entity: str
    attribute: str
    value: str
    confidence: Confidence | None = None
    source: Source | None = None
    evidence: list[int] | None = None
    quote: str | None = None


class RemoveState(BaseModel):
    """By id, or by entity and attribute."""

    op: Literal["remove_state"]
    id: str | None = None
    entity: str | None = None
    attribute: str | None = None


class UpsertRelation(BaseModel):
    op: Literal["upsert_relation"]
    src: str
    type: str
    dst: str
    confidence: Confidence | None = None
    source: Source | None = None
    evidence: list[int] | None = None


class RemoveRelation(BaseModel):
    """By id, or by its ends and type."""

    op: Literal["remove_relation"]
    id: str | None = None
    src: str | None = None
    type: str | None = None
    dst: str | None = None


class AddGap(BaseModel):
    op: Literal["add_gap"]
    kind: GapKind
    text: str
    refs: list[str] | None = None
    activate: bool | None = None


class GapChoice(BaseModel):
    op: Literal["resolve_gap", "set_active_gap"]
    id: str


PatchOp = (
    UpsertEntity | UpsertState | RemoveState | UpsertRelation | RemoveRelation | AddGap | GapChoice
)


class BeliefPatch(BaseModel):
    """The belief model's answer: a patch to the current belief."""

    ops: list[PatchOp] = Field(default_factory=list)


class BeliefRevision(BeliefPatch):
    """The revision: the corrected patch, and the findings answered with evidence instead."""

    answers: list[Answer] = Field(default_factory=list)


@lru_cache(maxsize=32)
def patch_schema(bounds: SchemaBounds, *, initial: bool = False) -> type[BeliefPatch]:
    """The belief model's patch schema; `initial` bounds it by `init_ops`, else `patch_ops`."""
    limit = bounds.init_ops if initial else bounds.patch_ops
    schema: type[BeliefPatch] = variant_of(
        BeliefPatch, ops=(bounded_list(_op_union(bounds), limit), Field(default_factory=list))
    )
    return schema


@lru_cache(maxsize=32)
def revision_schema(bounds: SchemaBounds) -> type[BeliefRevision]:
    """The revision's schema: a patch bounded like an update, and the answers."""
    schema: type[BeliefRevision] = variant_of(
        BeliefRevision,
        ops=(bounded_list(_op_union(bounds), bounds.patch_ops), Field(default_factory=list)),
        answers=(answers_field(bounds), Field(default_factory=list)),
    )
    return schema


@lru_cache(maxsize=32)
def _op_union(bounds: SchemaBounds) -> Any:
    """One patch op, with the string and list bounds of `bounds`."""
    name, text = bounded_str(bounds.name_chars), bounded_str(bounds.text_chars)
    evidence = bounded_list(int, bounds.evidence_steps)
    ops: Any = Union[  # noqa: UP007  (built at run time)
        variant_of(UpsertEntity, name=(name, ...), type=(name | None, None)),
        variant_of(
            UpsertState,
            entity=(name, ...),
            attribute=(name, ...),
            value=(name, ...),
            evidence=(evidence | None, None),
            quote=(text | None, None),
        ),
        variant_of(
            RemoveState,
            id=(name | None, None),
            entity=(name | None, None),
            attribute=(name | None, None),
        ),
        variant_of(
            UpsertRelation,
            src=(name, ...),
            type=(name, ...),
            dst=(name, ...),
            evidence=(evidence | None, None),
        ),
        variant_of(
            RemoveRelation,
            id=(name | None, None),
            src=(name | None, None),
            type=(name | None, None),
            dst=(name | None, None),
        ),
        variant_of(
            AddGap, text=(text, ...), refs=(bounded_list(name, bounds.gap_refs) | None, None)
        ),
        variant_of(GapChoice, id=(name, ...)),
    ]
    return ops
