"""The belief state: data model, patches, record keys, projection and prompt rendering."""

from pos_agent.belief.active_gap import (
    ActiveGapChoice,
    retain_active_gap,
    select_active_gap,
    with_first_gap,
)
from pos_agent.belief.draft import PatchOutcome, RejectedOp
from pos_agent.belief.keys import Projection, focus_keys, project, world_keys
from pos_agent.belief.model import (
    SOURCES,
    Belief,
    Entity,
    Gap,
    GapKind,
    Relation,
    SourceKind,
    State,
    normalize_text,
)
from pos_agent.belief.ops import PATCH_OPS, PatchOpName
from pos_agent.belief.patch import apply_patch, apply_patch_detailed
from pos_agent.belief.quality import unreadable, unreadable_ids, unusable
from pos_agent.belief.render import render_belief
from pos_agent.kinds import GAP_KINDS

__all__ = [
    "GAP_KINDS",
    "PATCH_OPS",
    "SOURCES",
    "ActiveGapChoice",
    "Belief",
    "Entity",
    "Gap",
    "GapKind",
    "PatchOpName",
    "PatchOutcome",
    "Projection",
    "RejectedOp",
    "Relation",
    "SourceKind",
    "State",
    "apply_patch",
    "apply_patch_detailed",
    "focus_keys",
    "normalize_text",
    "project",
    "render_belief",
    "retain_active_gap",
    "select_active_gap",
    "unreadable",
    "unreadable_ids",
    "unusable",
    "with_first_gap",
    "world_keys",
]
