"""The proxy's policies (`observe`, `nudge`, `block`) applied to one request: the monitor's
`Verdict` on its history, the notes put back into the history it forwards (nudge), and the
`Judge` that refuses calls in the answer (block): from the alarm's block level a forbidden
repeated call, from its stop level every call (the run ends)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pos_agent.adapters.code import FINAL_ANSWER, code_answer
from pos_agent.monitor import MonitorReport, ToolCall, TrapMonitor, canonical_action
from pos_agent.serve.config import NOTE_PREFIX
from pos_agent.serve.parsers import DEFAULT_PARSERS, StepParser, parse_answer
from pos_agent.serve.sessions import Note

__all__ = [
    "Judge",
    "Refusal",
    "Verdict",
    "blocked_calls",
    "final_answer_call",
    "refusal_text",
    "refuse_answer",
    "stop_text",
    "with_notes",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the monitor says of one request's history."""

    report: MonitorReport | None
    session: str
    notes: tuple[Note, ...] = ()
    forbidden: frozenset[str] = frozenset()
    """Canonical keys of the calls to refuse in the answer (policy `block`, from the alarm's
    block level)."""
    stop: bool = False
    """Policy `block` at the alarm's stop level: every call of the answer is refused, and the
    answer tells the agent to stop."""
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


def stop_text(report: MonitorReport | None) -> str:
    """The answer that ends a run at the alarm's stop level."""
    pattern = report.pattern if report and report.pattern else "repeated"
    since = f" since step {report.trapped_since}" if report and report.trapped_since else ""
    lines = [
        f"{NOTE_PREFIX} Stop now. The agent is still in a {pattern} loop{since} after being "
        "told and refused, so this run ends here without running more tools."
    ]
    if report and report.recovery:
        lines.append(report.recovery)
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Calls of an answer that the policy refuses, and what the agent reads instead."""

    calls: tuple[ToolCall, ...]
    text: str
    final_answer: bool = False
    """End the run with the framework's own final answer (smolagents: `final_answer(text)`)."""


class Judge:
    """Which calls of one answer the policy refuses (`block`: the forbidden ones from the block
    level, all of them at the stop level); every refusal it gives is kept in `refused`, for the
    monitor to count as a step, as the adapters do."""

    def __init__(self, verdict: Verdict, monitor: TrapMonitor | None, fmt: str | None = None):
        self.verdict = verdict
        self.monitor = monitor
        self.fmt = fmt
        self.refused: list[Refusal] = []

    @property
    def active(self) -> bool:
        """Whether any call can be refused (else answers pass untouched)."""
        return self.verdict.stop or bool(self.verdict.forbidden)

    def __call__(self, calls: Sequence[ToolCall]) -> Refusal | None:
        if not calls or not self.active:
            return None
        if self.verdict.stop:
            refusal = Refusal(
                tuple(calls), stop_text(self.verdict.report), final_answer=self.fmt == "smolagents"
            )
        else:
            blocked = blocked_calls(calls, self.verdict.forbidden, self.monitor)
            if not blocked:
                return None
            refusal = Refusal(tuple(blocked), refusal_text(blocked, self.verdict.report))
        self.refused.append(refusal)
        return refusal

    def refuses(self, call: ToolCall) -> bool:
        """Whether the latest refusal covers `call` (by canonical key)."""
        if not self.refused:
            return False
        normalise = self.monitor.normalise if self.monitor is not None else str.lower
        key = canonical_action(call, normalise).key
        return any(canonical_action(c, normalise).key == key for c in self.refused[-1].calls)


def blocked_calls(
    calls: Sequence[ToolCall], forbidden: frozenset[str], monitor: TrapMonitor | None
) -> list[ToolCall]:
    normalise = monitor.normalise if monitor is not None else str.lower
    return [c for c in calls if canonical_action(c, normalise).key in forbidden]


def refuse_answer(
    body: dict[str, Any], judge: Judge, parsers: Sequence[StepParser], fmt: str | None
) -> bool:
    """Rewrite a Chat Completions answer in place when the judge refuses calls in it; True if
    so. The refused calls go, and the content becomes the refusal; at the stop level of a
    smolagents run, the answer becomes its `final_answer` with the stop text."""
    changed = False
    for choice in body.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        calls, parser = parse_answer(message, parsers, fmt)
        refusal = judge(calls)
        if refusal is None:
            continue
        changed = True
        if refusal.final_answer:
            _final_answer(choice, message, refusal.text, native=parser == "tool_calls")
            continue
        if parser == "tool_calls":
            kept = [
                raw
                for raw in message.get("tool_calls") or []
                if (call := _raw_call(raw)) is None or not judge.refuses(call)
            ]
            message["tool_calls"] = kept or None
            if not kept:
                choice["finish_reason"] = "stop"
        message["content"] = refusal.text
    return changed


def final_answer_call(text: str) -> dict[str, Any]:
    """smolagents' `final_answer` tool call (Chat Completions shape) answering `text`."""
    arguments = json.dumps({"answer": text}, ensure_ascii=False)
    return {
        "id": "call_pos_stop",
        "type": "function",
        "function": {"name": FINAL_ANSWER, "arguments": arguments},
    }


def _final_answer(choice: dict[str, Any], message: dict[str, Any], text: str, native: bool) -> None:
    """End a smolagents run: a `ToolCallingAgent` gets a `final_answer` call, a `CodeAgent`
    code that calls `final_answer`."""
    if native:
        message["tool_calls"] = [final_answer_call(text)]
        message["content"] = None
        choice["finish_reason"] = "tool_calls"
        return
    original = message.get("content") if isinstance(message.get("content"), str) else ""
    thought = text.splitlines()[0]
    message["content"] = code_answer(original or "", f"{FINAL_ANSWER}({text!r})", thought)
    choice["finish_reason"] = "stop"


def _raw_call(raw: object) -> ToolCall | None:
    calls, _ = parse_answer({"tool_calls": [raw]}, DEFAULT_PARSERS[:1])
    return calls[0] if calls else None
