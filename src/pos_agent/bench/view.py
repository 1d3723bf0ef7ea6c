"""`pos view`: one trace as one self-contained HTML page (no network, no CDN).

    find_trace(path) -> case folder          where events.jsonl is (I/O)
    build_view(events, result) -> dict       steps, belief at each step with its diff (pure)
    render_html(view) -> str                 the template with the view embedded as JSON (pure)
    write_view(path, out) -> Path            all of the above (I/O)

The page's script builds every element with `textContent` and draws its charts as inline SVG, so
observation text (which may hold `<`, `&` or quotes) is never parsed as markup. The JSON itself is
embedded with `<`, `>` and `&` escaped so it cannot close its script tag.

The trace holds the initial belief in full and later only patches, so the belief at each step is
rebuilt here by replaying the committed patches through the same `apply_patch` the agent used
(deterministic, so the replay equals what the agent held); the result's `final_belief` checks it.
Events arrive typed (`pos_agent.events`), version-1 traces upgraded on reading.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from pos_agent.belief import Belief, apply_patch_detailed, unreadable_ids, unusable
from pos_agent.events import (
    TRACE_VERSION,
    AconContextEvent,
    ActionEvent,
    ActiveGapEvent,
    BeliefCommitEvent,
    BeliefInitEvent,
    BeliefPatchEvent,
    BeliefRejectEvent,
    CompressionEvent,
    DegradedEvent,
    EpisodeEndEvent,
    EpisodeStartEvent,
    Event,
    HealthEvent,
    HiAgentContextEvent,
    LookupEvent,
    ModelCallEvent,
    ModelFailureEvent,
    ObservationEvent,
    PaceContextEvent,
    ProgressEvent,
    RecoveryEvent,
    RecoveryReleaseEvent,
    RevisionEvent,
    RoundAuditEvent,
    RoundPlanEvent,
    SentinelEvent,
    SubgoalEvent,
    TraceLines,
)
from pos_agent.trace import CaseResult, read_result, read_trace

TEMPLATE = "view_template.html"
_RECORD_TABLES = ("entities", "states", "relations", "gaps")
_COMMON = frozenset({"v", "event", "step", "t"})
# What the baselines build before a decision: shown with the step the decision leads to.
_CONTEXT_EVENTS = (
    AconContextEvent,
    CompressionEvent,
    PaceContextEvent,
    LookupEvent,
    HiAgentContextEvent,
    SubgoalEvent,
    RoundPlanEvent,
    RoundAuditEvent,
)
# Roles whose calls belong to a decision (the policy's, and the baselines' internal roles).
_DECISION_ROLES = frozenset(
    {"policy", "compressor", "summarizer", "embedder", "manager", "executor", "auditor"}
)


class TraceNotFoundError(Exception):
    """No trace where the user pointed; the message says where to look."""


def find_trace(path: Path) -> Path:
    """The case folder for `path`: a case folder, its events.jsonl, or a run with one case."""
    if path.is_file() and path.name in ("events.jsonl", "result.json"):
        return path.parent
    if not path.is_dir():
        raise TraceNotFoundError(f"{path} does not exist; pass a case folder runs/<run>/<case>")
    if (path / "events.jsonl").is_file():
        return path
    cases = sorted(p.parent for p in path.glob("*/events.jsonl"))
    if len(cases) == 1:
        return cases[0]
    if cases:
        shown = "\n  ".join(str(c) for c in cases[:10])
        more = f"\n  ... and {len(cases) - 10} more" if len(cases) > 10 else ""
        raise TraceNotFoundError(
            f"{path} holds {len(cases)} traces; pass one of them:\n  {shown}{more}"
        )
    raise TraceNotFoundError(
        f"no events.jsonl in {path}; pass a case folder such as runs/<run>/<case>"
    )


# -- the view model ------------------------------------------------------------------------------


@dataclass
class _StepView:
    """Everything that happened between observation t-1 and the belief at t."""

    step: int
    action: str | None = None
    thought: str | None = None
    observation: dict[str, Any] | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    patches: list[dict[str, Any]] = field(default_factory=list)
    sentinel: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    progress: dict[str, Any] | None = None
    health: dict[str, Any] | None = None
    recovery: dict[str, Any] | None = None
    release: dict[str, Any] | None = None
    active_gap: dict[str, Any] | None = None
    degraded: list[dict[str, Any]] = field(default_factory=list)
    context: list[dict[str, Any]] = field(default_factory=list)  # what a baseline built
    other: list[dict[str, Any]] = field(default_factory=list)
    belief: int | None = None  # index into the view's `beliefs`
    previous_belief: int | None = None
    diff: dict[str, list[str]] = field(default_factory=dict)
    recovery_active: bool = False
    snapshot: Belief | None = None  # the committed belief after this step's last event


class _BeliefReplay:
    """Rebuilds the committed belief by replaying patches exactly as the agent applied them."""

    def __init__(self) -> None:
        self.belief: Belief | None = None
        self.candidate: tuple[Belief, list[Any]] | None = None  # the base and the ops
        self.problems: list[str] = []

    def init(self, data: dict[str, Any]) -> None:
        try:
            self.belief = Belief.from_dict(data)
        except ValueError as exc:
            self.problems.append(f"belief_init holds no readable belief ({exc})")

    def propose(self, step: int, ops: list[Any]) -> None:
        """A patch or revision: applied to the committed belief stamped with its step."""
        if self.belief is None:
            return
        base = self.belief.at_step(step) if step >= self.belief.step else self.belief
        self.candidate = (base, ops)

    def commit(self, audited: bool = True) -> None:
        """The proposed patch became the belief; unaudited (no_consistency) patches were
        applied with only their schema checked."""
        if self.candidate is not None:
            base, ops = self.candidate
            self.belief = apply_patch_detailed(base, ops, checked=audited).belief
        self.candidate = None

    def reject(self, step: int) -> None:
        self.candidate = None
        if self.belief is not None and step > self.belief.step:
            self.belief = self.belief.at_step(step)  # the agent keeps B_t, stamped with t+1

    def set_active_gap(self, gap_id: str | None) -> None:
        if self.belief is not None:
            self.belief = replace(self.belief, active_gap_id=gap_id)


class _Timeline:
    """The steps of a trace as the page shows them, built event by event, with the belief
    replayed alongside."""

    def __init__(self) -> None:
        self.steps: dict[int, _StepView] = {}
        self.replay = _BeliefReplay()
        self.start: EpisodeStartEvent | None = None
        self.end: EpisodeEndEvent | None = None
        self.tokens: dict[str, dict[str, float]] = {}
        self.current = 0
        self.recovery_on = False
        self.seen_belief = False

    def at(self, step: int) -> _StepView:
        if step not in self.steps:
            self.steps[step] = _StepView(step)
        return self.steps[step]

    def add(self, event: Event) -> None:
        if event.step is not None:
            self.current = event.step
        # A decision made at step t is shown with the observation it led to (step t+1).
        decision = isinstance(event, (ActionEvent, *_CONTEXT_EVENTS)) or (
            isinstance(event, ModelCallEvent | ModelFailureEvent | DegradedEvent)
            and event.role in _DECISION_ROLES
        )
        view = self.at(self.current + 1 if decision else self.current)
        self._place(event, view)
        view.recovery_active = view.recovery_active or self.recovery_on
        if self.replay.belief is not None:
            view.snapshot = self.replay.belief

    def _place(self, event: Event, view: _StepView) -> None:
        """Put one event where the page shows it."""
        replay, current = self.replay, self.current
        match event:
            case EpisodeStartEvent():
                self.start = event
            case EpisodeEndEvent():
                self.end = event
            case ObservationEvent():
                view.observation = _payload(event)
            case ActionEvent():
                view.action = event.action
                view.thought = event.thought or None
            case ModelCallEvent() | ModelFailureEvent():
                call = _call(event)
                view.calls.append(call)
                totals = self.tokens.setdefault(
                    event.role,
                    {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0},
                )
                totals["calls"] += 1
                for key in ("prompt_tokens", "completion_tokens", "latency_s"):
                    totals[key] += call[key]
            case BeliefInitEvent():
                self.seen_belief = True
                replay.init(event.belief)
                view.patches.append({"kind": "init", **_payload(event, "belief", "degraded")})
            case BeliefPatchEvent() | RevisionEvent():
                self.seen_belief = True
                replay.propose(current, event.ops)
                view.patches.append({"kind": event.event, **_payload(event)})
            case SentinelEvent():
                view.sentinel.append(_payload(event))
            case BeliefCommitEvent():
                replay.commit(event.audited)
                view.verdicts.append({"kind": "commit", **_payload(event)})
            case BeliefRejectEvent():
                replay.reject(current)
                view.verdicts.append({"kind": "reject", **_payload(event)})
            case ProgressEvent():
                view.progress = _payload(event)
            case ActiveGapEvent():
                replay.set_active_gap(event.active)
                view.active_gap = _payload(event)
            case HealthEvent():
                view.health = _payload(event)
            case RecoveryEvent():
                view.recovery = _payload(event)
                self.recovery_on = True
            case RecoveryReleaseEvent():
                view.release = _payload(event)
                self.recovery_on = False
            case DegradedEvent():
                view.degraded.append(_payload(event))
            case _ if isinstance(event, _CONTEXT_EVENTS):
                view.context.append({"kind": event.event, **_payload(event)})
            case _:
                view.other.append({"event": event.event, **_payload(event)})


def build_view(
    events: Iterable[Event], result: CaseResult | None, lines: TraceLines | None = None
) -> dict[str, Any]:
    """The page's data: header, per-step timeline with the belief after each step, totals.

    `lines` (from `read_trace`) adds what reading skipped and which versions it saw."""
    timeline = _Timeline()
    for event in events:
        timeline.add(event)
    beliefs, ordered = _link_beliefs(timeline.steps)
    check = _check_final(timeline.replay, result, timeline.seen_belief)
    check["warnings"] += _reading_warnings(lines)
    final = timeline.replay.belief
    if final is not None and (why := unusable(final)) is not None:
        check["warnings"].append(
            f"The belief model produced no usable belief: {why}. Very small models (the "
            "embedded 135M one) often write such text; a larger model writes real beliefs."
        )
    return {
        "meta": _meta(result, timeline.start, timeline.end),
        "goal": _goal(beliefs, result),
        "tokens": _tokens(result, timeline.tokens),
        "has_belief": timeline.seen_belief,
        "steps": [_step_dict(s) for s in ordered],
        "beliefs": beliefs,
        "belief_notes": [_belief_note(b) for b in beliefs],
        "check": check,
        "viewer_version": TRACE_VERSION,
    }


def _payload(event: Event, *exclude: str) -> dict[str, Any]:
    """An event's own fields as JSON for the page (the common ones left out)."""
    return event.model_dump(mode="json", exclude={*_COMMON, *exclude})


