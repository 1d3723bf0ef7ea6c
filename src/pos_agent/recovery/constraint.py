"""Recovery constraints (Eq. 7): pattern constraint + gap constraint, and the release rule.

A constraint is built from a `HealthReport` of a trapped window, the window's transitions and
the current belief. In soft mode (the paper) it is only shown to the policy; in hard mode its
forbidden actions are also taken out of the admissible list (never emptying it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pos_agent.belief.keys import project
from pos_agent.belief.model import Belief, id_order
from pos_agent.belief.quality import unreadable
from pos_agent.health.distance import WorldKeys, world_distance
from pos_agent.health.window import GapKind, HealthConfig, HealthReport, TrapPattern
from pos_agent.transition import Transition

RecoveryMode = Literal["soft", "hard", "both"]
MAX_RECENT = 4  # paper Table 8: up to 4 recent no-progress transitions in recovery
MAX_ENTITIES = 8
GENERIC_LINE = "You seem stuck. Step back and try a different approach."
EPS_W = HealthConfig().eps_w  # paper Table 8: worlds within this d_W are the same state
RECENT_OBSERVATION_CHARS = 160  # each recent no-progress transition as shown in the constraint


@dataclass(frozen=True, slots=True)
class RecoveryConstraint:
    """What the policy is told (and, in hard mode, kept from doing) while trapped."""

    pattern: TrapPattern | None
    blocked: GapKind | None
    active_gap_id: str | None
    instructions: tuple[str, ...]
    forbidden_actions: tuple[str, ...]
    relevant_entities: tuple[str, ...]
    recent_transitions: tuple[Transition, ...]
    health: float
    entity_names: tuple[str, ...] = ()
    factorized: bool = True
    """False for the generic_recovery ablation: the prompt shows no diagnosis at all."""

    def render(self) -> str:
        """The constraint as prompt text."""
        if self.factorized:
            label = self.pattern or "no clear pattern"
            blocked = f", {self.blocked} gap blocked" if self.blocked else ""
            lines = [f"RECOVERY (belief health {self.health:.2f}; trapped: {label}{blocked})"]
        else:
            lines = [f"RECOVERY (belief health {self.health:.2f})"]
        lines += [f"- {line}" for line in self.instructions]
        if self.relevant_entities:
            named = ", ".join(
                f"{i} {n}".strip()
                for i, n in zip(self.relevant_entities, self.entity_names, strict=False)
            )
            lines.append(f"Relevant entities: {named}")
        if self.recent_transitions:
            lines.append("Recent steps without progress:")
            lines += [
                f"- step {t.step}: {t.action} -> {_clip(t.observation)}"
                for t in self.recent_transitions
            ]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "blocked": self.blocked,
            "active_gap_id": self.active_gap_id,
            "instructions": list(self.instructions),
            "forbidden_actions": list(self.forbidden_actions),
            "relevant_entities": list(self.relevant_entities),
            "recent_transitions": [t.to_dict() for t in self.recent_transitions],
            "health": self.health,
        }


def compose_recovery(
    report: HealthReport,
    transitions: Sequence[Transition],
    belief: Belief,
    *,
    current_state: WorldKeys | None = None,
    eps_w: float = EPS_W,
    max_recent: int = MAX_RECENT,
) -> RecoveryConstraint:
    """The factorized constraint for a trapped window (Eq. 7).

    `current_state` is the full world now; static recovery forbids the no-progress actions
    taken in a state within `eps_w` of it, the same test static detection uses."""
    gap = belief.active_gap
    # Text that says nothing (a tiny model's "1.1.1.1...") is never quoted back to the policy.
    if gap is None:
        gap_label = "the goal"
    elif unreadable(gap.text):
        gap_label = f"{gap.id} (the belief gives it no readable text; work towards the goal)"
    else:
        gap_label = f'{gap.id} "{gap.text}"'
    forbidden = _forbidden(report, transitions, current_state, eps_w)
    instructions: list[str] = []
    if report.pattern == "static":
        quoted = ", ".join(f'"{a}"' for a in forbidden)
        instructions.append(
            f"Your recent actions changed nothing. Do not repeat {quoted} in this unchanged state."
            if forbidden
            else "Your recent actions changed nothing. Do something that changes the state."
        )
    elif report.pattern == "cycle":
        instructions.append(
            f"You are going round a loop of period {report.lag}. "
            f'Do not take "{forbidden[0]}" again: it closes the loop.'
            if forbidden
            else f"You are going round a loop of period {report.lag}: break it."
        )
    elif report.pattern == "drift":
        instructions.append(
            f"Your actions keep changing things unrelated to the active gap {gap_label}. "
            "Tie every next action directly to that gap."
        )
    else:
        instructions.append(GENERIC_LINE)
    if report.blocked == "epistemic":
        hypotheses = "; ".join(
            g.text for g in belief.open_gaps if g.kind == "epistemic" and not unreadable(g.text)
        )
        instructions.append(
            "Your next actions must acquire evidence that discriminates between the open "
            f"hypotheses ({hypotheses})."
            if hypotheses
            else "Your next actions must acquire new, discriminating evidence."
        )
    elif report.blocked == "achievement":
        instructions.append(
            f"Your next actions must produce a goal-relevant state change for {gap_label}."
        )
    if gap is not None:
        instructions.append(f"Keep working on the active gap {gap.id} until it is resolved.")
    named = (i for i in project(belief, belief.active_gap_id).entities if i in belief.entities)
    readable = [i for i in named if not unreadable(belief.entities[i].name)]
    entities = sorted(readable, key=id_order)[:MAX_ENTITIES]
    recent = tuple(t for t in transitions if t.progress == 0)[-max_recent:]
    return RecoveryConstraint(
        pattern=report.pattern,
        blocked=report.blocked,
        active_gap_id=gap.id if gap else None,
        instructions=tuple(instructions),
        forbidden_actions=tuple(forbidden),
        relevant_entities=tuple(entities),
        recent_transitions=recent,
        health=report.health,
        entity_names=tuple(belief.entities[i].name for i in entities),
    )


def generic_recovery(report: HealthReport, belief: Belief) -> RecoveryConstraint:
    """The `generic_recovery` ablation: one "you seem stuck" line, nothing factorized (the
    trace still records the diagnosis; the prompt does not show it)."""
    return RecoveryConstraint(
        pattern=report.pattern,
        blocked=report.blocked,
        active_gap_id=belief.active_gap_id,
        instructions=(GENERIC_LINE,),
        forbidden_actions=(),
        relevant_entities=(),
        recent_transitions=(),
        health=report.health,
        factorized=False,
    )


def should_release(report: HealthReport, config: HealthConfig) -> bool:
    """Constraints are released once health recovers above theta_H."""
    return report.ready and report.health > config.theta_h


def allowed_actions(admissible: Sequence[str], constraint: RecoveryConstraint | None) -> list[str]:
    """Hard mode: the admissible actions minus the forbidden ones, never an empty list."""
    if constraint is None or not constraint.forbidden_actions:
        return list(admissible)
    banned = {_normalize_action(a) for a in constraint.forbidden_actions}
    kept = [a for a in admissible if _normalize_action(a) not in banned]
    return kept or list(admissible)


def _forbidden(
    report: HealthReport,
    transitions: Sequence[Transition],
    current_state: WorldKeys | None,
    eps_w: float,
) -> list[str]:
    if not transitions:
        return []
    if report.pattern == "static":
        # The trailing no-progress actions taken in this unchanged state: a world within eps_W
        # of the current one, as static detection judges it (without states: all of them).
        actions: list[str] = []
        for t in reversed(transitions):
            if t.progress:
                break
            if (
                current_state is not None
                and t.state_before is not None
                and world_distance(t.state_before, current_state) > eps_w + 1e-9
            ):
                continue
            if t.action not in actions:
                actions.append(t.action)
        return actions[:MAX_RECENT]
    if report.pattern == "cycle" and report.lag and len(transitions) >= report.lag:
        # With period k the loop repeats a_{t+1} = a_{t+1-k}: that action closes it.
        return [transitions[-report.lag].action]
    return []


def _normalize_action(action: str) -> str:
    return " ".join(action.lower().split())


def _clip(text: str, limit: int = RECENT_OBSERVATION_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
