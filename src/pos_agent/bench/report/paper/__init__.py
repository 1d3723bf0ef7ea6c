"""The paper's report (`pos report RUN --paper`): Tables 1, 2 and 9 in the paper's layout with
the published value and the difference beside each cell, a 95% bootstrap interval per cell,
PoS against the strongest baseline paired on the same cases (McNemar's exact test), footnotes
for every missing, substituted or smaller cell, and Figures 1, 3 and 4.

    collect(loaded, run_dirs) -> PaperData      cells per backbone, benchmark, method   cells.py
    paper_tables(data) -> [PaperTable]          the tables (pure)                       tables.py
    render_markdown / table_csv / table_latex   text (pure)                             render.py
    write_figures(data, dir)                    PNG                                     figures.py
    write_paper_report(dirs, out)               all of it into files                    write.py
"""

from pos_agent.bench.report.paper.cells import BackboneInfo, Cell, Outcome, PaperData, collect
from pos_agent.bench.report.paper.layout import PaperTable, Value
from pos_agent.bench.report.paper.render import render_markdown, table_csv, table_latex
from pos_agent.bench.report.paper.statistics import PairedTest, bootstrap_interval, mcnemar_exact
from pos_agent.bench.report.paper.tables import paper_tables, strongest_baseline
from pos_agent.bench.report.paper.write import PaperReport, write_paper_report

__all__ = [
    "BackboneInfo",
    "Cell",
    "Outcome",
    "PairedTest",
    "PaperData",
    "PaperReport",
    "PaperTable",
    "Value",
    "bootstrap_interval",
    "collect",
    "mcnemar_exact",
    "paper_tables",
    "render_markdown",
    "strongest_baseline",
    "table_csv",
    "table_latex",
    "write_paper_report",
]
