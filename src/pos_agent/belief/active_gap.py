"""Gaps in one place: the first gap of an episode, and which gap is active after an update (the
active gap is retained until it is resolved; paper Table 3 and Algorithm 1).

An initial belief with no open gap gets the goal itself as its first achievement gap: the loop
needs a gap to work on (`with_first_gap`).

The belief model may ask for another active gap at any step (`set_active_gap`, or `add_gap`
with `activate`). While the held gap is open that request is refused. Once it is resolved, the
gap the belief model activated becomes the active one; if it named none, the earliest open gap
of the preferred kind (epistemic on diagnosis tasks, achievement on execution tasks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pos_agent.belief.model import Belief, GapKind, id_order
from pos_agent.belief.patch import apply_patch_detailed


def select_active_gap(belief: Belief, prefer: GapKind | None = None) -> str | None:
    """Keep the active gap while it is open; else the earliest open gap (of `prefer` kind first)."""
    if belief.active_gap is not None:
        return belief.active_gap_id
    candidates = sorted(
        belief.open_gaps, key=lambda g: (g.kind != prefer, g.opened_at, id_order(g.id))
    )
    return candidates[0].id if candidates else None


def with_first_gap(belief: Belief, prefer: GapKind) -> Belief:
    """The initial belief ready for the loop: the goal becomes the first (achievement) gap when
    the belief has no open gap, and an active gap is chosen (`select_active_gap`)."""
    if not belief.open_gaps:
        belief = apply_patch_detailed(
            belief,
            [{"op": "add_gap", "kind": "achievement", "text": belief.goal, "activate": True}],
        ).belief
    return replace(belief, active_gap_id=select_active_gap(belief, prefer))


@dataclass(frozen=True, slots=True)
class ActiveGapChoice:
    """The active gap after an update, and why it is that one."""

    belief: Belief
    """The updated belief with the chosen active gap."""
    previous: str | None
    """The gap that was held before the update."""
    reason: str
    """"" when nothing changed; else kept, pinned by recovery, chosen by the belief model, or
    earliest open gap."""
    requested: str | None = None
    """The gap the belief model asked for when the request was refused."""

    @property
    def changed(self) -> bool:
        return bool(self.reason)


def retain_active_gap(
    belief: Belief, held: str | None, *, prefer: GapKind, pinned: bool = False
) -> ActiveGapChoice:
    """The active gap of `belief` (just updated) given the gap `held` before the update.

    `pinned` says the held gap is fixed by a recovery constraint (the reason differs; the rule
    is the same: an open held gap stays active)."""
    requested = belief.active_gap_id
    if held is not None and held in belief.gaps and belief.gaps[held].is_open:
        if requested == held:
            return ActiveGapChoice(belief, held, "")
        reason = "pinned by recovery" if pinned else "kept: the active gap is not resolved"
        kept = replace(belief, active_gap_id=held)
        return ActiveGapChoice(kept, held, reason, requested=requested)
    if belief.active_gap is not None and requested != held:
        return ActiveGapChoice(belief, held, "chosen by the belief model")
    chosen = select_active_gap(replace(belief, active_gap_id=None), prefer)
    if chosen == held and chosen == requested:
        return ActiveGapChoice(belief, held, "")
    return ActiveGapChoice(replace(belief, active_gap_id=chosen), held, "earliest open gap")
