"""The paper's tables from the run's cells, each value beside the published one (pure).

- Table 1: methods as rows; per backbone (in the study's order), the four benchmarks (ALF and
  LOCA success, RCA joint accuracy, ClinDiag overall accuracy).
- Table 2: RCA tokens per episode by component (thousands) and joint accuracy, per backbone.
- Table 9: per backbone and method, ALFWorld and LOCA-Bench by category, RCA's FT, RCL and
  Joint, ClinDiag's Common, Rare and Overall.
- PoS against the strongest baseline (Figure 1, left), paired on the same cases.
"""

from __future__ import annotations

from collections.abc import Callable

from pos_agent.agents.methods import BASELINE_METHODS, FULL_POS
from pos_agent.bench.paper import BENCHMARKS, METHOD_TITLES, TABLE9_COLUMNS, Benchmark, published
from pos_agent.bench.report.paper.cells import BackboneInfo, Cell, Outcome, PaperData
from pos_agent.bench.report.paper.layout import Entry, Footnotes, PaperTable, Value, cell_notes
from pos_agent.bench.report.paper.statistics import bootstrap_interval, mcnemar_exact
from pos_agent.bench.study.estimate import component_of

STRONGEST_AMONG: tuple[str, ...] = ("raw", *BASELINE_METHODS)
"""The methods PoS is compared with: Raw Trajectory and the four baselines."""


def rate(outcomes: list[Outcome], pick: Callable[[Outcome], float | None]) -> Value:
    """The mean of `pick` over the outcomes that have it, in percent, with its interval."""
    values = [v for o in outcomes if (v := pick(o)) is not None]
    if not values:
        return Value(None)
    mean = 100 * sum(values) / len(values)
    return Value(mean, bootstrap_interval(values), len(values))


def success(outcome: Outcome) -> float:
    return 1.0 if outcome.success else 0.0


def _group_label(backbone: BackboneInfo, notes: Footnotes) -> str:
    if backbone.paper is None:
        mark = notes.mark(
            f"{backbone.label} ({backbone.model}) is not one of the paper's "
            "backbones: no published values beside it"
        )
        return f"{backbone.label} [{mark}]"
    if backbone.paper.lower() != backbone.label.lower():
        mark = notes.mark(
            f"{backbone.label} ({backbone.model}) is shown beside the paper's {backbone.paper}"
        )
        return f"{backbone.label} [{mark}]"
    return backbone.label


def table1(data: PaperData) -> PaperTable:
    notes = Footnotes()
    groups, columns = [], []
    for backbone in data.backbones:
        groups.append((_group_label(backbone, notes), len(BENCHMARKS)))
        columns += [b.column for b in BENCHMARKS]
    rows: list[tuple[str, list[Entry]]] = []
    paper = published()
    for method in data.methods:
        entries: list[Entry] = []
        for backbone in data.backbones:
            for benchmark in BENCHMARKS:
                cell = data.cell(backbone.label, benchmark.key, method)
                value = rate(list(cell.outcomes.values()), success) if cell else Value(None)
                entries.append(
                    _with(
                        value,
                        paper.table1_value(backbone.paper, method, benchmark.column),
                        cell_notes(cell, benchmark, notes),
                    )
                )
        rows.append((METHOD_TITLES.get(method, method), entries))
    return PaperTable(
        "table1",
        "Table 1: success (ALF, LOCA), joint accuracy (RCA), overall accuracy (Clin), %",
        groups,
        columns,
        rows,
        notes.texts,
        "Each cell: ours [95% bootstrap interval] n=scored cases, then the paper's published "
        f"value and the difference (ours - paper). Published values: {paper.source}",
    )


def _with(value: Value, paper_value: float | None, notes: tuple[int, ...]) -> Value:
    return Value(value.ours, value.interval, value.n, paper_value, notes, value.unit)


TABLE2_COLUMNS = (
    ("task agent", ("policy",), "task_agent"),
    ("belief", ("belief",), "belief"),
    ("sentinel", ("sentinel",), "sentinel"),
    ("baselines' own", ("baseline",), None),
    ("total", ("policy", "belief", "sentinel", "baseline", "provider", "judge"), "total"),
)


def table2(data: PaperData) -> PaperTable:
    notes = Footnotes()
    rca = next(b for b in BENCHMARKS if b.key == "rca")
    paper = published()
    rows: list[tuple[str, list[Entry]]] = []
    for backbone in data.backbones:
        label = _group_label(backbone, notes)
        for method in data.methods:
            cell = data.cell(backbone.label, rca.key, method)
            marks = cell_notes(cell, rca, notes)
            outcomes = list(cell.outcomes.values()) if cell else []
            joint = _with(
                rate(outcomes, success), paper.table2_value(backbone.paper, method, "joint"), marks
            )
            entries: list[Entry] = [joint]
            for _, components, column in TABLE2_COLUMNS:
                ours = _tokens(outcomes, components)
                published_k = paper.table2_value(backbone.paper, method, column) if column else None
                entries.append(Value(ours, None, len(outcomes), published_k, marks, "K"))
            rows.append((f"{label} / {METHOD_TITLES.get(method, method)}", entries))
    return PaperTable(
        "table2",
        "Table 2: RCA, joint accuracy (%) and tokens per episode by component (thousands)",
        [("", 1), ("tokens per episode (K)", len(TABLE2_COLUMNS))],
        ["joint", *(c[0] for c in TABLE2_COLUMNS)],
        rows,
        notes.texts,
        "Tokens: prompt + completion per scored episode, mean. Task agent: the policy (every "
        "method's decisions); baselines' own: summaries, compressions and LongHorizon's roles. "
        "The paper reports Table 2 for Qwen3.7-Plus only. Published values: " + paper.source,
    )


