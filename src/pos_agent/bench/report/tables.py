"""The report's tables in the paper's shapes, built from `ReportData` (pure).

Each table is one function from the data to a `Table` (or None when it has nothing to show);
`TABLES` lists them in reading order. Adding a table is one function and one entry. As in the
paper, Tables 1, 2 and 9 mark the best value of each benchmark (highest success) or role column
(fewest tokens) in bold, when at least two methods have one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pos_agent.agents.methods import FULL_POS
from pos_agent.bench.report.stats import (
    BASELINE_AGENTS,
    PATTERNS,
    ContextValue,
    MethodStats,
    Rate,
    ReportData,
)
from pos_agent.cost import TokenCounts
from pos_agent.llm import DEFAULT_CACHE_RULE
from pos_agent.trace import STATUSES, is_scored

Cell = str | int | float | Rate | None
# Statuses written only by older versions get a column only when a result has them.
LEGACY_STATUSES = frozenset({"error"})


@dataclass(frozen=True)
class Table:
    """One table: `name` is its CSV file stem."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    note: str = ""
    bold: frozenset[tuple[int, int]] = frozenset()
    """(row, column) of the cells shown in bold: the best value, as the paper marks it."""


def _value(cell: Cell) -> float | None:
    if isinstance(cell, Rate):
        return cell.value
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return float(cell)
    return None


def _best(cells: list[tuple[int, int, Cell]], *, lowest: bool) -> set[tuple[int, int]]:
    """The cells holding the best value among `cells` (ties all), if two or more have one."""
    valued = [(r, c, v) for r, c, cell in cells if (v := _value(cell)) is not None]
    if len(valued) < 2:
        return set()
    target = min(v for _, _, v in valued) if lowest else max(v for _, _, v in valued)
    return {(r, c) for r, c, v in valued if v == target}


def best_per_row(rows: list[list[Cell]], first: int) -> frozenset[tuple[int, int]]:
    """The highest value of each row, over columns `first` onwards (a benchmark's methods)."""
    out: set[tuple[int, int]] = set()
    for r, row in enumerate(rows):
        out |= _best([(r, c, row[c]) for c in range(first, len(row))], lowest=False)
    return frozenset(out)


def lowest_per_column(rows: list[list[Cell]], columns: range) -> frozenset[tuple[int, int]]:
    """The lowest value of each column (tokens: the cheapest method)."""
    out: set[tuple[int, int]] = set()
    for c in columns:
        out |= _best([(r, c, row[c]) for r, row in enumerate(rows)], lowest=True)
    return frozenset(out)


def outcomes_table(data: ReportData) -> Table:
    seen = data.statuses_seen()
    statuses = [s for s in STATUSES if s not in LEGACY_STATUSES or s in seen]
    rows: list[list[Cell]] = []
    for stats in data.stats.values():
        rows.append(
            [
                stats.label,
                sum(stats.outcomes.values()),
                *(stats.outcomes[s] for s in statuses),
                stats.overflows,
                stats.success,
                stats.steps.value,
                stats.score.value,
            ]
        )
    unscored = ", ".join(s for s in statuses if not is_scored(s))
    return Table(
        "outcomes",
        "Outcomes per method",
        [
            "method",
            "cases",
            *statuses,
            "context overflow",
            "success rate",
            "mean steps",
            "mean score",
        ],
        rows,
        "Success rate = successes / scored episodes (success and failure; budget exhaustion is "
        f"a failure). Not scored: {unscored}. Context overflow: failures whose "
        "prompt did not fit the model's window, scored as failures for every method alike.",
    )


# Benchmarks whose Table 1 columns include their categories (the paper's LOCA-Bench: Overall,
# then its three categories), each rate micro-averaged over the category's cases.
CATEGORIES_IN_TABLE_1 = frozenset({"loca"})


