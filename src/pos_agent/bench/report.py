"""The paper's tables and figures from run records (DESIGN §7), methods side by side.

    load_runs(dirs) -> cases          reads result.json files (I/O)
    aggregate(cases) -> ReportData    counts and means per method (pure)
    build_tables(data) -> [Table]     the paper's shapes (pure)
    render_markdown / table_csv       text (pure)
    write_report(...)                 markdown, CSV and PNG files (I/O)

Scoring follows DESIGN §6: budget exhaustion and errors are failures that stay in the success
denominator; infrastructure failures are not scored, and neither are interrupted cases (the user
stopped them; `pos bench --resume` reruns them). Both are listed separately.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.trace import CaseResult, read_result

# The paper's order (Table 1): Raw, the four baselines, PoS, then the ablations.
METHOD_ORDER = (
    "raw",
    "acon",
    "pace",
    "hiagent",
    "lh_harness",
    "pos",
    "no_consistency",
    "no_trapping",
    "generic_recovery",
    "expert",
)
ROLE_ORDER = (
    "policy",
    "belief",
    "sentinel",
    "compressor",
    "summarizer",
    "embedder",
    "manager",
    "executor",
    "auditor",
)
PATTERNS = ("static", "cycle", "drift", "none")
STATUSES = ("success", "failure", "error", "infra_error", "interrupted")
UNSCORED = frozenset({"infra_error", "interrupted"})
# These methods never run the health check, so their trapped-step count is zero by construction,
# not a measurement; the trapping table says "n/a" for them instead of a misleading 0%. Results
# that record `extra["health_checked"]` say so themselves; this list covers older ones.
TRAPPING_UNMEASURED = frozenset(
    {"no_trapping", "raw", "acon", "pace", "hiagent", "lh_harness", "expert"}
)


def health_checked(case: CaseResult) -> bool:
    recorded = case.extra.get("health_checked")
    return recorded if isinstance(recorded, bool) else case.agent not in TRAPPING_UNMEASURED


DEFAULT_CONTEXT_FIELD = "context_length"


class ReportError(Exception):
    """The report cannot be made (no such folder, nothing finished); the message says what to do."""


# -- loading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedRuns:
    """What the run folders hold: finished cases, and the ones that could not be read."""

    cases: list[CaseResult]
    unfinished: list[Path] = field(default_factory=list)  # events.jsonl but no result.json
    unreadable: list[Path] = field(default_factory=list)  # a result.json that does not parse


def load_runs(run_dirs: Sequence[Path]) -> LoadedRuns:
    """Every case under the given folders (a run, a folder of runs, or one case folder)."""
    cases: list[CaseResult] = []
    unfinished: list[Path] = []
    unreadable: list[Path] = []
    seen: set[Path] = set()
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise ReportError(f"{run_dir} is not a folder; pass run folders such as runs/<run>")
        case_dirs = {p.parent for p in run_dir.rglob("result.json")}
        case_dirs |= {p.parent for p in run_dir.rglob("events.jsonl")}
        if (run_dir / "result.json").is_file() or (run_dir / "events.jsonl").is_file():
            case_dirs.add(run_dir)
        for case_dir in sorted(case_dirs):
            key = case_dir.resolve()
            if key in seen:
                continue
            seen.add(key)
            if not (case_dir / "result.json").is_file():
                unfinished.append(case_dir)
                continue
            result = read_result(case_dir)
            if result is None:
                unreadable.append(case_dir)
            else:
                cases.append(result)
    return LoadedRuns(cases, unfinished, unreadable)


# -- aggregation ---------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class Problem:
    """A case that was not an ordinary success or failure."""

    run: str
    case: str
    method: str
    status: str
    error: str


ContextValue = float | str


@dataclass
class ReportData:
    """Everything the tables and plots show, keyed by method label."""

    methods: list[str]
    outcomes: dict[str, Counter[str]]
    overall: dict[str, Rate]
    steps: dict[str, Mean]
    scores: dict[str, Mean]
    by_env: dict[str, dict[str, Rate]]
    by_category: dict[tuple[str, str], dict[str, Rate]]
    tokens: dict[str, TokenStats]
    roles: list[str]
    trapping: dict[str, TrappingStats]
    context_field: str
    by_context: dict[str, dict[ContextValue, Rate]]
    metrics: dict[tuple[str, str], dict[str, Mean]]
    metric_names: list[str]
    problems: list[Problem]


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


def aggregate(
    cases: Sequence[CaseResult],
    *,
    context_field: str = DEFAULT_CONTEXT_FIELD,
    split_runs: bool = False,
) -> ReportData:
    """Count and average everything the report shows, per method."""
    labels = method_labels(cases, split_runs=split_runs)
    agents = {label: case.agent for label, case in zip(labels, cases, strict=True)}
    methods = sorted(agents, key=lambda m: _method_rank(m, agents[m]))
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    overall: dict[str, Rate] = defaultdict(Rate)
    steps: dict[str, Mean] = defaultdict(Mean)
    scores: dict[str, Mean] = defaultdict(Mean)
    by_env: dict[str, dict[str, Rate]] = defaultdict(lambda: defaultdict(Rate))
    by_category: dict[tuple[str, str], dict[str, Rate]] = defaultdict(lambda: defaultdict(Rate))
    tokens: dict[str, TokenStats] = defaultdict(TokenStats)
    trapping: dict[str, TrappingStats] = {}
    by_context: dict[str, dict[ContextValue, Rate]] = defaultdict(lambda: defaultdict(Rate))
    metrics: dict[tuple[str, str], dict[str, Mean]] = defaultdict(lambda: defaultdict(Mean))
    problems: list[Problem] = []

    for method, case in zip(labels, cases, strict=True):
        outcomes[method][case.status] += 1
        if case.status not in ("success", "failure"):
            problems.append(
                Problem(case.run, case.case, method, case.status, _first_line(case.error))
            )
        if case.status in UNSCORED:
            continue
        success = case.status == "success" and case.success
        overall[method].add(success)
        steps[method].add(case.steps)
        scores[method].add(case.score)
        by_env[case.env][method].add(success)
        by_category[(case.env, case.category or "(none)")][method].add(success)

        stats = tokens[method]
        stats.episodes += 1
        for role, used in case.tokens.items():
            stats.prompt[role] += used.prompt_tokens
            stats.completion[role] += used.completion_tokens
            stats.calls[role] += used.calls

        trap = trapping.setdefault(method, TrappingStats(measured=health_checked(case)))
        trapped = case.trapped_steps > 0
        trap.incidence.add(trapped)
        trap.trapped_steps.add(case.trapped_steps)
        trap.recoveries.add(case.recoveries)
        trap.patterns.update({p: n for p, n in case.patterns.items() if n > 0})
        (trap.success_if_trapped if trapped else trap.success_if_not_trapped).add(success)

        context = context_value(case.extra, context_field)
        if context is not None:
            by_context[method][context].add(success)

        for name, value in _numeric_metrics(case.extra).items():
            metrics[(method, case.env)][name].add(value)

    roles = _ordered({r for s in tokens.values() for r in s.calls}, ROLE_ORDER)
    metric_names = sorted({name for means in metrics.values() for name in means})
    return ReportData(
        methods=methods,
        outcomes=dict(outcomes),
        overall=dict(overall),
        steps=dict(steps),
        scores=dict(scores),
        by_env={env: dict(m) for env, m in sorted(by_env.items())},
        by_category={key: dict(m) for key, m in sorted(by_category.items())},
        tokens=dict(tokens),
        roles=roles,
        trapping=trapping,
        context_field=context_field,
        by_context={m: dict(v) for m, v in by_context.items()},
        metrics={key: dict(v) for key, v in sorted(metrics.items(), key=_metric_key(methods))},
        metric_names=metric_names,
        problems=problems,
    )


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


def _numeric_metrics(extra: dict[str, Any]) -> dict[str, float]:
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


def _metric_key(methods: list[str]) -> Any:
    def key(item: tuple[tuple[str, str], Any]) -> tuple[int, str]:
        (method, env), _ = item
        return (methods.index(method), env)

    return key


def _ordered(names: Iterable[str], preferred: Sequence[str]) -> list[str]:
    names = set(names)
    return [n for n in preferred if n in names] + sorted(names - set(preferred))


def _first_line(text: str | None, limit: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- tables --------------------------------------------------------------------------------------

Cell = str | int | float | Rate | None


@dataclass(frozen=True)
class Table:
    """One table: `name` is its CSV file stem."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    note: str = ""