def _tokens(outcomes: list[Outcome], components: tuple[str, ...]) -> float | None:
    if not outcomes:
        return None
    total = 0
    for outcome in outcomes:
        for role, used in outcome.result.tokens.items():
            if component_of(role) in components:
                total += used.prompt_tokens + used.completion_tokens
    return total / len(outcomes) / 1000


def _category(name: str) -> Callable[[Outcome], float | None]:
    wanted = name.lower().replace(". ", "-").replace(" ", "-")

    def pick(outcome: Outcome) -> float | None:
        found = (outcome.result.category or "").lower().replace(" ", "-")
        return success(outcome) if found == wanted else None

    return pick


def _metric(name: str) -> Callable[[Outcome], float | None]:
    return lambda outcome: outcome.metric(name)


def table9_value(cell: Cell | None, benchmark: Benchmark, column: str) -> Value:
    """One Table 9 number of a cell: a category's success, an RCA metric, or the overall."""
    if cell is None:
        return Value(None)
    outcomes = list(cell.outcomes.values())
    if column in ("Overall", "Joint"):
        return rate(outcomes, success)
    if benchmark.key == "rca":
        return rate(outcomes, _metric(column))
    return rate(outcomes, _category(column))


def table9(data: PaperData) -> PaperTable:
    notes = Footnotes()
    paper = published()
    groups = [(b.title, len(TABLE9_COLUMNS[b.key])) for b in BENCHMARKS]
    columns = [c for b in BENCHMARKS for c in TABLE9_COLUMNS[b.key]]
    rows: list[tuple[str, list[Entry]]] = []
    for backbone in data.backbones:
        label = _group_label(backbone, notes)
        for method in data.methods:
            entries: list[Entry] = []
            for benchmark in BENCHMARKS:
                cell = data.cell(backbone.label, benchmark.key, method)
                marks = cell_notes(cell, benchmark, notes)
                for column in TABLE9_COLUMNS[benchmark.key]:
                    value = table9_value(cell, benchmark, column)
                    published_value = paper.table9_value(
                        backbone.paper, method, benchmark.key, column
                    )
                    entries.append(_with(value, published_value, marks))
            rows.append((f"{label} / {METHOD_TITLES.get(method, method)}", entries))
    return PaperTable(
        "table9",
        "Table 9: fine-grained results (%)",
        groups,
        columns,
        rows,
        notes.texts,
        "ALFWorld and LOCA-Bench by task category, RCA's failure triage (FT), root-cause "
        "localisation (RCL) and joint accuracy, ClinDiag Common (the paper's 302), Rare "
        "(ClinDiag's rare0 .. rare301) and Overall. Published values: " + paper.source,
    )


def strongest_baseline(data: PaperData, backbone: str, benchmark: str) -> Cell | None:
    """The baseline with the highest success on this backbone and benchmark (ties: the
    earlier in the paper's order)."""
    cells = [c for m in STRONGEST_AMONG if (c := data.cell(backbone, benchmark, m)) and c.scored]
    if not cells:
        return None
    return max(cells, key=lambda c: (sum(c.values()) / c.scored, -STRONGEST_AMONG.index(c.method)))


def paired_table(data: PaperData) -> PaperTable:
    notes = Footnotes()
    paper = published()
    rows: list[tuple[str, list[Entry]]] = []
    for backbone in data.backbones:
        label = _group_label(backbone, notes)
        for benchmark in BENCHMARKS:
            pos = data.cell(backbone.label, benchmark.key, FULL_POS)
            best = strongest_baseline(data, backbone.label, benchmark.key)
            if pos is None or best is None or not pos.scored:
                continue
            test = mcnemar_exact(
                {k: o.success for k, o in pos.outcomes.items()},
                {k: o.success for k, o in best.outcomes.items()},
            )
            ours = rate(list(pos.outcomes.values()), success)
            theirs = rate(list(best.outcomes.values()), success)
            published_gap = _published_gap(backbone.paper, benchmark.column)
            gap = None if ours.ours is None or theirs.ours is None else ours.ours - theirs.ours
            rows.append(
                (
                    f"{label} / {benchmark.column}",
                    [
                        _with(
                            ours, paper.table1_value(backbone.paper, FULL_POS, benchmark.column), ()
                        ),
                        METHOD_TITLES.get(best.method, best.method),
                        _with(
                            theirs,
                            paper.table1_value(backbone.paper, best.method, benchmark.column),
                            (),
                        ),
                        Value(gap, None, test.n, published_gap, (), "pp"),
                        str(test.n),
                        f"{test.only_first} / {test.only_second}",
                        f"{test.p_value:.3g}",
                    ],
                )
            )
    return PaperTable(
        "pos_vs_strongest",
        "Figure 1 (left) as a table: PoS against the strongest baseline, paired on the same cases",
        [],
        [
            "PoS",
            "strongest baseline",
            "its rate",
            "gap (pp)",
            "paired n",
            "PoS only / it only",
            "p",
        ],
        rows,
        notes.texts,
        "Strongest baseline: the highest success among Raw and the four baselines on that "
        "backbone and benchmark in this run (the paper's gap: PoS minus its strongest published "
        "baseline). Test: McNemar's exact test on success over the cases both scored (two-sided; "
        "discordant cases split evenly under the null).",
    )


def _published_gap(backbone: str | None, column: str) -> float | None:
    paper = published()
    pos = paper.table1_value(backbone, FULL_POS, column)
    others = [
        v for m in STRONGEST_AMONG if (v := paper.table1_value(backbone, m, column)) is not None
    ]
    if pos is None or not others:
        return None
    return pos - max(others)


def paper_tables(data: PaperData) -> list[PaperTable]:
    return [table1(data), table2(data), table9(data), paired_table(data)]
