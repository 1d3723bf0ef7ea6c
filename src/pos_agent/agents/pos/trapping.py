"""The trapping side of the PoS loop: the active gap kept until it is resolved, belief health
over the window (Eq. 5, every past world projected onto the current gap), and the recovery
constraint composed while trapped and released once health is back (Eq. 6-7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pos_agent.agents.base import RoleCaller
from pos_agent.agents.pos.config import PosConfig, VariantParts
from pos_agent.agents.pos.state import EpisodeState, Validated
from pos_agent.belief import Belief, Gap, focus_keys, retain_active_gap
from pos_agent.events import ActiveGapEvent, HealthEvent, RecoveryEvent, RecoveryReleaseEvent
from pos_agent.health import HealthConfig, HealthReport, WindowStep, assess_window
from pos_agent.recovery.constraint import (
    RecoveryConstraint,
    compose_recovery,
    generic_recovery,
    should_release,
)


class TrappingSteps:
    """The active gap, health and recovery of `PosAgent`."""

    call: RoleCaller
    config: PosConfig
    parts: VariantParts

    def keep_active_gap(
        self,
        before: Gap | None,
        belief: Belief,
        constraint: RecoveryConstraint | None,
        *,
        prefer: Literal["epistemic", "achievement"],
    ) -> Belief:
        """The active gap is retained until resolved (`retain_active_gap`); under a recovery
        constraint the constraint's gap is held the same way."""
        pinned = constraint.active_gap_id if constraint else None
        held = pinned or (before.id if before else None)
        choice = retain_active_gap(belief, held, prefer=prefer, pinned=pinned is not None)
        if choice.changed:
            self.call.emit(
                ActiveGapEvent(
                    step=belief.step,
                    previous=choice.previous,
                    active=choice.belief.active_gap_id,
                    reason=choice.reason,
                    requested=choice.requested,
                )
            )
        return choice.belief

    def assess(
        self, window: Sequence[Validated], belief: Belief, cfg: HealthConfig
    ) -> HealthReport:
        """Health of the window, every past world projected onto the *current* active gap."""
        gap = belief.active_gap
        steps = [
            WindowStep(
                world=v.world,
                focus=focus_keys(v.belief, gap),
                epistemic=v.belief.open_gap_ids("epistemic"),
                achievement=v.belief.open_gap_ids("achievement"),
                progress=v.progress,
            )
            for v in window
        ]
        report = assess_window(steps, cfg)
        self.call.emit(
            HealthEvent.of(
                report, step=belief.step, active_gap=gap.id if gap else None, theta_h=cfg.theta_h
            )
        )
        return report

    def recover(self, state: EpisodeState, report: HealthReport) -> RecoveryConstraint | None:
        """Compose (or refresh) the constraint while trapped; release it once H > theta_H."""
        latest, constraint, episode = state.window[-1], state.constraint, state.episode
        belief = latest.belief
        if report.trapped:
            episode.trapped_steps += 1
            episode.patterns[report.pattern or "none"] += 1
            if self.parts.generic_recovery:
                new = generic_recovery(report, belief)
            else:
                new = compose_recovery(
                    report,
                    state.transitions,
                    belief,
                    current_state=latest.world,
                    eps_w=state.health.eps_w,
                    max_recent=self.config.max_recent,
                )
            if constraint is None:
                episode.recoveries += 1
            self.call.emit(
                RecoveryEvent(step=belief.step, refreshed=constraint is not None, **new.to_dict())
            )
            return new
        if constraint is not None and should_release(report, state.health):
            self.call.emit(RecoveryReleaseEvent(step=belief.step, health=report.health))
            return None
        return constraint
