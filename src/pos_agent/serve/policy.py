"""The proxy's policies (`observe`, `nudge`, `block`) applied to one request: the monitor's
`Verdict` on its history, the notes put back into the history it forwards (nudge), and the
refusal that replaces a forbidden repeated call in the answer (block)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pos_agent.monitor import MonitorReport, ToolCall, TrapMonitor, canonical_action
from pos_agent.serve.config import NOTE_PREFIX
from pos_agent.serve.parsers import DEFAULT_PARSERS, StepParser, parse_answer
from pos_agent.serve.sessions import Note

__all__ = ["Verdict", "blocked_calls", "refusal_text", "refuse_answer", "with_notes"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the monitor says of one request's history."""

    report: MonitorReport | None
    session: str
    notes: tuple[Note, ...] = ()
    forbidden: frozenset[str] = frozenset()
    """Canonical keys of the calls to refuse in the answer (policy `block`)."""
    failed: bool = False
    """The monitor failed: the request goes on unchanged (fail open)."""
    degraded: bool = False
    """The belief model failed on a step, which was read model-free."""
    extra_note: str | None = None
    """A note for this request only (the belief, with `show_belief`)."""

    def headers(self) -> dict[str, str]:
        report = self.report
        trapped = bool(report and report.trapped)
        headers = {
            "x-pos-session": self.session,
            "x-pos-trapped": "true" if trapped else "false",
            "x-pos-pattern": (report.pattern or "none") if report and trapped else "none",
            "x-pos-health": f"{report.health.health:.3f}" if report else "1.000",
            "x-pos-step": str(report.step) if report else "0",
            "x-pos-advice": report.advice.kind if report else "none",
            "x-pos-escalation": report.escalation if report else "none",
        }
        if self.failed:
            headers["x-pos-error"] = "monitor failed; request forwarded unchanged"
        elif self.degraded:
            headers["x-pos-error"] = "belief model failed; step read model-free"
        return headers


def with_notes(messages: list[Any], verdict: Verdict, role: str) -> list[Any]:
    """The history with the session's notes back where they were given, and this request's
    extra note at the end."""
    if not verdict.notes and not verdict.extra_note:
        return messages
    by_index: dict[int, list[str]] = {}
    for note in verdict.notes:
        by_index.setdefault(min(note.after, len(messages) - 1), []).append(note.text)
    out: list[Any] = []
    for index, message in enumerate(messages):
        out.append(message)
        for text in by_index.get(index, ()):
            out.append({"role": role, "content": text})
    if verdict.extra_note:
        out.append({"role": role, "content": verdict.extra_note})
    return out


def refusal_text(calls: Sequence[ToolCall], report: MonitorReport | None) -> str:
    names = "; ".join(canonical_action(c, str).text for c in calls)
    since = f" since step {report.trapped_since}" if report and report.trapped_since else ""
    pattern = report.pattern if report and report.pattern else "repeated"
    lines = [
        f"{NOTE_PREFIX} Blocked: {names}. This call repeats calls that have not helped "
        f"(a {pattern} loop{since}), so it was not run. Choose a different action."
    ]
    if report and report.recovery:
        lines.append(report.recovery)
    return "\n".join(lines)


def blocked_calls(
    calls: Sequence[ToolCall], forbidden: frozenset[str], monitor: TrapMonitor | None
) -> list[ToolCall]:
    normalise = monitor.normalise if monitor is not None else str.lower
    return [c for c in calls if canonical_action(c, normalise).key in forbidden]


def refuse_answer(
    body: dict[str, Any],
    verdict: Verdict,
    parsers: Sequence[StepParser],
    fmt: str | None,
    monitor: TrapMonitor | None,
) -> bool:
    """Rewrite a Chat Completions answer in place when it makes a forbidden call; True if so."""
    changed = False
    for choice in body.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        calls, parser = parse_answer(message, parsers, fmt)
        blocked = blocked_calls(calls, verdict.forbidden, monitor)
        if not blocked:
            continue
        refusal = refusal_text(blocked, verdict.report)
        if parser == "tool_calls":
            kept = [
                raw
                for raw in message.get("tool_calls") or []
                if not blocked_calls(
                    [c for c in [_raw_call(raw)] if c is not None], verdict.forbidden, monitor
                )
            ]
            message["tool_calls"] = kept or None
            if not kept:
                choice["finish_reason"] = "stop"
        message["content"] = refusal
        changed = True
    return changed


def _raw_call(raw: object) -> ToolCall | None:
    calls, _ = parse_answer({"tool_calls": [raw]}, DEFAULT_PARSERS[:1])
    return calls[0] if calls else None
