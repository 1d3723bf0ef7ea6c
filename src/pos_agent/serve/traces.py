"""Per-session JSONL traces in the format `pos view` reads (`pos_agent.events`).

Each session writes `<trace_dir>/<session>/events.jsonl`: `episode_start`, then per monitor step
its `action`, `observation` and `health` (and `recovery` at an alarm's onset, `recovery_release`
when it clears, `degraded` when the monitor or the belief model failed and the proxy went on
without it), and `episode_end` when the session is dropped or the proxy stops. The file is
opened for each batch of events and closed again, so that a thousand idle sessions hold no file
handle. Every record goes through `pos_agent.redaction` (credentials of every common shape
masked), and the proxy never gives a header to a trace. A tool's output is written only with
`ServeConfig.trace_outputs` (`pos serve --trace-outputs`); otherwise its observation event
names its length (`withheld`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pos_agent.events import (
    TRACE_VERSION,
    ActionEvent,
    EpisodeEndEvent,
    EpisodeStartEvent,
    Event,
    HealthEvent,
    ObservationEvent,
    RecoveryEvent,
    RecoveryReleaseEvent,
)
from pos_agent.monitor import MonitorReport
from pos_agent.trace import record_line

__all__ = ["SessionTrace", "step_events", "withheld"]

log = logging.getLogger("pos_agent.serve")


class SessionTrace:
    """Appends one session's events to its events.jsonl."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "events.jsonl"
        self._started = time.monotonic()
        self._opened = False
        self.broken = False
        self.replaced = 0
        """Code points UTF-8 cannot encode (lone surrogates), written as U+FFFD so far."""

    def emit(self, events: Iterable[Event]) -> None:
        """Write events, one flushed JSON line each (the folder is made on the first write)."""
        lines = []
        for event in events:
            record = event.model_dump(mode="json")
            record["v"] = TRACE_VERSION
            record["t"] = round(time.monotonic() - self._started, 4)
            line, replaced = record_line(record)
            self.replaced += replaced
            lines.append(line + "\n")
        if not lines or self.broken:
            return
        try:
            if not self._opened:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._opened = True
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write("".join(lines))
        except OSError as error:
            # A trace that cannot be written never stops the monitor: said once, then off.
            self.broken = True
            log.warning("the trace %s cannot be written (%s); it is off", self.path, error)

    def start(
        self, session: str, upstream: str, settings: dict[str, Any], model: str | None = None
    ) -> None:
        models = {"policy": model} if model else {}
        if settings.get("belief_model"):
            models["belief"] = str(settings["belief_model"])
        self.emit(
            [
                EpisodeStartEvent(
                    run="serve",
                    spec={"session": session, "upstream": upstream},
                    models=models,
                    settings=settings,
                )
            ]
        )

    def end(self, reason: str) -> None:
        self.emit([EpisodeEndEvent(status="interrupted", error=f"session closed: {reason}")])


def withheld(observation: str) -> str:
    """What a trace holds of a tool output it does not keep."""
    return f"[tool output not traced: {len(observation)} characters; --trace-outputs keeps it]"


def step_events(action: str, observation: str, report: MonitorReport) -> list[Event]:
    """The events of one monitor step (`observation` as the trace is to hold it)."""
    step = report.step
    health = report.health
    events: list[Event] = [
        ActionEvent(step=step - 1, action=action),
        ObservationEvent(step=step, text=observation),
        HealthEvent(
            step=step,
            ready=health.ready,
            persistence_e=health.persistence_e,
            persistence_a=health.persistence_a,
            stagnation=health.stagnation,
            recurrence=health.recurrence,
            lag=health.lag,
            health=health.health,
            trapped=report.trapped,
            pattern=report.pattern if report.trapped else None,
            blocked=report.blocked if report.trapped else None,
        ),
    ]
    if report.onset:
        events.append(
            RecoveryEvent(
                step=step,
                pattern=report.pattern,
                blocked=report.blocked,
                instructions=[report.recovery] if report.recovery else [],
                forbidden_actions=list(report.forbidden_actions),
                health=health.health,
            )
        )
    if report.released:
        events.append(RecoveryReleaseEvent(step=step, health=health.health))
    return events