def build_tables(data: ReportData) -> list[Table]:
    """The report's tables, in reading order; tables with nothing to show are left out."""
    tables = [_outcomes_table(data), _success_table(data)]
    categories = _category_table(data)
    if categories is not None:
        tables.append(categories)
    tables.append(_tokens_table(data))
    tables.append(_trapping_table(data))
    for optional in (_context_table(data), _metrics_table(data), _problems_table(data)):
        if optional is not None:
            tables.append(optional)
    return tables


def _outcomes_table(data: ReportData) -> Table:
    rows: list[list[Cell]] = []
    for method in data.methods:
        counts = data.outcomes.get(method, Counter())
        rows.append(
            [
                method,
                sum(counts.values()),
                *(counts[s] for s in STATUSES),
                data.overall.get(method, Rate()),
                data.steps.get(method, Mean()).value,
                data.scores.get(method, Mean()).value,
            ]
        )
    return Table(
        "outcomes",
        "Outcomes per method",
        ["method", "cases", *STATUSES, "success rate", "mean steps", "mean score"],
        rows,
        "Success rate = successes / scored episodes. Errors and budget exhaustion count as "
        "failures; infra_error and interrupted cases are not scored (DESIGN §6).",
    )


def _success_table(data: ReportData) -> Table:
    rows: list[list[Cell]] = [
        [env, *(per_method.get(m, Rate()) for m in data.methods)]
        for env, per_method in data.by_env.items()
    ]
    if len(data.by_env) > 1:
        rows.append(["all", *(data.overall.get(m, Rate()) for m in data.methods)])
    return Table(
        "success",
        "Table 1: success rate per benchmark",
        ["benchmark", *data.methods],
        rows,
        "Cells: success rate (successes/scored episodes).",
    )


