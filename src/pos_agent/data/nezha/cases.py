"""Which cases Nezha's fault lists give, and each case's telemetry window.

Every injection is one case, numbered per system in injection-time order across the system's
dates (`nz-ob-001`, `nz-tt-001`, ...). The window is injection - 6 min .. injection + 4 min,
with guards because Nezha injects a 3-minute fault every 4-9 minutes:

- the end is clipped to 1 s before the next injection of the date;
- the start is moved to the previous injection + 4 min (its fault and one metric minute), and
  if that leaves less than 2 min before the injection, to injection - 2 min, flagged;
- the start is clipped to the date's first metric row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pos_agent.data.nezha.upstream import (
    ENTRY_SERVICE,
    SYSTEMS,
    TITLES,
    Injection,
    MinuteFile,
    iso,
    service_of,
)

BEFORE_S = 6 * 60
AFTER_S = 4 * 60
FAULT_CLEAR_S = 4 * 60
MIN_BEFORE_S = 2 * 60
ALERT_DELAY_S = 2 * 60
NOTE_MOVED = "window start moved to previous injection + 4 min"
NOTE_OVERLAP = "pre-injection part overlaps the previous fault (gap < 6 min)"
NOTE_FIRST_ROW = "window start clipped to first metric row of the day"
NOTE_END = "window end clipped to 1 s before the next injection"


@dataclass
class CasePlan:
    """One incident: its injection, its window and what the window's guards did."""

    case_id: str
    system: str
    injection: Injection
    start: int
    end: int
    prev: Injection | None = None
    next: Injection | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def prev_gap(self) -> float | None:
        return None if self.prev is None else float(self.injection.time - self.prev.time)

    @property
    def next_gap(self) -> float | None:
        return None if self.next is None else float(self.next.time - self.injection.time)

    @property
    def entry(self) -> str:
        return ENTRY_SERVICE[self.system]

    @property
    def service(self) -> str:
        return service_of(self.injection.pod)

    def wanted(self, files: list[MinuteFile]) -> list[MinuteFile]:
        """The per-minute files that can hold rows of the window (a file named HH:MM holds
        about HH:MM - 1 min .. HH:MM + 20 s)."""
        first = self.start - self.start % 60
        last = self.end - self.end % 60 + 60
        return [item for item in files if first <= item.minute <= last]

    def task(self) -> dict[str, Any]:
        alert_time = iso(self.injection.time + ALERT_DELAY_S)
        return {
            "task_id": self.case_id,
            "system": self.system,
            "alert_title": f"Elevated latency/error rate at {self.entry}",
            "alert_time": alert_time,
            "alert_window": {"start": iso(self.start), "end": iso(self.end)},
            "alert_entity": self.entry,
            "description": (
                f"An alert reports elevated latency or errors at the entry service {self.entry} "
                f"of the {TITLES[self.system]} microservice deployment around {alert_time}; use "
                "the telemetry in this folder to identify the root-cause component and the kind "
                "of fault."
            ),
        }

    def answer(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "root_cause_entities": [self.injection.pod, self.service],
            "root_cause_types": [self.injection.kind],
            "inject_time": iso(self.injection.time),
            "system": self.system,
            "source": self.injection.source,
        }


def window(
    injection: Injection, prev: Injection | None, nxt: Injection | None, first_row: int
) -> tuple[int, int, list[str]]:
    """The telemetry window of an injection and the notes its guards leave."""
    start, end = injection.time - BEFORE_S, injection.time + AFTER_S
    notes = []
    if prev is not None and prev.time + FAULT_CLEAR_S > start:
        start = prev.time + FAULT_CLEAR_S
        notes.append(NOTE_MOVED)
        if injection.time - start < MIN_BEFORE_S:
            start = injection.time - MIN_BEFORE_S
            notes.append(NOTE_OVERLAP)
    if start < first_row:
        start = first_row
        notes.append(NOTE_FIRST_ROW)
    if nxt is not None and end >= nxt.time:
        end = nxt.time - 1
        notes.append(NOTE_END)
    return start, end, notes


def plan_cases(
    injections_by_date: dict[str, list[Injection]], systems: dict[str, str]
) -> list[CasePlan]:
    """Every case of every date, numbered per system in injection-time order; windows are set
    later (`set_window`), once the date's first metric row is known."""
    plans: list[CasePlan] = []
    for system, short in SYSTEMS.items():
        dates = sorted(date for date, name in systems.items() if name == system)
        ordered = sorted(
            (injection for date in dates for injection in injections_by_date[date]),
            key=lambda injection: injection.time,
        )
        for number, injection in enumerate(ordered, start=1):
            same_day = injections_by_date[injection.date]
            at = same_day.index(injection)
            plan = CasePlan(
                case_id=f"nz-{short}-{number:03d}",
                system=system,
                injection=injection,
                start=injection.time - BEFORE_S,
                end=injection.time + AFTER_S,
                prev=same_day[at - 1] if at > 0 else None,
                next=same_day[at + 1] if at + 1 < len(same_day) else None,
            )
            plans.append(plan)
    return plans


def set_window(plan: CasePlan, first_row: int) -> None:
    plan.start, plan.end, plan.notes = window(plan.injection, plan.prev, plan.next, first_row)