def success_table(data: ReportData) -> Table:
    envs = data.envs
    rows: list[list[Cell]] = []
    for env in envs:
        categories = [c for e, c in data.categories if e == env and c != "(none)"]
        split = env in CATEGORIES_IN_TABLE_1 and categories
        label = f"{env} overall" if split else env
        rows.append([label, *(data.method(m).env_rate(env) for m in data.methods)])
        for category in categories if split else []:
            rows.append(
                [
                    f"{env} {category}",
                    *(
                        data.method(m).by_category.get((env, category), Rate())
                        for m in data.methods
                    ),
                ]
            )
    if len(envs) > 1:
        rows.append(["all", *(data.method(m).success for m in data.methods)])
    return Table(
        "success",
        "Table 1: success rate per benchmark",
        ["benchmark", *data.methods],
        rows,
        "Cells: success rate (successes/scored episodes, micro-averaged over cases); the best "
        "per benchmark in bold. LOCA-Bench adds a row per category, as the paper's columns do.",
        best_per_row(rows, 1),
    )


def pos_vs_baseline_table(data: ReportData) -> Table | None:
    """Figure 1 (left): per benchmark and backbone, PoS against the strongest baseline."""
    rows: list[list[Cell]] = []
    for env in data.envs:
        for pos in (s for s in data.stats.values() if s.agent == FULL_POS and s.env_rate(env).n):
            baselines = [
                s
                for s in data.stats.values()
                if s.agent in BASELINE_AGENTS and s.model == pos.model and s.env_rate(env).n
            ]
            if not baselines:
                continue
            best = max(baselines, key=lambda s: _strength(s, env))
            ours, theirs = pos.env_rate(env), best.env_rate(env)
            gap = 100 * ((ours.value or 0.0) - (theirs.value or 0.0))
            rows.append([env, pos.model, pos.label, ours, best.label, theirs, round(gap, 1)])
    if not rows:
        return None
    return Table(
        "pos_vs_baseline",
        "Figure 1 (left): PoS against the strongest baseline, per benchmark and backbone",
        ["benchmark", "backbone", "pos", "pos rate", "strongest baseline", "its rate", "gap"],
        rows,
        "Strongest baseline: the highest success rate among raw, acon, pace, hiagent and "
        "lh_harness on that benchmark with the same backbone (ties: the first in the paper's "
        "order). Gap in percentage points.",
    )


def _strength(stats: MethodStats, env: str) -> tuple[float, int]:
    """Success rate first; among equals, the earlier method in the paper's order."""
    return (stats.env_rate(env).value or 0.0, -BASELINE_AGENTS.index(stats.agent))


def category_table(data: ReportData) -> Table | None:
    categories = data.categories
    if all(category == "(none)" for _, category in categories):
        return None
    rows: list[list[Cell]] = [
        [
            env,
            category,
            *(data.method(m).by_category.get((env, category), Rate()) for m in data.methods),
        ]
        for env, category in categories
    ]
    return Table(
        "success_by_category",
        "Table 9: success rate per task category",
        ["benchmark", "category", *data.methods],
        rows,
        "The best per category in bold.",
        best_per_row(rows, 2),
    )


def tokens_table(data: ReportData) -> Table:
    roles = data.roles
    columns = ["method", "episodes"]
    for role in roles:
        columns += [f"{role} prompt", f"{role} completion"]
    columns.append("total")
    rows: list[list[Cell]] = []
    for stats in data.stats.values():
        tokens = stats.tokens
        row: list[Cell] = [stats.label, tokens.episodes]
        for role in roles:
            used = tokens.calls[role] > 0
            row.append(tokens.mean(tokens.prompt, role) if used else None)
            row.append(tokens.mean(tokens.completion, role) if used else None)
        row.append(tokens.mean_total)
        rows.append(row)
    return Table(
        "tokens",
        "Table 2: tokens per role per episode (mean)",
        columns,
        rows,
        "Mean prompt and completion tokens per scored episode; '-' where the method has no such "
        "role; the fewest per column in bold.",
        lowest_per_column(rows, range(2, len(columns))),
    )


