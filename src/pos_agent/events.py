"""Trace events (DESIGN §8): one pydantic model per kind, one schema for writer, viewer and report.

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
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Literal,
    Self,
    Union,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

if TYPE_CHECKING:
    from pos_agent.llm import CacheCount, Completion, ModelFailure

TRACE_VERSION = 2
"""Version 2: typed events (this module). Version 1 wrote free keyword payloads; `upgrade_v1`
reads them."""

Scope = Literal["local", "global"]


class Event(BaseModel):
    """Fields every event carries. Subclasses set `event` to a literal kind name."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    v: int = Field(default=TRACE_VERSION, description="Trace version the event was written with.")
    event: str = Field(description="The event kind.")
    step: int | None = Field(
        default=None, description="Episode step (the observation index) it belongs to."
    )
    t: float = Field(default=0.0, description="Seconds since the trace was opened.")

    kinds: ClassVar[dict[str, type[Event]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Register a concrete kind: a subclass whose `event` is a one-value Literal."""
        super().__pydantic_init_subclass__(**kwargs)
        declared = cls.model_fields["event"]
        if get_origin(declared.annotation) is not Literal:
            return  # a base that groups shared fields, not a kind of its own
        (kind,) = get_args(declared.annotation)
        if declared.default != kind:
            raise TypeError(f'{cls.__name__}: write `event: Literal["{kind}"] = "{kind}"`')
        if kind in Event.kinds and Event.kinds[kind].__qualname__ != cls.__qualname__:
            raise TypeError(f"event kind {kind!r} is defined twice")
        Event.kinds[kind] = cls


# -- the episode ---------------------------------------------------------------------------------


class EpisodeStartEvent(Event):
    """The case begins: what runs, with which models and settings."""

    event: Literal["episode_start"] = "episode_start"
    run: str = Field(description="Run name.")
    spec: dict[str, Any] = Field(default_factory=dict, description="The case spec as given.")
    models: dict[str, str] = Field(default_factory=dict, description="Model spec per role.")
    settings: dict[str, Any] = Field(
        default_factory=dict,
        description="Budgets, schema bounds, profile and clips the agent runs with.",
    )


class EpisodeEndEvent(Event):
    """The case ends (also after Ctrl-C or an error)."""

    event: Literal["episode_end"] = "episode_end"
    status: str = Field(description="success, failure, interrupted, infra_error or error.")
    success: bool = False
    error: str | None = None


class ObservationEvent(Event):
    """What the environment returned at this step."""

    event: Literal["observation"] = "observation"
    text: str = ""
    done: bool = False
    success: bool = False
    score: float = 0.0
    admissible: int = Field(default=0, description="How many admissible actions were offered.")
    invalid_action: bool = Field(default=False, description="The environment refused the action.")


class ActionEvent(Event):
    """The action sent to the environment; `step` is the step it was decided at."""

    event: Literal["action"] = "action"
    action: str
    thought: str = ""


# -- model calls ---------------------------------------------------------------------------------


CACHE_SOURCE_HELP = (
    'Where the cache counts come from: "server" (the server reported them), "estimated:<rule>" '
    "(estimated from the prefix shared with an earlier prompt of the episode under a provider "
    'rule, cost/cache.py), or "" (not counted).'
)


class ModelCallEvent(Event):
    """One answered role call: tokens, latency and the parsed output."""

    event: Literal["model_call"] = "model_call"
    role: str = Field(description="policy, belief, sentinel, provider or judge.")
    purpose: str = Field(default="", description="act, init, update, revision, audit, ...")
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    repairs: int = 0
    output: dict[str, Any] | None = Field(default=None, description="The parsed answer.")
    structured_mode: str | None = Field(
        default=None,
        description="How the answer was held to its schema: grammar (local model), json_schema, "
        "json_object_schema, json_object or prompt (servers); None without a schema.",
    )
    usage_note: str | None = Field(
        default=None,
        description="Why the token counts are not the server's own: it sent none, or numbers "
        "that cannot be right (negative, not integers, beyond what the request can produce), "
        "replaced by an estimate. None when they are as reported.",
    )
    cached_tokens: int = Field(
        default=0, description="Prompt tokens read from the provider's prompt cache."
    )
    cache_write_tokens: int = Field(
        default=0, description="Prompt tokens written to the provider's prompt cache."
    )
    cache_source: str = Field(
        default="",
        description=CACHE_SOURCE_HELP,
    )

    @classmethod
    def of(
        cls,
        answer: Completion,
        *,
        step: int | None,
        role: str,
        purpose: str,
        cache: CacheCount | None = None,
    ) -> Self:
        """The event of one answered call (with the cache counts the ledger recorded)."""
        return cls(
            cached_tokens=cache.cached_tokens if cache else 0,
            cache_write_tokens=cache.write_tokens if cache else 0,
            cache_source=cache.source if cache else "",
            step=step,
            role=role,
            purpose=purpose,
            model=answer.model,
            prompt_tokens=answer.usage.prompt_tokens,
            completion_tokens=answer.usage.completion_tokens,
            latency_s=round(answer.latency_s, 4),
            cached=answer.cached,
            repairs=answer.repairs,
            # by_alias: tool arguments are stored under the tools' own names.
            output=(
                answer.parsed.model_dump(mode="json", by_alias=True)
                if answer.parsed is not None
                else None
            ),
            structured_mode=answer.structured_mode,
            usage_note=answer.usage_note,
        )


class ModelFailureEvent(Event):
    """A role call that gave no usable answer (after retries and repairs)."""

    event: Literal["model_failure"] = "model_failure"
    role: str
    purpose: str = ""
    kind: str = Field(description="transport, timeout, schema, empty, truncated or config.")
    message: str = ""
    last_text: str = Field(default="", description="The last reply, clipped to 2,000 chars.")
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @classmethod
    def of(cls, failure: ModelFailure, *, step: int | None, role: str, purpose: str) -> Self:
        """The event of one failed call."""
        return cls(
            step=step,
            role=role,
            purpose=purpose,
            kind=failure.kind,
            message=failure.message,
            last_text=(failure.last_text or "")[:2000],
            prompt_tokens=failure.usage.prompt_tokens,
            completion_tokens=failure.usage.completion_tokens,
        )


class DegradedEvent(Event):
    """A role fell back: the policy's action was repaired or replaced, a belief was kept, or the
    harness caught an error."""

    event: Literal["degraded"] = "degraded"
    role: str
    reason: str = ""
    fallback: str | None = Field(default=None, description="What was used instead.")
    repaired_to: str | None = Field(default=None, description="The admissible action chosen.")
    traceback: str | None = None


class ContextCutEvent(Event):
    """A history-based method's policy prompt was cut to fit the model's context window
    (`--context-window`; its oldest history units first, `agents/fit.py`)."""

    event: Literal["context_cut"] = "context_cut"
    role: str = "policy"
    kept: int = Field(description="History units (turns, summaries, chunks) kept.")
    dropped: int = Field(description="Oldest history units left out.")
    context_window: int = Field(description="The window the prompt had to fit, in tokens.")


# -- the belief ----------------------------------------------------------------------------------


class BeliefInitEvent(Event):
    """The initial belief B0, in full."""

    event: Literal["belief_init"] = "belief_init"
    ops: list[Any] = Field(default_factory=list)
    rejected: list[dict[str, Any]] = Field(default_factory=list)
    belief: dict[str, Any] = Field(description="`Belief.to_dict()` of B0.")
    degraded: bool = Field(default=False, description="The belief model gave no usable patch.")


class _PatchFields(Event):
    ops: list[Any] = Field(default_factory=list, description="The ops as the model wrote them.")
    applied: list[dict[str, Any]] = Field(default_factory=list, description="Normalized ops.")
    rejected: list[dict[str, Any]] = Field(
        default_factory=list, description="Ops `apply_patch` refused, with reasons."
    )
    changed: list[str] = Field(default_factory=list, description="Ids created/changed/removed.")
    scope: Scope = "local"


class BeliefPatchEvent(_PatchFields):
    """The belief model's patch for this step, applied to B_t (a candidate, not yet committed)."""

    event: Literal["belief_patch"] = "belief_patch"


class RevisionEvent(_PatchFields):
    """A corrected patch after sentinel findings (scope global: after the global audit)."""

    event: Literal["revision"] = "revision"


class SentinelEvent(Event):
    """The sentinel's findings on a candidate: rules, supported audit issues, progress label."""

    event: Literal["sentinel"] = "sentinel"
    scope: Scope = "local"
    rules: list[dict[str, Any]] = Field(default_factory=list, description="Rule findings.")
    audit: list[dict[str, Any]] = Field(
        default_factory=list, description="Audit issues whose evidence holds."
    )
    dropped: int = Field(
        default=0,
        description="Audit issues dropped: unsupported, or on a finding answered with evidence.",
    )
    answered: int = Field(
        default=0, description="Findings the belief model answered with evidence that holds."
    )
    progress: int | None = Field(default=None, description="Execution progress label, if judged.")
    reason: str = ""


class BeliefCommitEvent(Event):
    """The candidate became B_t+1."""

    event: Literal["belief_commit"] = "belief_commit"
    scope: Scope = "local"
    revised: bool = Field(default=False, description="The committed patch is the revision.")
    audited: bool = Field(default=True, description="False in the no_consistency ablation.")


class BeliefRejectEvent(Event):
    """Findings remained after the revision: the previous belief is kept."""

    event: Literal["belief_reject"] = "belief_reject"
    scope: Scope = "local"
    findings: list[str] = Field(default_factory=list)
    reason: str = ""


class ActiveGapEvent(Event):
    """The active gap changed, or a switch the belief model asked for was refused."""

    event: Literal["active_gap"] = "active_gap"
    previous: str | None = None
    active: str | None = None
    reason: str = Field(default="", description="Why: resolved, chosen, pinned, kept, ...")
    requested: str | None = Field(
        default=None, description="The gap the belief model asked for, when it was refused."
    )


# -- progress, health, recovery -------------------------------------------------------------------


class ProgressEvent(Event):
    """The progress label u_t+1 of the transition."""

    event: Literal["progress"] = "progress"
    label: int
    accepted: bool = Field(description="The candidate belief was committed.")
    d: float | None = Field(default=None, description="Eq. 4 distance (diagnosis tasks).")
    gap: str | None = Field(default=None, description="The gap active before the step (Δ_t).")


class HealthEvent(Event):
    """The health of the window (Eq. 5) and, when trapped, the diagnosis (Eq. 6)."""

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
    pattern: str | None = None
    blocked: str | None = None


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


# -- context methods (the paper's baselines) -----------------------------------------------------
# Emitted before the decision they shape, with that decision's step.


class AconContextEvent(Event):
    """ACON: what the policy prompt holds besides the task (summary and verbatim turns)."""

    event: Literal["acon_context"] = "acon_context"
    summary_tokens: int = Field(default=0, description="Tokens of the history summary (0: none).")
    turns: list[int] = Field(default_factory=list, description="Steps shown verbatim.")
    pending_tokens: int = Field(description="Summary + turns older than the last 3, in tokens.")
    threshold: int = Field(description="Compression threshold in tokens.")


class CompressionEvent(Event):
    """ACON: one compressor call folded steps into the summary, which it replaces."""

    event: Literal["compression"] = "compression"
    first_folded: int
    last_folded: int
    input_tokens: int = Field(description="What crossed the threshold: summary + aged turns.")
    threshold: int
    summary: str | None = Field(description="The new summary; None: the call failed, kept all.")


class PaceContextEvent(Event):
    """PACE: the granularity of every chunk (one per past step) at this step."""

    event: Literal["pace_context"] = "pace_context"
    pressure: float
    thresholds: list[float] = Field(description="(alpha, beta, gamma) after pressure.")
    scorer: str = Field(description="tfidf, embedding:SPEC, or tfidf after an embedding failure.")
    chunks: list[dict[str, Any]] = Field(
        default_factory=list, description="{id, level, score, weight} per chunk, in order."
    )
    summarized: list[dict[str, Any]] = Field(
        default_factory=list, description="{id, detailed, brief} of chunks summarized now."
    )


class LookupEvent(Event):
    """A memory lookup inside a decision (PACE glimpse, HiAgent retrieve): no action spent."""

    event: Literal["lookup"] = "lookup"
    method: str
    request: str
    ok: bool
    note: str = ""


class HiAgentContextEvent(Event):
    """HiAgent: completed subgoals (folded into summaries) and the active one."""

    event: Literal["hiagent_context"] = "hiagent_context"
    completed: list[dict[str, Any]] = Field(
        default_factory=list, description="{number, text, summary} per completed subgoal."
    )
    active: str | None = Field(default=None, description="The active subgoal, if any.")
    active_number: int | None = None
    active_turns: int = Field(default=0, description="Steps shown in full under it.")


class SubgoalEvent(Event):
    """HiAgent: the policy named a new subgoal; the previous one was folded into a summary."""

    event: Literal["subgoal"] = "subgoal"
    number: int
    text: str
    folded: dict[str, Any] | None = Field(
        default=None, description="{number, text, summary, failed} of the subgoal it closed."
    )


class RoundPlanEvent(Event):
    """LongHorizon-Harness: the manager's answer for one round."""

    event: Literal["round_plan"] = "round_plan"
    round: int
    route: str = Field(description="work, done, blocked or invalid.")
    state: str = ""
    contract: str = ""
    subtask: str = ""
    criteria: str = ""
    boundaries: str = ""
    related: list[int] = Field(default_factory=list, description="Audit rounds cited.")
    refused_done: bool = Field(default=False, description="`done` without an accepting audit.")
    feedback: str | None = None
    actions_left: int = 0


class RoundAuditEvent(Event):
    """LongHorizon-Harness: the auditor's verdict on one round's subtask."""

    event: Literal["round_audit"] = "round_audit"
    round: int
    status: str
    integrity: str
    contract_audit: str
    header_valid: bool
    repaired: bool = Field(default=False, description="A header-repair call was made.")
    downgraded: str | None = None
    blocking: list[str] = Field(default_factory=list)
    executor_actions: int = 0
    auditor_queries: int = 0
    executor_report: str = ""
    report: str = ""


# -- reading -------------------------------------------------------------------------------------

EVENT_KINDS: tuple[str, ...] = tuple(Event.kinds)
"""Every kind the built-in models define (kinds registered later are in `Event.kinds`)."""


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


if __name__ == "__main__":  # python -m pos_agent.events > docs/trace-events.schema.json
    print(json.dumps(events_json_schema(), indent=2, ensure_ascii=False))
