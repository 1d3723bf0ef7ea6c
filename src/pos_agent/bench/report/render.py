"""The report as text: markdown tables and CSV files (pure)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pos_agent.bench.report.load import LoadedRuns
from pos_agent.bench.report.stats import Rate
from pos_agent.bench.report.tables import Cell, Table


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
    for r, row in enumerate(table.rows):
        cells = [_md(format_cell(c)) for c in row]
        cells = [f"**{t}**" if (r, c) in table.bold else t for c, t in enumerate(cells)]
        lines.append("| " + " | ".join(cells) + " |")
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
        if loaded.missing:
            lines.append(
                f"Missing (listed in the run's config.json, no record at all; "
                f"`pos bench --resume` runs them): {len(loaded.missing)}: "
                + _paths([Path(m.run) / m.folder for m in loaded.missing])
            )
        if loaded.foreign:
            lines.append(
                "Left out, settings not their run's (the settings hash in result.json differs "
                "from the run's config.json, e.g. `pos run --run` wrote over a case; rerun "
                f"them with `pos bench --resume`): {len(loaded.foreign)}: "
                + _paths([f.path for f in loaded.foreign])
            )
        if loaded.invalid:
            lines.append(
                "Left out, not a sound record (`pos bench --resume` reruns them): "
                f"{len(loaded.invalid)}: "
                + "; ".join(f"`{i.path}` ({', '.join(i.problems)})" for i in loaded.invalid[:5])
                + (f" and {len(loaded.invalid) - 5} more" if len(loaded.invalid) > 5 else "")
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
