"""Aggregation: one `MethodStats` per method, built from results (pure, no I/O).

Scoring follows docs/reports.md ("What counts") and the one list of scored statuses in `pos_agent.trace`: success and
failure (budget exhaustion included) are scored; set-up, harness and infrastructure errors and
interrupted cases are not (they are listed as problems, and `pos bench --resume` reruns them).

The paper's ordering is the order of `agents.methods.METHODS`; unknown methods still get a
column, after the known ones. A new benchmark needs no change: every `env` gets its row, and
numbers in `result.extra["metrics"]` are averaged per method and benchmark.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pos_agent.agents.methods import METHOD_NAMES, METHODS
from pos_agent.bench.report.load import MissingCase
from pos_agent.cost import PriceTable, TokenCounts, token_counts
from pos_agent.llm import DEFAULT_CACHE_RULE, INTERNAL_ROLES, POS_ROLES
from pos_agent.trace import CaseResult, is_scored

# The paper's order (Table 1): Raw, the four baselines, PoS, then the ablations (METHODS' order).
METHOD_ORDER: tuple[str, ...] = METHOD_NAMES
# The methods PoS is compared with in Figure 1 (left): Raw and the four context baselines.
BASELINE_AGENTS: tuple[str, ...] = tuple(
    m.name for m in METHODS.values() if m.kind in ("raw", "baseline")
)
# PoS's roles, then the baselines' internal roles (Table 2 splits every method's cost by role).
ROLE_ORDER = (*POS_ROLES, *INTERNAL_ROLES)
PATTERNS = ("static", "cycle", "drift", "none")
DEFAULT_CONTEXT_FIELD = "context_length"
# These methods never run the health check, so their trapped-step count is zero by construction,
# not a measurement; the trapping table says "n/a" for them instead of a misleading 0%. Results
# that record `extra["health_checked"]` say so themselves; this list covers older ones.
TRAPPING_UNMEASURED = frozenset(m.name for m in METHODS.values() if not m.health_checked)

ContextValue = float | str


@dataclass
class Rate:
    """`count` out of `n`: a success rate, an incidence, a share."""

    count: int = 0
    n: int = 0

    def add(self, hit: bool) -> None:
        self.n += 1
        self.count += int(hit)

    @property
    def value(self) -> float | None:
        return self.count / self.n if self.n else None


@dataclass
class Mean:
    """A running mean."""

    total: float = 0.0
    n: int = 0

    def add(self, value: float) -> None:
        self.total += value
        self.n += 1

    @property
    def value(self) -> float | None:
        return self.total / self.n if self.n else None


@dataclass
class TokenStats:
    """Token totals per role over a method's scored episodes."""

    episodes: int = 0
    prompt: Counter[str] = field(default_factory=Counter)
    completion: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    by_model: dict[tuple[str, str], TokenCounts] = field(default_factory=dict)
    """(role, model spec) -> tokens, cached ones apart: what a price table bills."""

    def add(self, case: CaseResult) -> None:
        self.episodes += 1
        for role, used in case.tokens.items():
            self.prompt[role] += used.prompt_tokens
            self.completion[role] += used.completion_tokens
            self.calls[role] += used.calls
            # The baselines' internal roles call the backbone, the policy's model.
            model = case.models.get(role) or case.models.get("policy") or ""
            key = (role, model)
            self.by_model[key] = self.by_model.get(key, TokenCounts()) + token_counts(
                used.model_dump()
            )

    def mean(self, counter: Counter[str], role: str) -> float | None:
        return counter[role] / self.episodes if self.episodes else None

    @property
    def mean_total(self) -> float | None:
        total = sum(self.prompt.values()) + sum(self.completion.values())
        return total / self.episodes if self.episodes else None


@dataclass
class TrappingStats:
    """Figure 3 for one method: how often episodes get trapped, and in which pattern."""

    measured: bool = True
    incidence: Rate = field(default_factory=Rate)  # episodes with at least one trapped step
    trapped_steps: Mean = field(default_factory=Mean)
    recoveries: Mean = field(default_factory=Mean)
    patterns: Counter[str] = field(default_factory=Counter)  # trapped steps per pattern
    success_if_trapped: Rate = field(default_factory=Rate)
    success_if_not_trapped: Rate = field(default_factory=Rate)

    def add(self, case: CaseResult, success: bool) -> None:
        trapped = case.trapped_steps > 0
        self.incidence.add(trapped)
        self.trapped_steps.add(case.trapped_steps)
        self.recoveries.add(case.recoveries)
        self.patterns.update({p: n for p, n in case.patterns.items() if n > 0})
        (self.success_if_trapped if trapped else self.success_if_not_trapped).add(success)