def cost_table(data: ReportData) -> Table | None:
    """Table 2 in money (`pos report --price-table`): per method and role, the mean tokens per
    episode, how many prompt tokens the cache served, the billed tokens and the cost."""
    prices = data.prices
    if prices is None:
        return None
    columns = [
        "method",
        "role",
        "model",
        "prompt",
        "cached",
        "completion",
        "billed tokens",
        f"cost ({prices.currency})",
    ]
    rows: list[list[Cell]] = []
    unpriced: set[str] = set()
    for stats in data.stats.values():
        tokens = stats.tokens
        if not tokens.episodes:
            continue
        n = tokens.episodes
        total_billed: float | None = 0.0
        total_cost: float | None = 0.0
        total = TokenCounts()
        order = {role: i for i, role in enumerate(data.roles)}
        for (role, model), counts in sorted(
            tokens.by_model.items(), key=lambda item: (order.get(item[0][0], 99), item[0])
        ):
            if not counts.prompt and not counts.completion:
                continue
            billed = prices.billed(model, counts)
            cost = prices.cost(model, counts)
            if billed is None or cost is None:
                unpriced.add(model or "(unknown)")
            total = total + counts
            total_billed = None if billed is None or total_billed is None else total_billed + billed
            total_cost = None if cost is None or total_cost is None else total_cost + cost
            rows.append(_cost_row(stats.label, role, model, counts, billed, cost, n))
        rows.append(_cost_row(stats.label, "total", "", total, total_billed, total_cost, n))
    note = (
        "Mean per scored episode. cached: prompt tokens the provider's cache served (the "
        "server's count where it reported one, else the run's estimate under the "
        f"{' and '.join(data.cache_rules or (DEFAULT_CACHE_RULE,))} rule (--cache-rule), "
        "marked estimated in the trace; share of the prompt in brackets). Billed tokens put cached, written and output tokens "
        "at their price relative to the input price; cost from the price table."
    )
    if unpriced:
        note += " No price for: " + ", ".join(sorted(unpriced)) + " ('-')."
    return Table(
        "cost",
        "Table 2 (cost): tokens, billed tokens and cost per method and role",
        columns,
        rows,
        note,
    )


def _cost_row(
    label: str,
    role: str,
    model: str,
    counts: TokenCounts,
    billed: float | None,
    cost: float | None,
    episodes: int,
) -> list[Cell]:
    share = f" ({100 * counts.cached / counts.prompt:.0f}%)" if counts.prompt else ""
    return [
        label,
        role,
        model,
        counts.prompt / episodes,
        f"{counts.cached / episodes:.0f}{share}",
        counts.completion / episodes,
        None if billed is None else billed / episodes,
        None if cost is None else round(cost / episodes, 6),
    ]


def trapping_table(data: ReportData) -> Table:
    columns = [
        "method",
        "episodes",
        "trapped episodes",
        "trapped steps/episode",
        "recoveries/episode",
        *(f"{p} share" for p in PATTERNS),
        "success if trapped",
        "success if not trapped",
    ]
    rows: list[list[Cell]] = []
    for stats in data.stats.values():
        trap = stats.trapping
        if not trap.measured:
            rows.append([stats.label, trap.incidence.n, *["n/a"] * (len(columns) - 2)])
            continue
        total = sum(trap.patterns.values())
        rows.append(
            [
                stats.label,
                trap.incidence.n,
                trap.incidence,
                trap.trapped_steps.value,
                trap.recoveries.value,
                *(Rate(trap.patterns[p], total) for p in PATTERNS),
                trap.success_if_trapped,
                trap.success_if_not_trapped,
            ]
        )
    return Table(
        "trapping",
        "Figure 3: trapping incidence and pattern distribution",
        columns,
        rows,
        "Trapped episodes: share of scored episodes with at least one trapped step. Pattern "
        "shares are over trapped steps. n/a: the method runs no health check.",
    )


