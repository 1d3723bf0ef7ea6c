"""Belief updates as patches: validate each operation, apply the valid ones.

`apply_patch` is pure and total: whatever JSON a model writes — wrong types, unknown ops, ids it
made up, NaN confidences, a dict where a list belongs — comes back as rejected operations with
reasons, never as an exception. Ids are assigned here; the model refers to existing records by
id, or to entities by their (unique) name, which lets one patch create an entity and describe it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pos_agent.belief.draft import Draft, PatchOutcome, Reject, RejectedOp
from pos_agent.belief.model import Belief
from pos_agent.belief.ops import HANDLERS, PATCH_OPS


def apply_patch(belief: Belief, patch: Any) -> tuple[Belief, list[RejectedOp]]:
    """Apply the valid operations of `patch` to `belief`; return the new belief and the rejects."""
    outcome = apply_patch_detailed(belief, patch)
    return outcome.belief, outcome.rejected


def apply_patch_detailed(belief: Belief, patch: Any, *, checked: bool = True) -> PatchOutcome:
    """`apply_patch` plus the normalized accepted ops and the ids they touched.

    `checked=False` (the no_consistency ablation: only schema validity) skips the structural
    consistency checks: two values for one slot in one patch (the last one stands), an unknown
    entity named by a state, relation or gap (it is created under that name), and evidence steps
    outside the episode (kept as given). What cannot be applied at all (removing or resolving a
    record that does not exist) is still reported."""
    ops, rejected = _as_op_list(patch)
    draft = Draft(belief, checked=checked)
    for index, raw in enumerate(ops):
        try:
            if not isinstance(raw, Mapping):
                raise Reject(f"an operation must be a JSON object, got {type(raw).__name__}")
            name = raw.get("op")
            handler = HANDLERS.get(name) if isinstance(name, str) else None
            if handler is None:
                raise Reject(f"unknown op {name!r}; expected one of {', '.join(PATCH_OPS)}")
            draft.applied.append(handler(draft, raw))
        except Reject as exc:
            rejected.append(RejectedOp(index, raw, str(exc)))
        except Exception as exc:  # defensive: a bug here must not kill an episode
            rejected.append(RejectedOp(index, raw, f"internal error: {exc!r}"))
    return draft.finish(rejected)


def _as_op_list(patch: Any) -> tuple[list[Any], list[RejectedOp]]:
    """Accept a list of ops, or an object wrapping one under `ops`/`patch`/`operations`."""
    if isinstance(patch, Mapping):
        for key in ("ops", "patch", "operations"):
            if isinstance(patch.get(key), list):
                return list(patch[key]), []
        if isinstance(patch.get("op"), str):
            return [patch], []
    if isinstance(patch, list | tuple):
        return list(patch), []
    return [], [RejectedOp(-1, patch, "a patch must be a list of operations")]