def _reading_warnings(lines: TraceLines | None) -> list[str]:
    if lines is None:
        return []
    warnings = []
    newer = sorted(v for v in lines.versions if v > TRACE_VERSION)
    if newer:
        warnings.append(
            f"trace version {newer} is newer than this viewer's ({TRACE_VERSION}); "
            "fields and kinds it does not know are not shown"
        )
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(lines.skipped.items()))
    if skipped:
        warnings.append(f"lines skipped while reading the trace: {skipped}")
    return warnings


def _link_beliefs(steps: dict[int, _StepView]) -> tuple[list[dict[str, Any]], list[_StepView]]:
    """Belief snapshots, deduplicated, with each step pointing at its own and the previous one."""
    beliefs: list[dict[str, Any]] = []
    last_obj: Belief | None = None
    last_index: int | None = None
    ordered = [steps[k] for k in sorted(steps)]
    for view in ordered:
        obj = view.snapshot or last_obj
        if obj is None:
            continue
        if obj is not last_obj:
            as_dict = obj.to_dict()
            if last_index is None or as_dict != beliefs[last_index]:
                beliefs.append(as_dict)
            index = len(beliefs) - 1
        else:
            index = last_index if last_index is not None else len(beliefs) - 1
        view.previous_belief = last_index
        view.belief = index
        view.diff = _diff(beliefs[last_index] if last_index is not None else None, beliefs[index])
        last_obj, last_index = obj, index
    return beliefs, ordered


