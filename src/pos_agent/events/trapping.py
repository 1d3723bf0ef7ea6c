"""Progress, health and recovery: the progress label of each transition, the window's health
and diagnosis, and the recovery constraint applied, refreshed or released."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Literal, Self, get_type_hints

from pydantic import Field

from pos_agent.events.base import Event
from pos_agent.health import HealthReport
from pos_agent.kinds import GapKind, TrapPattern


class ProgressEvent(Event):
    """The progress label u_t+1 of the transition."""

    event: Literal["progress"] = "progress"
    label: int
    accepted: bool = Field(description="The candidate belief was committed.")
    d: float | None = Field(default=None, description="Eq. 4 distance (diagnosis tasks).")
    gap: str | None = Field(default=None, description="The gap active before the step (Δ_t).")


class HealthEvent(Event):
    """The health of the window (Eq. 5) and, when trapped, the diagnosis (Eq. 6): the fields of
    a `HealthReport`, with the active gap and theta_H the window was judged against."""

    # The report's fields under its names and types, checked when this module loads (`_drift`),
    # so the two cannot drift; `of` builds the event from a report, `report` gives it back.
    event: Literal["health"] = "health"
    active_gap: str | None = None
    theta_h: float = 0.25
    ready: bool = True
    persistence_e: float = 0.0
    persistence_a: float = 0.0
    stagnation: float = 0.0
    recurrence: float = 0.0
    lag: int | None = None
    health: float = 1.0
    trapped: bool = False
    pattern: TrapPattern | None = None
    blocked: GapKind | None = None

    @classmethod
    def of(
        cls, report: HealthReport, *, step: int | None, active_gap: str | None, theta_h: float
    ) -> Self:
        """The event of one health report."""
        return cls(step=step, active_gap=active_gap, theta_h=theta_h, **report.to_dict())

    def report(self) -> HealthReport:
        """The health report this event records."""
        return HealthReport(**{f.name: getattr(self, f.name) for f in fields(HealthReport)})


class RecoveryEvent(Event):
    """A recovery constraint (Eq. 7) applied, or refreshed while still trapped."""

    event: Literal["recovery"] = "recovery"
    refreshed: bool = False
    pattern: str | None = None
    blocked: str | None = None
    active_gap_id: str | None = None
    instructions: list[str] = Field(default_factory=list)
    forbidden_actions: list[str] = Field(default_factory=list)
    relevant_entities: list[str] = Field(default_factory=list)
    recent_transitions: list[dict[str, Any]] = Field(default_factory=list)
    health: float = 0.0


class RecoveryReleaseEvent(Event):
    """Health rose above theta_H: the constraint is released."""

    event: Literal["recovery_release"] = "recovery_release"
    health: float


# What the event adds to the report's fields.
_JUDGED_AGAINST = frozenset({"active_gap", "theta_h"})


def _drift(event: type[Event], report: type[Any]) -> list[str]:
    """How the event's own fields differ from the dataclass `report`'s, by name and type."""
    hints = get_type_hints(report)
    wanted = {f.name: hints[f.name] for f in fields(report)}
    have = {
        name: info.annotation
        for name, info in event.model_fields.items()
        if name not in Event.model_fields and name not in _JUDGED_AGAINST
    }
    return [
        f"{name}: {have.get(name, 'missing')} in {event.__name__}, "
        f"{wanted.get(name, 'missing')} in {report.__name__}"
        for name in sorted(wanted.keys() | have.keys())
        if have.get(name, "missing") != wanted.get(name, "missing")
    ]


if _differences := _drift(HealthEvent, HealthReport):
    raise TypeError("HealthEvent must restate HealthReport: " + "; ".join(_differences))
