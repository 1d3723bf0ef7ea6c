"""The health event is built from the health report: the same fields under the same types, so
the trace says exactly what the window's assessment said, and the two cannot drift apart."""

from __future__ import annotations

import json
from dataclasses import fields, make_dataclass
from typing import Any, get_type_hints

from pos_agent.events import HealthEvent, parse_lines
from pos_agent.events.trapping import _drift
from pos_agent.health import HealthReport

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


def _variant(name: str, *, add: str = "", drop: str = "", retype: str = "") -> type[Any]:
    """HealthReport with one field added, dropped or weakened to `str | None`."""
    hints = get_type_hints(HealthReport)
    spec: list[Any] = [
        (f.name, str | None if f.name == retype else hints[f.name])
        for f in fields(HealthReport)
        if f.name != drop
    ]
    return make_dataclass(name, [*spec, (add, float)] if add else spec)


def test_a_report_that_grows_loses_or_retypes_a_field_is_caught() -> None:
    assert [d.split(":")[0] for d in _drift(HealthEvent, _variant("Grown", add="margin"))] == [
        "margin"
    ]
    assert [d.split(":")[0] for d in _drift(HealthEvent, _variant("Less", drop="lag"))] == ["lag"]
    assert [d.split(":")[0] for d in _drift(HealthEvent, _variant("Weak", retype="pattern"))] == [
        "pattern"
    ]


def test_a_pattern_outside_the_diagnosis_vocabulary_is_an_invalid_line() -> None:
    line = {"v": 2, "event": "health", "step": 8, "t": 0, "pattern": "spiral", "trapped": True}
    assert list(parse_lines([json.dumps(line)])) == []
    line["pattern"] = "static"
    (read,) = parse_lines([json.dumps(line)])
    assert isinstance(read, HealthEvent) and read.pattern == "static"
