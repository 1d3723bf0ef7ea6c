"""Which gap is active after an update: the active gap is retained until it is resolved
(paper Table 3 and Algorithm 1; DESIGN §1).

The belief model may ask for another active gap at any step (`set_active_gap`, or `add_gap`
with `activate`). While the held gap is open that request is refused. Once it is resolved, the
gap the belief model activated becomes the active one; if it named none, the earliest open gap
of the preferred kind (epistemic on diagnosis tasks, achievement on execution tasks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pos_agent.belief.model import Belief, GapKind
from pos_agent.belief.patch import select_active_gap


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
