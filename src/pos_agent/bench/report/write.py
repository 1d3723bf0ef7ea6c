"""`write_report`: read the runs, then write report.md, one CSV per table and the PNG figures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pos_agent.bench.report.files import make_out_dir, write_report_text
from pos_agent.bench.report.load import ReportError, load_runs
from pos_agent.bench.report.merge import merge_problems
from pos_agent.bench.report.plots import write_plots
from pos_agent.bench.report.render import render_markdown, table_csv
from pos_agent.bench.report.stats import DEFAULT_CONTEXT_FIELD, aggregate
from pos_agent.bench.report.tables import build_tables
from pos_agent.cost import PriceTable


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
    prices: PriceTable | None = None,
) -> WrittenReport:
    """Read the runs and write `report.md`, one CSV per table and the PNG plots into `out_dir`;
    with `prices`, Table 2 in money too (the cost table)."""
    loaded = load_runs(run_dirs)
    problems = [] if split_runs else merge_problems(run_dirs)
    if problems:
        shown = problems[:10] + (
            [f"... and {len(problems) - 10} more"] if len(problems) > 10 else []
        )
        raise ReportError(
            "these runs cannot be pooled into one report: a method would mix settings (or "
            "count a case twice). What differs:\n  "
            + "\n  ".join(shown)
            + "\nReport them separately, or pass --split-runs to show each run as its own method."
        )
    if not loaded.cases:
        where = ", ".join(str(d) for d in run_dirs)
        detail = f" ({len(loaded.unfinished)} unfinished)" if loaded.unfinished else ""
        if loaded.foreign:
            raise ReportError(
                f"no case under {where} was made with its run's settings: "
                f"{len(loaded.foreign)} result(s) have another settings hash than their run's "
                f"config.json (first: {loaded.foreign[0].path}); rerun them with "
                "`pos bench --run NAME --resume`"
            )
        if loaded.invalid:
            detail += f" ({len(loaded.invalid)} not sound records, first: {loaded.invalid[0].path})"
        raise ReportError(
            f"no finished case (result.json) under {where}{detail}; "
            "run `pos run` or `pos bench` first, or pass the folder that holds the runs"
        )
    data = aggregate(
        loaded.cases, context_field=context_field, split_runs=split_runs, missing=loaded.missing
    )
    data.prices = prices
    tables = build_tables(data)
    make_out_dir(out_dir)
    csv_paths = [
        write_report_text(out_dir / f"{table.name}.csv", table_csv(table)) for table in tables
    ]
    plot_paths = write_plots(data, out_dir) if plots else []
    markdown = render_markdown(
        tables,
        sources=[str(d) for d in run_dirs],
        loaded=loaded,
        plots=[p.name for p in plot_paths],
    )
    markdown_path = write_report_text(out_dir / "report.md", markdown)
    return WrittenReport(markdown, markdown_path, csv_paths, plot_paths)
