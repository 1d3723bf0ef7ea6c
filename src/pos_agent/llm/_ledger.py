"""Token and latency accounting per role, per step and per episode.

Cached prompt tokens are counted per call: the server's own count when it sends one
(`Usage.cached_tokens`), else an estimate under the ledger's provider rule (`cost/cache.py`,
OpenAI's by default) from the prefix the prompt shares with an earlier prompt of the episode,
on every request as the server got it (`Completion.sent`: the schema instruction, the repair
turns, each with the server's prompt token count; the answers, for the llamacpp rules), kept
apart as `estimated_cached_tokens` so that a report can always tell the two apart.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from pos_agent.cost.cache import PrefixCache, cache_rule, prompt_breakpoints, prompt_text
from pos_agent.llm._types import ROLES, Completion, Message, ModelFailure, request_breakpoints

DEFAULT_CACHE_RULE = "openai"


@dataclass(frozen=True)
class CacheCount:
    """The cached prompt tokens of one call, as recorded."""

    cached_tokens: int = 0
    write_tokens: int = 0
    source: str = ""
    """"server" (the server's count), "estimated:<rule>", or "" (neither: no prompt given)."""


@dataclass
class CallTotals:
    """Sums over model calls. Failed calls count too: their tokens were spent."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached_calls: int = 0
    failures: int = 0
    cached_prompt_tokens: int = 0
    """Prompt tokens the servers said they read from their prompt cache."""
    cache_write_tokens: int = 0
    """Prompt tokens the servers said they wrote to it."""
    cache_reported_calls: int = 0
    """Calls whose server sent cache counts."""
    estimated_cached_tokens: int = 0
    """The other calls: cached prompt tokens estimated under the ledger's rule."""
    estimated_write_tokens: int = 0

    def add(self, other: CallTotals) -> None:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    @classmethod
    def of(cls, outcome: Completion | ModelFailure, cache: CacheCount | None = None) -> CallTotals:
        usage = outcome.usage
        cache = cache or CacheCount()
        server = cache.source == "server"
        estimated = cache.source.startswith("estimated")
        return cls(
            calls=1,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            latency_s=outcome.latency_s,
            cached_calls=int(outcome.cached),
            failures=int(isinstance(outcome, ModelFailure)),
            cached_prompt_tokens=cache.cached_tokens if server else 0,
            cache_write_tokens=cache.write_tokens if server else 0,
            cache_reported_calls=int(server),
            estimated_cached_tokens=cache.cached_tokens if estimated else 0,
            estimated_write_tokens=cache.write_tokens if estimated else 0,
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

    def __init__(
        self, cache_rule_name: str = DEFAULT_CACHE_RULE, *, breakpoints: bool = False
    ) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, CallTotals] = {role: CallTotals() for role in ROLES}
        self._by_step: dict[int, dict[str, CallTotals]] = {}
        self.cache_rule = cache_rule(cache_rule_name)
        """The provider rule of the estimate for calls whose server reports no cache counts."""
        self._prefixes = PrefixCache(self.cache_rule)
        self.breakpoints = breakpoints
        """The prompts' cache breakpoints are sent (`ModelOptions.cache_breakpoints`), so the
        estimate counts them; off, a breakpoint rule (anthropic) caches nothing, as such a
        server would."""

    def record(
        self,
        role: str,
        outcome: Completion | ModelFailure,
        step: int | None = None,
        prompt: Sequence[Message] | None = None,
    ) -> CacheCount:
        """Count one `complete` call (its answer or its ModelFailure) for `role`. With the
        `prompt` it was given, its cached prompt tokens are estimated when the server sent no
        count (a replayed answer cost nothing and caches nothing): on the requests the server
        got (`outcome.sent`), else on `prompt`. Returns what was recorded as cached."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
        with self._lock:
            cache = self._cache_count(outcome, prompt)
            totals = CallTotals.of(outcome, cache)
            self._by_role[role].add(totals)
            if step is not None:
                self._by_step.setdefault(step, {}).setdefault(role, CallTotals()).add(totals)
        return cache

    def _cache_count(
        self, outcome: Completion | ModelFailure, prompt: Sequence[Message] | None
    ) -> CacheCount:
        usage = outcome.usage
        if usage.cache_reported:
            return CacheCount(usage.cached_tokens, usage.cache_write_tokens, "server")
        if prompt is None or outcome.cached:
            return CacheCount()
        # Every request as the server got it, in order, with its own prompt token count; a
        # model that does not say is taken to have sent `prompt` as it is.
        requests: list[tuple[Sequence[Message], int, str | None]]
        if outcome.sent:
            requests = [(r.messages, r.prompt_tokens, r.answer) for r in outcome.sent]
        elif usage.prompt_tokens > 0:
            requests = [(tuple(prompt), usage.prompt_tokens, None)]
        else:
            return CacheCount()
        cached = written = 0
        for messages, prompt_tokens, answer in requests:
            contents = [(m.role, m.content) for m in messages]
            marks = (
                prompt_breakpoints(contents, request_breakpoints(messages))
                if self.breakpoints
                else []
            )
            estimate = self._prefixes.estimate(
                prompt_text(contents), prompt_tokens, breakpoints=marks, answer=answer
            )
            cached += estimate.cached_tokens
            written += estimate.write_tokens
        return CacheCount(cached, written, f"estimated:{self.cache_rule.name}")

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
        """JSON-ready: {"by_role": ..., "total": ..., "by_step": {"<step>": {role: ...}},
        "cache_rule": the rule of the estimates}."""
        return {
            "cache_rule": self.cache_rule.name,
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
            self._prefixes = PrefixCache(self.cache_rule)
