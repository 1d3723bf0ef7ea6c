"""Typed trace events: one model per kind, a discriminated union, tolerant reading, the schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from pos_agent.events import (
    EVENT_KINDS,
    TRACE_VERSION,
    ActionEvent,
    Event,
    HealthEvent,
    ObservationEvent,
    TraceLines,
    events_json_schema,
    parse_lines,
    trace_event_adapter,
)
from pos_agent.trace import TraceWriter, read_events, read_trace

REPO = Path(__file__).resolve().parents[1]
SCHEMA_FILE = REPO / "docs" / "trace-events.schema.json"


def test_event_kinds_are_the_models_discriminators() -> None:
    assert set(EVENT_KINDS) == set(Event.kinds)
    assert {"action", "observation", "model_call", "belief_commit", "context_cut"} <= set(
        EVENT_KINDS
    )
    for kind, model in Event.kinds.items():
        assert model.model_fields["event"].default == kind


def test_writer_stamps_version_and_time_and_reading_gives_typed_events(tmp_path: Path) -> None:
    with TraceWriter(tmp_path) as trace:
        trace.emit(ObservationEvent(step=0, text="You are in a kitchen."))
        trace.emit(ActionEvent(step=0, action="open fridge 1", thought="find the mug"))
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(r["v"], r["event"], r["step"]) for r in lines] == [
        (TRACE_VERSION, "observation", 0),
        (TRACE_VERSION, "action", 0),
    ]
    assert all(isinstance(r["t"], float) for r in lines)
    events = list(read_events(tmp_path))
    assert isinstance(events[0], ObservationEvent) and events[0].text == "You are in a kitchen."
    assert isinstance(events[1], ActionEvent) and events[1].thought == "find the mug"


def test_writer_redacts_keys_in_typed_payloads(tmp_path: Path) -> None:
    secret = "sk-" + "a1b2c3d4e5f6g7h8"
    with TraceWriter(tmp_path) as trace:
        trace.emit(ObservationEvent(step=0, text=f"the key is {secret}"))
    assert secret not in (tmp_path / "events.jsonl").read_text()


def test_unknown_kinds_invalid_fields_and_torn_lines_are_skipped_and_counted() -> None:
    lines = [
        json.dumps({"v": 2, "event": "observation", "step": 0, "t": 0, "text": "hi"}),
        json.dumps({"v": 2, "event": "brand_new", "step": 0, "t": 0, "payload": [1]}),
        json.dumps({"v": 2, "event": "health", "step": 8, "t": 0, "health": "not a number"}),
        "[1, 2, 3]",
        '{"v": 2, "event": "action", "step": 1, "t": 0, "acti',  # a killed writer's last line
    ]
    found = TraceLines()
    events = list(parse_lines(lines, found))
    assert [e.event for e in events] == ["observation"]
    assert found.skipped == {"unknown brand_new": 1, "invalid health": 1, "unreadable": 2}
    assert found.versions == {2}


def test_unknown_fields_of_a_known_kind_are_ignored_not_fatal() -> None:
    line = json.dumps({"v": 3, "event": "action", "step": 2, "t": 0, "action": "go", "new": 1})
    (event,) = parse_lines([line])
    assert isinstance(event, ActionEvent) and event.action == "go"


@pytest.fixture
def trial_kind() -> Iterator[type[Event]]:
    class TrialEvent(Event):
        """A kind a later method adds: one class, nothing else."""

        event: Literal["trial_answer"] = "trial_answer"
        answer: str

    yield TrialEvent
    del Event.kinds["trial_answer"]


def test_adding_a_kind_is_one_class(trial_kind: type[Event], tmp_path: Path) -> None:
    assert "trial_answer" in Event.kinds
    with TraceWriter(tmp_path) as trace:
        trace.emit(trial_kind(step=3, answer="42"))  # type: ignore[call-arg]
    (event,) = read_events(tmp_path)
    assert isinstance(event, trial_kind) and event.answer == "42"  # type: ignore[attr-defined]
    names = json.dumps(trace_event_adapter().json_schema())
    assert "trial_answer" in names


def test_a_kind_without_its_literal_default_is_refused() -> None:
    with pytest.raises(TypeError, match="Literal"):

        class Broken(Event):
            event: Literal["broken"]


def test_the_union_discriminates_on_event() -> None:
    adapter = trace_event_adapter()
    parsed = adapter.validate_python({"event": "health", "step": 8, "health": 0.2, "trapped": True})
    assert isinstance(parsed, HealthEvent) and parsed.trapped


def test_docs_schema_is_up_to_date() -> None:
    """Regenerate with: .venv/bin/python -m pos_agent.events > docs/trace-events.schema.json"""
    written = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert written == events_json_schema(), "docs/trace-events.schema.json is stale"
    assert set(written["discriminator"]["mapping"]) == set(EVENT_KINDS)


def test_read_trace_reports_what_it_skipped(tmp_path: Path) -> None:
    with TraceWriter(tmp_path) as trace:
        trace.emit(ObservationEvent(step=0, text="x"))
    with (tmp_path / "events.jsonl").open("a") as handle:
        handle.write('{"v": 2, "event": "observation", "st')
    events, found = read_trace(tmp_path)
    assert len(events) == 1 and found.skipped == {"unreadable": 1}
