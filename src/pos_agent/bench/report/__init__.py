"""The paper's tables and figures from run records (docs/reports.md), methods side by side.

    load_runs(dirs) -> LoadedRuns       results, unfinished and missing cases (I/O)   load.py
    aggregate(cases) -> ReportData      one MethodStats per method (pure)             stats.py
    build_tables(data) -> [Table]       the paper's shapes; TABLES lists them (pure)  tables.py
    render_markdown / table_csv         text (pure)                                   render.py
    write_plots(data, dir)              PNG figures; FIGURES lists them               plots.py
    write_report(dirs, out)             all of the above into files                   write.py

Only success and failure are scored (`pos_agent.trace.SCORED_STATUSES`); every other status is
counted in the outcomes table and listed as a problem, as are cases a run lists but never
recorded. Adding a method: its agent name in `stats.METHOD_ORDER`. A benchmark: nothing (each
`env` gets a row; `extra["metrics"]` numbers are averaged). A table or a figure: one function in
`TABLES` or `FIGURES`.
"""

from pos_agent.bench.report.load import LoadedRuns, MissingCase, ReportError, load_runs
from pos_agent.bench.report.plots import FIGURES, write_plots
from pos_agent.bench.report.render import format_cell, render_markdown, render_table, table_csv
from pos_agent.bench.report.stats import (
    DEFAULT_CONTEXT_FIELD,
    METHOD_ORDER,
    PATTERNS,
    ROLE_ORDER,
    Mean,
    MethodStats,
    Problem,
    Rate,
    ReportData,
    TokenStats,
    TrappingStats,
    aggregate,
    context_value,
    health_checked,
    method_labels,
    model_label,
)
from pos_agent.bench.report.tables import TABLES, Cell, Table, build_tables
from pos_agent.bench.report.write import WrittenReport, write_report

__all__ = [
    "DEFAULT_CONTEXT_FIELD",
    "FIGURES",
    "METHOD_ORDER",
    "PATTERNS",
    "ROLE_ORDER",
    "TABLES",
    "Cell",
    "LoadedRuns",
    "Mean",
    "MethodStats",
    "MissingCase",
    "Problem",
    "Rate",
    "ReportData",
    "ReportError",
    "Table",
    "TokenStats",
    "TrappingStats",
    "WrittenReport",
    "aggregate",
    "build_tables",
    "context_value",
    "format_cell",
    "health_checked",
    "load_runs",
    "method_labels",
    "model_label",
    "render_markdown",
    "render_table",
    "table_csv",
    "write_plots",
    "write_report",
]
