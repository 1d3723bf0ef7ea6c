"""Trace events (docs/trace.md): one pydantic model per kind, one schema for writer, viewer and report.

Every line of `events.jsonl` is one event: the common fields `v` (trace version), `event` (the
kind, the discriminator), `step` and `t` (seconds since the trace opened), then the fields of its
kind. Adding a kind is one class:

    class TrialEvent(Event):
        \"\"\"What it records.\"\"\"

        event: Literal["trial"] = "trial"
        answer: str

Subclasses register themselves by their `event` literal, so `EVENT_KINDS`, `parse_event`, the
discriminated union `TraceEvent` and the JSON schema in `docs/trace-events.schema.json` all
follow. Reading is tolerant: unknown fields are ignored and an unknown kind or an unreadable line
is skipped (and counted), never fatal. Version-1 traces are upgraded as they are read
(`upgrade_v1`).

The kinds live by what they record: `episode.py` (the episode, actions, observations, model
calls), `belief.py` (patches, the sentinel, commits), `trapping.py` (progress, health,
recovery), `context.py` (the context methods); `base.py` holds `Event`, `reading.py` the
parsing and the schema. Import them from here.
"""

# The kinds register in the order their modules are imported, which is the order of EVENT_KINDS
# and of the schema's union (docs/trace-events.schema.json): keep these imports in this order.
from pos_agent.events.base import TRACE_VERSION, Event, Scope

# isort: split
from pos_agent.events.episode import (
    CACHE_SOURCE_HELP,
    ActionEvent,
    ContextCutEvent,
    DegradedEvent,
    EpisodeEndEvent,
    EpisodeStartEvent,
    ModelCallEvent,
    ModelFailureEvent,
    ObservationEvent,
)

# isort: split
from pos_agent.events.belief import (
    ActiveGapEvent,
    BeliefCommitEvent,
    BeliefInitEvent,
    BeliefPatchEvent,
    BeliefRejectEvent,
    RevisionEvent,
    SentinelEvent,
)

# isort: split
from pos_agent.events.trapping import (
    HealthEvent,
    ProgressEvent,
    RecoveryEvent,
    RecoveryReleaseEvent,
)

# isort: split
from pos_agent.events.context import (
    AconContextEvent,
    CompressionEvent,
    HiAgentContextEvent,
    LookupEvent,
    PaceContextEvent,
    RoundAuditEvent,
    RoundPlanEvent,
    SubgoalEvent,
)

# isort: split
from pos_agent.events.reading import (
    TraceLines,
    V1Upgrader,
    event_types,
    events_json_schema,
    parse_event,
    parse_lines,
    trace_event_adapter,
    upgrade_v1,
)

EVENT_KINDS: tuple[str, ...] = tuple(Event.kinds)
"""Every kind the built-in models define (kinds registered later are in `Event.kinds`)."""

__all__ = [
    "CACHE_SOURCE_HELP",
    "EVENT_KINDS",
    "TRACE_VERSION",
    "AconContextEvent",
    "ActionEvent",
    "ActiveGapEvent",
    "BeliefCommitEvent",
    "BeliefInitEvent",
    "BeliefPatchEvent",
    "BeliefRejectEvent",
    "CompressionEvent",
    "ContextCutEvent",
    "DegradedEvent",
    "EpisodeEndEvent",
    "EpisodeStartEvent",
    "Event",
    "HealthEvent",
    "HiAgentContextEvent",
    "LookupEvent",
    "ModelCallEvent",
    "ModelFailureEvent",
    "ObservationEvent",
    "PaceContextEvent",
    "ProgressEvent",
    "RecoveryEvent",
    "RecoveryReleaseEvent",
    "RevisionEvent",
    "RoundAuditEvent",
    "RoundPlanEvent",
    "Scope",
    "SentinelEvent",
    "SubgoalEvent",
    "TraceLines",
    "V1Upgrader",
    "event_types",
    "events_json_schema",
    "parse_event",
    "parse_lines",
    "trace_event_adapter",
    "upgrade_v1",
]
