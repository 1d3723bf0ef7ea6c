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

from pos_agent.belief import Belief, apply_patch_detailed
from pos_agent.trace import TRACE_VERSION, CaseResult, read_events, read_result

TEMPLATE = "view_template.html"
# Events a decision at step t emits with step t although they lead to observation t+1.
_DECISION_EVENTS = frozenset({"action"})
_RECORD_TABLES = ("entities", "states", "relations", "gaps")


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
        self.candidate: Belief | None = None
        self.problems: list[str] = []

    def init(self, data: Any) -> None:
        try:
            self.belief = Belief.from_dict(data)
        except ValueError as exc:
            self.problems.append(f"belief_init holds no readable belief ({exc})")

    def propose(self, step: int, ops: Any) -> None:
        """A patch or revision: applied to the committed belief stamped with its step."""
        if self.belief is None:
            return
        base = self.belief.at_step(step) if step >= self.belief.step else self.belief
        self.candidate = apply_patch_detailed(base, ops if isinstance(ops, list) else []).belief

    def commit(self) -> None:
        if self.candidate is not None:
            self.belief = self.candidate
        self.candidate = None

    def reject(self, step: int) -> None:
        self.candidate = None
        if self.belief is not None and step > self.belief.step:
            self.belief = self.belief.at_step(step)  # the agent keeps B_t, stamped with t+1

    def progress(self) -> None:
        # The no_consistency ablation commits its patch without a commit event; whatever
        # candidate is still pending when the progress label arrives was committed.
        self.commit()

    def set_active_gap(self, gap_id: Any) -> None:
        if self.belief is not None:
            self.belief = replace(self.belief, active_gap_id=gap_id if gap_id else None)


def build_view(events: Iterable[dict[str, Any]], result: CaseResult | None) -> dict[str, Any]:
    """The page's data: header, per-step timeline with the belief after each step, totals."""
    steps: dict[int, _StepView] = {}
    replay = _BeliefReplay()
    start: dict[str, Any] = {}
    end: dict[str, Any] = {}
    versions: set[int] = set()
    tokens: dict[str, dict[str, float]] = {}
    current = 0
    recovery_on = False
    seen_belief = False

    def at(step: int) -> _StepView:
        if step not in steps:
            steps[step] = _StepView(step)
        return steps[step]

    for event in events:
        kind = str(event.get("event", ""))
        raw_step = event.get("step")
        if isinstance(raw_step, int) and not isinstance(raw_step, bool):
            current = raw_step
        version = event.get("v")
        if isinstance(version, int):
            versions.add(version)
        payload = {k: v for k, v in event.items() if k not in ("v", "event", "step", "t")}
        # A decision made at step t is shown with the observation it led to (step t+1).
        decision = kind in _DECISION_EVENTS or (
            kind in ("model_call", "model_failure", "degraded") and payload.get("role") == "policy"
        )
        view = at(current + 1 if decision else current)

        if kind == "episode_start":
            start = payload
        elif kind == "episode_end":
            end = payload
        elif kind == "observation":
            view.observation = payload
        elif kind == "action":
            view.action = _text(payload.get("action"))
            view.thought = _text(payload.get("thought")) or None
        elif kind in ("model_call", "model_failure"):
            call = _call(kind, payload)
            view.calls.append(call)
            role_totals = tokens.setdefault(
                call["role"],
                {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0},
            )
            role_totals["calls"] += 1
            role_totals["prompt_tokens"] += call["prompt_tokens"]
            role_totals["completion_tokens"] += call["completion_tokens"]
            role_totals["latency_s"] += call["latency_s"]
        elif kind == "belief_init":
            seen_belief = True
            replay.init(payload.get("belief"))
            view.patches.append({"kind": "init", **_patch(payload)})
        elif kind in ("belief_patch", "revision"):
            seen_belief = True
            replay.propose(current, payload.get("ops"))
            view.patches.append({"kind": kind, **_patch(payload)})
        elif kind == "sentinel":
            view.sentinel.append(payload)
        elif kind == "belief_commit":
            replay.commit()
            view.verdicts.append({"kind": "commit", **payload})
        elif kind == "belief_reject":
            replay.reject(current)
            view.verdicts.append({"kind": "reject", **payload})
        elif kind == "progress":
            replay.progress()
            view.progress = payload
        elif kind == "active_gap":
            replay.set_active_gap(payload.get("active"))
            view.active_gap = payload
        elif kind == "health":
            view.health = payload
        elif kind == "recovery":
            view.recovery = payload
            recovery_on = True
        elif kind == "recovery_release":
            view.release = payload
            recovery_on = False
        elif kind == "degraded":
            view.degraded.append(payload)
        else:
            view.other.append({"event": kind, **payload})
        view.recovery_active = view.recovery_active or recovery_on
        if replay.belief is not None:
            view.snapshot = replay.belief

    beliefs, ordered = _link_beliefs(steps)
    meta = _meta(result, start, end)
    check = _check_final(replay, result, seen_belief)
    if versions - {TRACE_VERSION}:
        check["warnings"].append(
            f"trace version {sorted(versions)} differs from this viewer's ({TRACE_VERSION}); "
            "some events may be shown as raw JSON"
        )
    return {
        "meta": meta,
        "goal": _goal(beliefs, result),
        "tokens": _tokens(result, tokens),
        "has_belief": seen_belief,
        "steps": [_step_dict(s) for s in ordered],
        "beliefs": beliefs,
        "check": check,
        "viewer_version": TRACE_VERSION,
    }


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


def _meta(result: CaseResult | None, start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    spec = start.get("spec") if isinstance(start.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if result is not None:
        meta = result.model_dump(
            mode="json", exclude={"final_belief", "tokens", "extra", "patterns"}
        )
        meta["patterns"] = dict(result.patterns)
        meta["finished"] = True
    else:
        meta = {
            "run": start.get("run"),
            "case": None,
            "env": spec.get("env"),
            "task": spec.get("task"),
            "agent": spec.get("agent"),
            "models": start.get("models") or {},
            "status": end.get("status") or "unfinished",
            "success": bool(end.get("success")),
            "max_steps": spec.get("max_steps"),
            "error": end.get("error")
            or "no result.json: the case is still running, or was killed before it finished",
            "finished": False,
        }
    meta["recovery_mode"] = spec.get("recovery")
    return meta


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


def _call(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": _text(payload.get("role")) or "?",
        "purpose": _text(payload.get("purpose")),
        "failed": kind == "model_failure",
        "prompt_tokens": _int(payload.get("prompt_tokens")),
        "completion_tokens": _int(payload.get("completion_tokens")),
        "latency_s": _float(payload.get("latency_s")),
        "cached": bool(payload.get("cached")),
        "repairs": _int(payload.get("repairs")),
        "message": _text(payload.get("message")) or None,
        "failure_kind": _text(payload.get("kind")) or None,
    }


def _patch(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "ops": payload.get("ops") if isinstance(payload.get("ops"), list) else [],
        "applied": payload.get("applied") if isinstance(payload.get("applied"), list) else None,
        "rejected": payload.get("rejected") if isinstance(payload.get("rejected"), list) else [],
        "changed": payload.get("changed") if isinstance(payload.get("changed"), list) else [],
        "scope": payload.get("scope"),
    }


def _step_dict(view: _StepView) -> dict[str, Any]:
    return {k: v for k, v in vars(view).items() if k != "snapshot"}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


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
    events = list(read_events(case_dir / "events.jsonl"))
    view = build_view(events, read_result(case_dir))
    target = out if out is not None else case_dir / "trace.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(view), encoding="utf-8")
    return target