def _diff(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, list[str]]:
    """Ids of records added, changed and removed between two serialized beliefs."""
    old = _records(before) if before is not None else {}
    new = _records(after)
    added = [i for i in new if i not in old] if before is not None else []
    changed = [i for i in new if i in old and new[i] != old[i]]
    removed = [i for i in old if i not in new]
    return {"added": added, "changed": changed, "removed": removed}


def _records(belief: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table in _RECORD_TABLES:
        for record in belief.get(table, []):
            out[str(record.get("id"))] = record
    return out


def _check_final(
    replay: _BeliefReplay, result: CaseResult | None, seen_belief: bool
) -> dict[str, Any]:
    """Compare the replayed belief with result.json's final belief."""
    check: dict[str, Any] = {"final_matches": None, "warnings": list(replay.problems)}
    if result is None or result.final_belief is None or replay.belief is None:
        return check
    rebuilt = replay.belief.to_dict()
    final = result.final_belief
    # The step stamp differs when the episode ended on a rejected patch; compare the contents.
    same = {k: v for k, v in rebuilt.items() if k != "step"} == {
        k: v for k, v in final.items() if k != "step"
    }
    check["final_matches"] = same
    if not same and seen_belief:
        check["warnings"].append(
            "the belief rebuilt from the trace differs from result.json's final belief; "
            "the per-step beliefs shown may be off (tell the maintainers: a trace event is missing)"
        )
    return check


def _meta(
    result: CaseResult | None, start: EpisodeStartEvent | None, end: EpisodeEndEvent | None
) -> dict[str, Any]:
    spec = start.spec if start is not None else {}
    if result is not None:
        meta = result.model_dump(
            mode="json", exclude={"final_belief", "tokens", "extra", "patterns", "settings"}
        )
        meta["patterns"] = dict(result.patterns)
        meta["finished"] = True
    else:
        meta = {
            "run": start.run if start else None,
            "case": None,
            "env": spec.get("env"),
            "task": spec.get("task"),
            "agent": spec.get("agent"),
            "models": start.models if start else {},
            "status": end.status if end else "unfinished",
            "success": bool(end and end.success),
            "max_steps": spec.get("max_steps"),
            "error": (end.error if end else None)
            or "no result.json: the case is still running, or was killed before it finished",
            "finished": False,
        }
    meta["recovery_mode"] = spec.get("recovery")
    return meta


def _belief_note(belief: dict[str, Any]) -> dict[str, Any]:
    """What the page says about a belief's text: the records whose name or text is unreadable,
    and why the belief holds nothing usable (None when it does)."""
    try:
        rebuilt = Belief.from_dict(belief)
    except (ValueError, KeyError, TypeError):
        return {"unreadable": [], "unusable": None}
    return {"unreadable": unreadable_ids(rebuilt), "unusable": unusable(rebuilt)}


def _goal(beliefs: list[dict[str, Any]], result: CaseResult | None) -> str | None:
    if beliefs:
        return str(beliefs[0].get("goal"))
    if result is not None and result.final_belief:
        return str(result.final_belief.get("goal"))
    return None


def _tokens(
    result: CaseResult | None, from_events: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    if result is not None and result.tokens:
        return {role: used.model_dump() for role, used in result.tokens.items()}
    return from_events


def _call(event: ModelCallEvent | ModelFailureEvent) -> dict[str, Any]:
    call: dict[str, Any] = {
        "role": event.role,
        "purpose": event.purpose,
        "failed": False,
        "prompt_tokens": event.prompt_tokens,
        "completion_tokens": event.completion_tokens,
        "latency_s": 0.0,
        "cached": False,
        "repairs": 0,
        "message": None,
        "failure_kind": None,
    }
    if isinstance(event, ModelFailureEvent):
        call.update(failed=True, message=event.message or None, failure_kind=event.kind)
    else:
        call.update(latency_s=event.latency_s, cached=event.cached, repairs=event.repairs)
    return call


def _step_dict(view: _StepView) -> dict[str, Any]:
    return {k: v for k, v in vars(view).items() if k != "snapshot"}


# -- HTML ----------------------------------------------------------------------------------------


def embed_json(data: Any) -> str:
    """JSON that is safe inside `<script type="application/json">` (cannot close the tag)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render_html(view: dict[str, Any]) -> str:
    """The self-contained page for one view."""
    template = resources.files("pos_agent.bench").joinpath(TEMPLATE).read_text(encoding="utf-8")
    meta = view.get("meta", {})
    title = f"PoS trace · {meta.get('case') or meta.get('task') or 'episode'} · {meta.get('agent') or ''}"
    values = {"__TITLE__": html.escape(title), "__DATA__": embed_json(view)}
    # One pass, so a placeholder spelled inside the data is never substituted again.
    return re.sub("__TITLE__|__DATA__", lambda m: values[m.group(0)], template)


def write_view(path: Path, out: Path | None = None) -> Path:
    """Render the trace at `path` to `out` (default: `<case>/trace.html`); returns the file."""
    case_dir = find_trace(path)
    events, lines = read_trace(case_dir / "events.jsonl")
    view = build_view(events, read_result(case_dir), lines)
    target = out if out is not None else case_dir / "trace.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(view), encoding="utf-8")
    return target