def context_table(data: ReportData) -> Table | None:
    values = data.context_values
    if not values:
        return None
    rows: list[list[Cell]] = [
        [context_text(v), *(data.method(m).by_context.get(v, Rate()) for m in data.methods)]
        for v in values
    ]
    return Table(
        "context_length",
        f"Figure 4: success rate against {data.context_field}",
        [data.context_field, *data.methods],
        rows,
        f"Grouped by result.extra[{data.context_field!r}]; each point's n is the number of "
        "scored cases (the denominators table lists the unscored ones).",
    )


def denominators_table(data: ReportData) -> Table | None:
    """Scored and unscored cases behind every per-length and per-category cell, with the
    unscored statuses: a cell can never shrink without showing it."""
    rows: list[list[Cell]] = []
    for stats in data.stats.values():
        for value in data.context_values:
            scored = stats.by_context.get(value, Rate()).n
            left = stats.unscored_by_context.get(value, Counter())
            if scored or left:
                rows.append(
                    [
                        stats.label,
                        data.context_field,
                        context_text(value),
                        scored,
                        sum(left.values()),
                        _statuses(left),
                    ]
                )
        for env, category in data.all_categories:
            if category == "(none)":
                continue
            scored = stats.by_category.get((env, category), Rate()).n
            left = stats.unscored_by_category.get((env, category), Counter())
            if scored or left:
                rows.append(
                    [
                        stats.label,
                        f"{env} category",
                        category,
                        scored,
                        sum(left.values()),
                        _statuses(left),
                    ]
                )
    if not rows:
        return None
    reasons = [
        f"{status} ({stats.label}): "
        + "; ".join(f"{n}x {line}" for line, n in lines.most_common(3))
        for stats in data.stats.values()
        for status, lines in sorted(stats.unscored_reasons.items())
    ]
    return Table(
        "denominators",
        "Scored and unscored cases per length and category (n of each Figure 4 point)",
        ["method", "grouped by", "value", "scored", "unscored", "unscored statuses"],
        rows,
        "Every rate above is over the scored cases only. Unscored reasons: "
        + (" | ".join(reasons) if reasons else "none"),
    )


def _statuses(counts: Counter[str]) -> str:
    return ", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "-"


def metrics_table(data: ReportData) -> Table | None:
    names = data.metric_names
    if not names:
        return None
    rows: list[list[Cell]] = []
    for stats in data.stats.values():
        for env in sorted(stats.metrics):
            means = stats.metrics[env]
            n = max(m.n for m in means.values())
            rows.append(
                [stats.label, env, n, *(means[k].value if k in means else None for k in names)]
            )
    return Table(
        "metrics",
        "Benchmark metrics (mean per episode)",
        ["method", "benchmark", "episodes", *names],
        rows,
        "Means of result.extra['metrics'] over scored episodes.",
    )


def problems_table(data: ReportData) -> Table | None:
    if not data.problems:
        return None
    rows: list[list[Cell]] = [
        [p.status, p.method, p.run, p.case, p.error or "-"]
        for p in sorted(data.problems, key=lambda p: (p.status, p.method, p.run, p.case))
    ]
    return Table(
        "problems",
        "Unscored and missing cases",
        ["status", "method", "run", "case", "error"],
        rows,
        "Set-up, harness and infrastructure errors, interrupted cases, and cases the run lists "
        "but never recorded (missing); `pos bench --run NAME --resume` reruns them.",
    )


def context_text(value: ContextValue) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


TABLES: list[Callable[[ReportData], Table | None]] = [
    outcomes_table,
    success_table,
    pos_vs_baseline_table,
    category_table,
    tokens_table,
    cost_table,
    trapping_table,
    context_table,
    denominators_table,
    metrics_table,
    problems_table,
]


def build_tables(data: ReportData) -> list[Table]:
    """The report's tables, in reading order; tables with nothing to show are left out."""
    return [table for build in TABLES if (table := build(data)) is not None]
