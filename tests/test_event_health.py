"""The health event is built from the health report: the same fields under the same types, so
the trace says exactly what the window's assessment said, and the two cannot drift apart."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

from pos_agent.events import HealthEvent, parse_lines
from pos_agent.events.trapping import _drift
from pos_agent.health import HealthReport
from pos_agent.kinds import GapKind, TrapPattern

TRAPPED = HealthReport(
    ready=True,
    persistence_e=0.5,
    persistence_a=1.0,
    stagnation=0.875,
    recurrence=0.75,
    lag=2,
    health=0.125,
    trapped=True,
    pattern="cycle",
    blocked="achievement",
)


def test_the_event_of_a_report_holds_every_field_and_gives_the_report_back() -> None:
    event = HealthEvent.of(TRAPPED, step=9, active_gap="g2", theta_h=0.3)
    assert event.report() == TRAPPED
    assert (event.step, event.active_gap, event.theta_h) == (9, "g2", 0.3)
    line = event.model_dump(mode="json")
    # The trace's line stays flat: the report's fields at the top, as version-1 traces have them.
    assert {f.name: line[f.name] for f in fields(HealthReport)} == TRAPPED.to_dict()
    (read,) = parse_lines([json.dumps(line)])
    assert isinstance(read, HealthEvent) and read.report() == TRAPPED


def test_a_not_ready_report_round_trips_too() -> None:
    quiet = HealthReport(ready=False)
    assert HealthEvent.of(quiet, step=1, active_gap=None, theta_h=0.25).report() == quiet


def test_the_event_and_the_report_agree_field_by_field() -> None:
    assert _drift(HealthEvent, HealthReport) == []


def test_a_report_that_grows_loses_or_retypes_a_field_is_caught() -> None:
    @dataclass
    class Grown:
        ready: bool
        persistence_e: float = 0.0
        persistence_a: float = 0.0
        stagnation: float = 0.0
        recurrence: float = 0.0
        lag: int | None = None
        health: float = 1.0
        trapped: bool = False
        pattern: TrapPattern | None = None
        blocked: GapKind | None = None
        margin: float = 0.0

    @dataclass
    class Weaker:
        ready: bool
        persistence_e: float = 0.0
        persistence_a: float = 0.0
        stagnation: float = 0.0
        recurrence: float = 0.0
        lag: int | None = None
        health: float = 1.0
        trapped: bool = False
        pattern: str | None = None
        blocked: GapKind | None = None

    assert [d.split(":")[0] for d in _drift(HealthEvent, Grown)] == ["margin"]
    assert [d.split(":")[0] for d in _drift(HealthEvent, Weaker)] == ["pattern"]


def test_a_pattern_outside_the_diagnosis_vocabulary_is_an_invalid_line() -> None:
    line = {"v": 2, "event": "health", "step": 8, "t": 0, "pattern": "spiral", "trapped": True}
    assert list(parse_lines([json.dumps(line)])) == []
    line["pattern"] = "static"
    (read,) = parse_lines([json.dumps(line)])
    assert isinstance(read, HealthEvent) and read.pattern == "static"