def _category_table(data: ReportData) -> Table | None:
    if all(category == "(none)" for _, category in data.by_category):
        return None
    rows: list[list[Cell]] = [
        [env, category, *(per_method.get(m, Rate()) for m in data.methods)]
        for (env, category), per_method in data.by_category.items()
    ]
    return Table(
        "success_by_category",
        "Table 9: success rate per task category",
        ["benchmark", "category", *data.methods],
        rows,
    )


def _tokens_table(data: ReportData) -> Table:
    columns = ["method", "episodes"]
    for role in data.roles:
        columns += [f"{role} prompt", f"{role} completion"]
    columns.append("total")
    rows: list[list[Cell]] = []
    for method in data.methods:
        stats = data.tokens.get(method, TokenStats())
        row: list[Cell] = [method, stats.episodes]
        for role in data.roles:
            used = stats.calls[role] > 0
            row.append(stats.mean(stats.prompt, role) if used else None)
            row.append(stats.mean(stats.completion, role) if used else None)
        row.append(stats.mean_total)
        rows.append(row)
    return Table(
        "tokens",
        "Table 2: tokens per role per episode (mean)",
        columns,
        rows,
        "Mean prompt and completion tokens per scored episode; '-' where the method has no such role.",
    )


def _trapping_table(data: ReportData) -> Table:
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
    for method in data.methods:
        trap = data.trapping.get(method, TrappingStats())
        if not trap.measured:
            rows.append([method, trap.incidence.n, *["n/a"] * (len(columns) - 2)])
            continue
        total = sum(trap.patterns.values())
        rows.append(
            [
                method,
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


def _context_table(data: ReportData) -> Table | None:
    values = sorted(
        {v for per in data.by_context.values() for v in per},
        key=lambda v: (isinstance(v, str), v if isinstance(v, float) else 0.0, str(v)),
    )
    if not values:
        return None
    rows: list[list[Cell]] = [
        [_context_text(v), *(data.by_context.get(m, {}).get(v, Rate()) for m in data.methods)]
        for v in values
    ]
    return Table(
        "context_length",
        f"Figure 4: success rate against {data.context_field}",
        [data.context_field, *data.methods],
        rows,
        f"Grouped by result.extra[{data.context_field!r}].",
    )


def _metrics_table(data: ReportData) -> Table | None:
    if not data.metric_names:
        return None
    rows: list[list[Cell]] = []
    for (method, env), means in data.metrics.items():
        n = max(m.n for m in means.values())
        rows.append(
            [method, env, n, *(means[k].value if k in means else None for k in data.metric_names)]
        )
    return Table(
        "metrics",
        "Benchmark metrics (mean per episode)",
        ["method", "benchmark", "episodes", *data.metric_names],
        rows,
        "Means of result.extra['metrics'] over scored episodes.",
    )


def _problems_table(data: ReportData) -> Table | None:
    if not data.problems:
        return None
    rows: list[list[Cell]] = [
        [p.status, p.method, p.run, p.case, p.error or "-"]
        for p in sorted(data.problems, key=lambda p: (p.status, p.method, p.run, p.case))
    ]
    return Table(
        "problems",
        "Errors, infrastructure failures and interrupted cases",
        ["status", "method", "run", "case", "error"],
        rows,
    )


def _context_text(value: ContextValue) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- text ----------------------------------------------------------------------------------------


def format_cell(cell: Cell) -> str:
    """A cell as the markdown table shows it."""
    if cell is None:
        return "-"
    if isinstance(cell, Rate):
        if not cell.n:
            return "-"
        return f"{100 * cell.count / cell.n:.1f}% ({cell.count}/{cell.n})"
    if isinstance(cell, bool):
        return "yes" if cell else "no"
    if isinstance(cell, float):
        if not math.isfinite(cell):
            return "-"
        return f"{cell:.0f}" if abs(cell) >= 100 else f"{cell:.3g}"
    return str(cell)


def render_table(table: Table) -> str:
    """One table as GitHub markdown (pipes in cells are escaped)."""
    lines = [f"### {table.title}", ""]
    lines.append("| " + " | ".join(_md(c) for c in table.columns) + " |")
    aligns = [
        "---:" if all(_numeric(row[i]) for row in table.rows) and table.rows else "---"
        for i in range(len(table.columns))
    ]
    lines.append("| " + " | ".join(aligns) + " |")
    for row in table.rows:
        lines.append("| " + " | ".join(_md(format_cell(c)) for c in row) + " |")
    if table.note:
        lines += ["", f"_{table.note}_"]
    return "\n".join(lines)


def render_markdown(
    tables: Sequence[Table],
    *,
    sources: Sequence[str] = (),
    loaded: LoadedRuns | None = None,
    plots: Sequence[str] = (),
) -> str:
    """The whole report: header, tables, plot links, and what could not be read."""
    lines = ["# PoS benchmark report", ""]
    if sources:
        lines.append("Runs: " + ", ".join(f"`{s}`" for s in sources))
    if loaded is not None:
        lines.append(f"Cases read: {len(loaded.cases)}")
        if loaded.unfinished:
            lines.append(
                f"Unfinished (a trace but no result.json; `pos bench --resume` reruns them): "
                f"{len(loaded.unfinished)}: " + _paths(loaded.unfinished)
            )
        if loaded.unreadable:
            lines.append(
                f"Unreadable result.json: {len(loaded.unreadable)}: " + _paths(loaded.unreadable)
            )
    lines.append("")
    for table in tables:
        lines += [render_table(table), ""]
    if plots:
        lines += ["### Plots", ""]
        lines += [f"![{Path(p).stem}]({p})" for p in plots]
        lines.append("")
    return "\n".join(lines)


def table_csv(table: Table) -> str:
    """One table as CSV; a rate column becomes three: the fraction, the count and n."""
    rate_columns = {
        i for i in range(len(table.columns)) if any(isinstance(r[i], Rate) for r in table.rows)
    }
    header: list[str] = []
    for i, name in enumerate(table.columns):
        header += [name, f"{name} count", f"{name} n"] if i in rate_columns else [name]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in table.rows:
        out: list[Any] = []
        for i, cell in enumerate(row):
            if i in rate_columns:
                if isinstance(cell, Rate):
                    value = cell.value
                    out += ["" if value is None else f"{value:.6g}", cell.count, cell.n]
                else:
                    out += ["" if cell is None else cell, "", ""]
            elif cell is None:
                out.append("")
            elif isinstance(cell, float):
                out.append(f"{cell:.6g}")
            else:
                out.append(cell)
        writer.writerow(out)
    return buffer.getvalue()


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _numeric(cell: Cell) -> bool:
    if isinstance(cell, str):
        return cell in ("n/a", "-")
    return cell is None or (isinstance(cell, int | float | Rate) and not isinstance(cell, bool))


def _paths(paths: Sequence[Path], shown: int = 5) -> str:
    text = ", ".join(f"`{p}`" for p in paths[:shown])
    return text + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


# -- files ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrittenReport:
    """Where `write_report` put things, and the markdown it wrote."""

    markdown: str
    markdown_path: Path
    csv_paths: list[Path]
    plot_paths: list[Path]


def write_report(
    run_dirs: Sequence[Path],
    out_dir: Path,
    *,
    context_field: str = DEFAULT_CONTEXT_FIELD,
    split_runs: bool = False,
    plots: bool = True,
) -> WrittenReport:
    """Read the runs and write `report.md`, one CSV per table and the PNG plots into `out_dir`."""
    loaded = load_runs(run_dirs)
    if not loaded.cases:
        where = ", ".join(str(d) for d in run_dirs)
        detail = f" ({len(loaded.unfinished)} unfinished)" if loaded.unfinished else ""
        raise ReportError(
            f"no finished case (result.json) under {where}{detail}; "
            "run `pos run` or `pos bench` first, or pass the folder that holds the runs"
        )
    data = aggregate(loaded.cases, context_field=context_field, split_runs=split_runs)
    tables = build_tables(data)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_paths = []
    for table in tables:
        path = out_dir / f"{table.name}.csv"
        path.write_text(table_csv(table), encoding="utf-8")
        csv_paths.append(path)
    plot_paths: list[Path] = []
    if plots:
        plot_paths = write_plots(data, out_dir)
    markdown = render_markdown(
        tables,
        sources=[str(d) for d in run_dirs],
        loaded=loaded,
        plots=[p.name for p in plot_paths],
    )
    markdown_path = out_dir / "report.md"
    markdown_path.write_text(markdown, encoding="utf-8")
    return WrittenReport(markdown, markdown_path, csv_paths, plot_paths)


# -- plots ---------------------------------------------------------------------------------------


def write_plots(data: ReportData, out_dir: Path) -> list[Path]:
    """PNG figures (matplotlib's Agg canvas: no display needed); plots without data are skipped."""
    # matplotlib is imported here, not at the top, so `pos --help` stays fast.
    from matplotlib.figure import Figure

    colours = _method_colours(data.methods)
    written = []
    for name, draw in (
        ("success", _plot_success),
        ("tokens", _plot_tokens),
        ("trapping", _plot_trapping),
        ("context_length", _plot_context),
    ):
        figure = Figure(figsize=(8, 4.5), dpi=110, layout="constrained")
        if draw(figure, data, colours):
            path = out_dir / f"{name}.png"
            figure.savefig(path)
            written.append(path)
    return written


def _method_colours(methods: Sequence[str]) -> dict[str, str]:
    palette = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    ]  # fmt: skip
    return {m: palette[i % len(palette)] for i, m in enumerate(methods)}


def _plot_success(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    groups = list(data.by_env) + (["all"] if len(data.by_env) > 1 else [])
    if not groups or not data.methods:
        return False
    axes = figure.add_subplot()
    width = 0.8 / len(data.methods)
    for i, method in enumerate(data.methods):
        rates = [
            (data.overall if g == "all" else data.by_env[g]).get(method, Rate()) for g in groups
        ]
        xs = [g + (i - (len(data.methods) - 1) / 2) * width for g in range(len(groups))]
        heights = [100 * (r.value or 0.0) for r in rates]
        bars = axes.bar(xs, heights, width, label=method, color=colours[method])
        labels = [f"{h:.0f}%\nn={r.n}" if r.n else "" for h, r in zip(heights, rates, strict=True)]
        axes.bar_label(bars, labels=labels, fontsize=7, padding=2)
    axes.set_xticks(range(len(groups)), groups)
    axes.set_ylim(0, 115)
    axes.set_ylabel("success rate (%)")
    axes.set_title("Success rate per benchmark")
    axes.legend(fontsize=8, loc="upper right")
    return True


def _plot_tokens(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    if not data.roles:
        return False
    axes = figure.add_subplot()
    role_colours = _method_colours(data.roles)
    bottoms = [0.0] * len(data.methods)
    for role in data.roles:
        heights = []
        for method in data.methods:
            stats = data.tokens.get(method, TokenStats())
            prompt = stats.mean(stats.prompt, role) or 0.0
            completion = stats.mean(stats.completion, role) or 0.0
            heights.append(prompt + completion)
        axes.bar(data.methods, heights, 0.6, bottom=bottoms, label=role, color=role_colours[role])
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, total in enumerate(bottoms):
        axes.annotate(f"{total:.0f}", (x, total), ha="center", va="bottom", fontsize=8)
    axes.set_ylabel("tokens per episode (prompt + completion)")
    axes.set_title("Tokens per role per episode")
    axes.legend(fontsize=8)
    return True


def _plot_trapping(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    measured = [m for m in data.methods if data.trapping.get(m, TrappingStats()).measured]
    measured = [m for m in measured if data.trapping[m].incidence.n]
    if not measured:
        return False
    left, right = figure.subplots(1, 2)
    incidence = [100 * (data.trapping[m].incidence.value or 0.0) for m in measured]
    bars = left.bar(measured, incidence, 0.6, color=[colours[m] for m in measured])
    left.bar_label(bars, labels=[f"{v:.0f}%" for v in incidence], fontsize=8)
    left.set_ylim(0, 110)
    left.set_ylabel("episodes with a trapped step (%)")
    left.set_title("Trapping incidence")
    pattern_colours = {"static": "#d62728", "cycle": "#ff7f0e", "drift": "#9467bd", "none": "#999"}
    bottoms = [0.0] * len(measured)
    for pattern in PATTERNS:
        shares = []
        for m in measured:
            total = sum(data.trapping[m].patterns.values())
            shares.append(100 * data.trapping[m].patterns[pattern] / total if total else 0.0)
        right.bar(
            measured, shares, 0.6, bottom=bottoms, label=pattern, color=pattern_colours[pattern]
        )
        bottoms = [b + s for b, s in zip(bottoms, shares, strict=True)]
    right.set_ylim(0, 110)
    right.set_ylabel("share of trapped steps (%)")
    right.set_title("Pattern distribution")
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for axes in (left, right):
        axes.tick_params(axis="x", labelrotation=20, labelsize=8)
    return True


def _plot_context(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    values = sorted({v for per in data.by_context.values() for v in per}, key=str)
    if not values:
        return False
    numeric = all(isinstance(v, float) for v in values)
    if numeric:
        values = sorted(values, key=lambda v: float(v))
    axes = figure.add_subplot()
    positions = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
    for method in data.methods:
        per = data.by_context.get(method, {})
        points = [(positions[v], 100 * (per[v].value or 0.0)) for v in values if v in per]
        if points:
            xs, ys = zip(*points, strict=True)
            axes.plot(xs, ys, marker="o", label=method, color=colours[method])
    if not numeric:
        axes.set_xticks(list(positions.values()), [str(v) for v in values])
    elif float(values[0]) > 0 and float(values[-1]) / float(values[0]) >= 8:
        axes.set_xscale("log", base=2)  # context lengths usually double from one to the next
        axes.set_xticks([float(v) for v in values], [_context_text(v) for v in values])
        axes.minorticks_off()
    axes.set_ylim(-5, 105)
    axes.set_xlabel(data.context_field)
    axes.set_ylabel("success rate (%)")
    axes.set_title(f"Success rate against {data.context_field}")
    axes.legend(fontsize=8)
    return True
