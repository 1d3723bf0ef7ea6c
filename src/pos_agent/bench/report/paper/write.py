"""`write_paper_report`: the run's records in the paper's layout, beside the published values:
`paper.md`, one CSV and one LaTeX file per table, and the figures as PNG."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pos_agent.bench.report.files import make_out_dir, write_report_text
from pos_agent.bench.report.load import ReportError, load_runs
from pos_agent.bench.report.paper.cells import collect
from pos_agent.bench.report.paper.figures import write_figures
from pos_agent.bench.report.paper.render import render_markdown, table_csv, table_latex
from pos_agent.bench.report.paper.tables import paper_tables


@dataclass(frozen=True)
class PaperReport:
    """Where the paper report went, and its markdown."""

    markdown: str
    markdown_path: Path
    csv_paths: list[Path]
    latex_paths: list[Path]
    plot_paths: list[Path]


def write_paper_report(
    run_dirs: Sequence[Path], out_dir: Path, *, plots: bool = True
) -> PaperReport:
    """Read the runs and write the paper's Tables 1, 2 and 9, PoS against the strongest
    baseline, and Figures 1, 3 and 4 into `out_dir`; ReportError when nothing can be shown."""
    loaded = load_runs(run_dirs)
    data = collect(loaded, run_dirs)
    if not data.cells:
        raise ReportError(
            "no case of the paper's benchmarks (ALFWorld, LOCA-Bench, RCA, ClinDiag) under "
            + ", ".join(str(d) for d in run_dirs)
            + "; run `pos paper table1` first"
        )
    tables = paper_tables(data)
    make_out_dir(out_dir)
    csv_paths, latex_paths = [], []
    for table in tables:
        csv_paths.append(write_report_text(out_dir / f"{table.name}.csv", table_csv(table)))
        latex_paths.append(write_report_text(out_dir / f"{table.name}.tex", table_latex(table)))
    plot_paths = write_figures(data, out_dir) if plots else []
    markdown = render_markdown(tables, sources=data.sources, plots=[p.name for p in plot_paths])
    markdown_path = write_report_text(out_dir / "paper.md", markdown)
    return PaperReport(markdown, markdown_path, csv_paths, latex_paths, plot_paths)