@dataclass
class MethodStats:
    """Everything the report shows about one method (an agent, with its model when several)."""

    label: str
    agent: str
    model: str = ""  # the backbone (model_label of the cases' models)
    outcomes: Counter[str] = field(default_factory=Counter)  # every case, per status
    overflows: int = 0  # scored failures whose prompt did not fit the window (context_overflow)
    success: Rate = field(default_factory=Rate)  # over scored episodes
    steps: Mean = field(default_factory=Mean)
    score: Mean = field(default_factory=Mean)
    by_env: dict[str, Rate] = field(default_factory=lambda: defaultdict(Rate))
    by_category: dict[tuple[str, str], Rate] = field(default_factory=lambda: defaultdict(Rate))
    tokens: TokenStats = field(default_factory=TokenStats)
    trapping: TrappingStats = field(default_factory=TrappingStats)
    by_context: dict[ContextValue, Rate] = field(default_factory=lambda: defaultdict(Rate))
    metrics: dict[str, dict[str, Mean]] = field(  # env -> metric name -> mean
        default_factory=lambda: defaultdict(lambda: defaultdict(Mean))
    )
    # Unscored cases per cell, by status: what each rate's denominator left out.
    unscored_by_category: dict[tuple[str, str], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    unscored_by_context: dict[ContextValue, Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    unscored_reasons: dict[str, Counter[str]] = field(  # status -> first error lines
        default_factory=lambda: defaultdict(Counter)
    )

    def add(self, case: CaseResult, context_field: str) -> None:
        """Count one case; only scored cases reach the rates and means."""
        self.outcomes[case.status] += 1
        context = context_value(case.extra, context_field)
        if not is_scored(case.status):
            self.unscored_by_category[(case.env, case.category or "(none)")][case.status] += 1
            if context is not None:
                self.unscored_by_context[context][case.status] += 1
            self.unscored_reasons[case.status][_first_line(case.error) or "-"] += 1
            return
        self.overflows += case.failure_reason == "context_overflow"
        if self.success.n == 0:
            self.trapping.measured = health_checked(case)
        success = case.status == "success" and case.success
        self.success.add(success)
        self.steps.add(case.steps)
        self.score.add(case.score)
        self.by_env[case.env].add(success)
        self.by_category[(case.env, case.category or "(none)")].add(success)
        self.tokens.add(case)
        self.trapping.add(case, success)
        if context is not None:
            self.by_context[context].add(success)
        for name, value in numeric_metrics(case.extra).items():
            self.metrics[case.env][name].add(value)

    def env_rate(self, env: str) -> Rate:
        return self.by_env.get(env, Rate())


@dataclass(frozen=True)
class Problem:
    """A case that was not an ordinary success or failure (or has no record at all)."""

    run: str
    case: str
    method: str
    status: str
    error: str


@dataclass
class ReportData:
    """Per-method statistics, in the paper's order, and what went wrong."""

    stats: dict[str, MethodStats]
    context_field: str = DEFAULT_CONTEXT_FIELD
    problems: list[Problem] = field(default_factory=list)
    prices: PriceTable | None = None
    """`pos report --price-table`: the table the cost table bills with."""
    cache_rules: tuple[str, ...] = ()
    """The provider rules the results' cached-token estimates used (`--cache-rule`); results
    recorded before it was recorded used OpenAI's."""

    @property
    def methods(self) -> list[str]:
        return list(self.stats)

    def method(self, label: str) -> MethodStats:
        return self.stats.get(label) or MethodStats(label, label)

    @property
    def envs(self) -> list[str]:
        return sorted({env for s in self.stats.values() for env in s.by_env})

    @property
    def categories(self) -> list[tuple[str, str]]:
        return sorted({key for s in self.stats.values() for key in s.by_category})

    @property
    def all_categories(self) -> list[tuple[str, str]]:
        """Every (benchmark, category) with a case, scored or not."""
        return sorted(
            {k for s in self.stats.values() for k in (*s.by_category, *s.unscored_by_category)}
        )

    @property
    def roles(self) -> list[str]:
        return _ordered({r for s in self.stats.values() for r in s.tokens.calls}, ROLE_ORDER)

    @property
    def context_values(self) -> list[ContextValue]:
        values = {v for s in self.stats.values() for v in (*s.by_context, *s.unscored_by_context)}
        return sorted(values, key=lambda v: (isinstance(v, str), _number_or_zero(v), str(v)))

    @property
    def metric_names(self) -> list[str]:
        return sorted(
            {n for s in self.stats.values() for means in s.metrics.values() for n in means}
        )

    def statuses_seen(self) -> set[str]:
        return {status for s in self.stats.values() for status in s.outcomes}


def aggregate(
    cases: Sequence[CaseResult],
    *,
    context_field: str = DEFAULT_CONTEXT_FIELD,
    split_runs: bool = False,
    missing: Sequence[MissingCase] = (),
) -> ReportData:
    """Count and average everything the report shows, per method."""
    labels = method_labels(cases, split_runs=split_runs)
    stats: dict[str, MethodStats] = {}
    problems: list[Problem] = []
    for label, case in zip(labels, cases, strict=True):
        method = stats.setdefault(label, MethodStats(label, case.agent, model_label(case.models)))
        method.add(case, context_field)
        if not is_scored(case.status):
            problems.append(
                Problem(case.run, case.case, label, case.status, _first_line(case.error))
            )
    for lost in missing:
        problems.append(
            Problem(
                lost.run, lost.folder, lost.agent, "missing", "listed in config.json, no record"
            )
        )
    ordered = sorted(stats.values(), key=lambda m: _method_rank(m.label, m.agent))
    rules = sorted({str(case.extra.get("cache_rule", DEFAULT_CACHE_RULE)) for case in cases})
    return ReportData(
        {m.label: m for m in ordered}, context_field, problems, cache_rules=tuple(rules)
    )


def health_checked(case: CaseResult) -> bool:
    recorded = case.extra.get("health_checked")
    return recorded if isinstance(recorded, bool) else case.agent not in TRAPPING_UNMEASURED


def model_label(models: dict[str, str]) -> str:
    """`local` when every role uses one model, else `policy=a,belief=b,...`."""
    if not models:
        return ""
    names = set(models.values())
    if len(names) == 1:
        return names.pop()
    return ",".join(f"{role}={models[role]}" for role in _ordered(models, ROLE_ORDER))


def method_labels(cases: Sequence[CaseResult], *, split_runs: bool = False) -> list[str]:
    """The method label of each case: the agent, plus the model when the cases use several
    (model-free agents such as `expert` keep the bare name), plus the run when asked."""
    several_models = len({model_label(c.models) for c in cases if c.models}) > 1
    labels = []
    for case in cases:
        label = case.agent
        model = model_label(case.models)
        if several_models and model:
            label = f"{label} · {model}"
        if split_runs:
            label = f"{label} · {case.run}"
        labels.append(label)
    return labels


def context_value(extra: dict[str, Any], field_name: str) -> ContextValue | None:
    """The value of `field_name` in `extra` (dots reach into nested objects), or None."""
    value: Any = extra
    for part in field_name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def numeric_metrics(extra: dict[str, Any]) -> dict[str, float]:
    """`extra["metrics"]`: benchmark-specific per-episode numbers (FT, RCL, accuracy, ...)."""
    raw = extra.get("metrics")
    if not isinstance(raw, dict):
        return {}
    out: dict[str, float] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or (isinstance(value, int | float) and math.isfinite(value)):
            out[str(name)] = float(value)
    return out


def _method_rank(label: str, agent: str) -> tuple[int, str]:
    rank = METHOD_ORDER.index(agent) if agent in METHOD_ORDER else len(METHOD_ORDER)
    return (rank, label)


def _ordered(names: Iterable[str], preferred: Sequence[str]) -> list[str]:
    names = set(names)
    return [n for n in preferred if n in names] + sorted(names - set(preferred))


def _number_or_zero(value: ContextValue) -> float:
    return value if isinstance(value, float) else 0.0


def _first_line(text: str | None, limit: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
