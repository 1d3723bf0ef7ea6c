"""Reading traces: the union of every registered kind and its JSON schema, tolerant parsing of
`events.jsonl` lines (unknown kinds and unreadable lines skipped and counted) and the upgrade of
version-1 records."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Union

from pydantic import Field, TypeAdapter, ValidationError

from pos_agent.events.base import TRACE_VERSION, Event


def event_types() -> tuple[type[Event], ...]:
    """Every registered event model, built-in and added."""
    return tuple(Event.kinds.values())


def trace_event_adapter() -> TypeAdapter[Any]:
    """A TypeAdapter of the discriminated union of every registered kind."""
    # Built at run time from the registry, so typed as Any for the type checker.
    union: Any = Union.__getitem__(event_types())
    annotated: Any = Annotated.__class_getitem__((union, Field(discriminator="event")))  # type: ignore[attr-defined]
    return TypeAdapter(annotated)


def events_json_schema() -> dict[str, Any]:
    """The JSON schema of one trace line (the union of every kind)."""
    schema = trace_event_adapter().json_schema()
    schema["title"] = "PoS trace event"
    schema["description"] = (
        f"One line of events.jsonl, trace version {TRACE_VERSION}. The `event` field names the "
        "kind; readers skip kinds they do not know."
    )
    return schema


def parse_event(record: Mapping[str, Any]) -> Event | None:
    """The typed event of one decoded line; None for an unknown kind or invalid fields."""
    kind = record.get("event")
    model = Event.kinds.get(kind) if isinstance(kind, str) else None
    if model is None:
        return None
    try:
        return model.model_validate(record)
    except ValidationError:
        return None


@dataclass
class TraceLines:
    """What reading a trace found besides its events: versions seen and lines skipped."""

    versions: set[int] = field(default_factory=set)
    skipped: dict[str, int] = field(default_factory=dict)
    """Lines left out, by reason: "unreadable" (not JSON, a torn last line), "invalid <kind>",
    "unknown <kind>"."""
    upgraded: int = 0
    """Version-1 lines read through `upgrade_v1`."""

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def parse_lines(lines: Iterable[str], found: TraceLines | None = None) -> Iterator[Event]:
    """Typed events of `events.jsonl` lines, version-1 lines upgraded; bad lines counted."""
    found = found if found is not None else TraceLines()
    upgrade = V1Upgrader()
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            found.skip("unreadable")
            continue
        if not isinstance(record, dict):
            found.skip("unreadable")
            continue
        version = record.get("v")
        if isinstance(version, int):
            found.versions.add(version)
        if version == 1:
            record = upgrade(record)
            found.upgraded += 1
        kind = str(record.get("event"))
        event = parse_event(record)
        if event is None:
            found.skip(f"{'invalid' if kind in Event.kinds else 'unknown'} {kind}")
            continue
        yield event


class V1Upgrader:
    """Turns version-1 records into version-2 ones, line by line (it keeps a little state).

    Version 1 wrote free keyword payloads. Most of them read as version 2 as they are (the
    version-2 models give absent fields their defaults); what needs knowing is named here:
    - a global audit's revision carried no scope: it is the `revision` that follows a `sentinel`
      with scope global at the same step;
    - the raw baseline's history cut was a `degraded` event ("history truncated", `kept`); it
      did not say how many turns were dropped, so it stays a `degraded` event.
    """

    def __init__(self) -> None:
        self._global_step: int | None = None

    def __call__(self, record: dict[str, Any]) -> dict[str, Any]:
        out = dict(record)
        kind = out.get("event")
        step = out.get("step")
        if kind == "sentinel" and out.get("scope") == "global":
            self._global_step = step if isinstance(step, int) else None
        elif kind == "revision" and "scope" not in out:
            out["scope"] = "global" if step == self._global_step else "local"
        elif kind in ("belief_commit", "belief_reject") and out.get("scope") == "global":
            self._global_step = None
        if kind == "model_failure" and out.get("last_text") is None:
            out["last_text"] = ""
        out["v"] = TRACE_VERSION
        return out


def upgrade_v1(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Version-1 records of one trace as version-2 records (for tools that want the dicts)."""
    upgrade = V1Upgrader()
    return [upgrade(dict(r)) if r.get("v") == 1 else dict(r) for r in records]
