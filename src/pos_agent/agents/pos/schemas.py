"""The belief model's answer schemas, as the PoS agent uses them: they live in the core, in
`pos_agent.updater.schemas` (public API for your own agent); this module re-exports them."""

from pos_agent.updater.schemas import (
    AddGap,
    BeliefPatch,
    BeliefRevision,
    GapChoice,
    PatchOp,
    RemoveRelation,
    RemoveState,
    UpsertEntity,
    UpsertRelation,
    UpsertState,
    patch_schema,
    revision_schema,
)

__all__ = [
    "AddGap",
    "BeliefPatch",
    "BeliefRevision",
    "GapChoice",
    "PatchOp",
    "RemoveRelation",
    "RemoveState",
    "UpsertEntity",
    "UpsertRelation",
    "UpsertState",
    "patch_schema",
    "revision_schema",
]
