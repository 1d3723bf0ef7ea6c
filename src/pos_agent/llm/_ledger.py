"""Token and latency accounting per role, per step and per episode."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields
from typing import Any

from pos_agent.llm._types import ROLES, Completion, ModelFailure


@dataclass
class CallTotals:
    """Sums over model calls. Failed calls count too: their tokens were spent."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached_calls: int = 0
    failures: int = 0

    def add(self, other: CallTotals) -> None:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    @classmethod
    def of(cls, outcome: Completion | ModelFailure) -> CallTotals:
        return cls(
            calls=1,
            prompt_tokens=outcome.usage.prompt_tokens,
            completion_tokens=outcome.usage.completion_tokens,
            latency_s=outcome.latency_s,
            cached_calls=int(outcome.cached),
            failures=int(isinstance(outcome, ModelFailure)),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["latency_s"] = round(self.latency_s, 6)
        return out


class TokenLedger:
    """Per-role totals (policy, belief, sentinel, provider, judge) and per-step breakdown.

    One ledger per episode: `reset()` between episodes, `merge()` to sum episodes into a run.
    Only numbers are stored, never prompts, so nothing secret can end up in `to_dict()`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, CallTotals] = {role: CallTotals() for role in ROLES}
        self._by_step: dict[int, dict[str, CallTotals]] = {}

    def record(
        self, role: str, outcome: Completion | ModelFailure, step: int | None = None
    ) -> None:
        """Count one `complete` call (its answer or its ModelFailure) for `role`."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
        totals = CallTotals.of(outcome)
        with self._lock:
            self._by_role[role].add(totals)
            if step is not None:
                self._by_step.setdefault(step, {}).setdefault(role, CallTotals()).add(totals)

    def by_role(self) -> dict[str, dict[str, Any]]:
        """{role: {"calls", "prompt_tokens", "completion_tokens", "latency_s", ...}} for every role."""
        with self._lock:
            return {role: totals.to_dict() for role, totals in self._by_role.items()}

    def total(self) -> dict[str, Any]:
        grand = CallTotals()
        with self._lock:
            for totals in self._by_role.values():
                grand.add(totals)
        return grand.to_dict()

    def by_step(self) -> dict[int, dict[str, dict[str, Any]]]:
        with self._lock:
            return {
                step: {role: totals.to_dict() for role, totals in roles.items()}
                for step, roles in sorted(self._by_step.items())
            }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: {"by_role": ..., "total": ..., "by_step": {"<step>": {role: ...}}}."""
        return {
            "by_role": self.by_role(),
            "total": self.total(),
            "by_step": {str(step): roles for step, roles in self.by_step().items()},
        }

    def merge(self, other: TokenLedger) -> TokenLedger:
        """Add `other`'s counts into this ledger (steps with the same number add up)."""
        if other is self:
            raise ValueError("cannot merge a ledger into itself")
        with other._lock:
            roles = {role: CallTotals(**asdict(t)) for role, t in other._by_role.items()}
            steps = {
                step: {role: CallTotals(**asdict(t)) for role, t in by_role.items()}
                for step, by_role in other._by_step.items()
            }
        with self._lock:
            for role, totals in roles.items():
                self._by_role.setdefault(role, CallTotals()).add(totals)
            for step, by_role in steps.items():
                for role, totals in by_role.items():
                    self._by_step.setdefault(step, {}).setdefault(role, CallTotals()).add(totals)
        return self

    def reset(self) -> None:
        """Start a new episode."""
        with self._lock:
            self._by_role = {role: CallTotals() for role in ROLES}
            self._by_step = {}
