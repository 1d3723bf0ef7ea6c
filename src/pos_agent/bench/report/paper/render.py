"""The paper-layout tables as Markdown, CSV (one row per value) and LaTeX (pure)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from pos_agent.bench.report.paper.layout import Entry, PaperTable, Value


def value_text(value: Value, *, marks: bool = True) -> str:
    """`ours [low, high] n=N · paper P (Δ D)` and its footnote marks; `-` for no value."""
    if value.ours is None:
        text = "-"
    else:
        text = _number(value.ours, value.unit)
        if value.interval is not None:
            low, high = value.interval
            text += f" [{low:.1f}, {high:.1f}]"
        if value.n and value.unit != "pp":
            text += f" n={value.n}"
    if value.paper is not None:
        diff = value.diff
        text += f" · paper {value.paper:,.2f}"
        if diff is not None:
            text += f" ({diff:+.1f})"
    if marks and value.notes:
        text += " [" + ",".join(str(n) for n in value.notes) + "]"
    return text


def _number(x: float, unit: str) -> str:
    return f"{x:.1f}" if unit in ("%", "pp") else f"{x:,.1f}"


def entry_text(entry: Entry) -> str:
    if entry is None:
        return "-"
    if isinstance(entry, Value):
        return value_text(entry)
    return entry


def render_markdown(
    tables: Sequence[PaperTable], *, sources: Sequence[str], plots: Sequence[str]
) -> str:
    lines = ["# The paper's tables, beside this run's", ""]
    if sources:
        lines += ["Runs: " + ", ".join(f"`{s}`" for s in sources), ""]
    for table in tables:
        lines += [_markdown_table(table), ""]
    if plots:
        lines += ["## Figures", ""]
        lines += [f"![{p.rsplit('.', 1)[0]}]({p})" for p in plots]
        lines.append("")
    return "\n".join(lines)


def _markdown_table(table: PaperTable) -> str:
    lines = [f"## {table.title}", ""]
    header = ["", *table.columns]
    if table.groups:
        names = [""]
        for label, span in table.groups:
            columns = table.columns[len(names) - 1 : len(names) - 1 + span]
            names += [f"{label}: {c}" if label else c for c in columns]
        if len(names) == len(header):
            header = names
    lines.append("| " + " | ".join(_md(h) for h in header) + " |")
    lines.append("|" + "---|" * len(header))
    for label, entries in table.rows:
        lines.append("| " + " | ".join(_md(t) for t in [label, *map(entry_text, entries)]) + " |")
    if table.note:
        lines += ["", f"_{table.note}_"]
    if table.footnotes:
        lines.append("")
        lines += [f"[{i}] {text}  " for i, text in enumerate(table.footnotes, 1)]
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table_csv(table: PaperTable) -> str:
    """One row per value: the row, the group and column, ours, its interval and n, the
    paper's value, the difference and the footnotes (text)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [
            "row",
            "group",
            "column",
            "ours",
            "ci_low",
            "ci_high",
            "n",
            "paper",
            "diff",
            "unit",
            "notes",
        ]
    )
    groups = _group_of_columns(table)
    for label, entries in table.rows:
        for column, group, entry in zip(table.columns, groups, entries, strict=True):
            if isinstance(entry, Value):
                low, high = entry.interval or (None, None)
                notes = "; ".join(table.footnotes[n - 1] for n in entry.notes)
                writer.writerow(
                    [label, group, column, _csv(entry.ours), _csv(low), _csv(high), entry.n,
                     _csv(entry.paper), _csv(entry.diff), entry.unit, notes]
                )  # fmt: skip
            else:
                writer.writerow([label, group, column, entry or "", "", "", "", "", "", "", ""])
    return buffer.getvalue()


def _csv(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}" if abs(x) < 1000 else f"{x:.1f}"


def _group_of_columns(table: PaperTable) -> list[str]:
    out: list[str] = []
    for label, span in table.groups:
        out += [label] * span
    return (out + [""] * len(table.columns))[: len(table.columns)]


_LATEX = str.maketrans({"&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$"})


def table_latex(table: PaperTable) -> str:
    """A booktabs tabular: ours with its interval, the paper's value below in brackets."""
    cols = "l" + "c" * len(table.columns)
    lines = [
        f"% {table.title}",
        r"\begin{tabular}{" + cols + "}",
        r"\toprule",
    ]
    if table.groups:
        spans = " & ".join(
            rf"\multicolumn{{{span}}}{{c}}{{{label.translate(_LATEX)}}}"
            for label, span in table.groups
        )
        lines.append(f" & {spans} \\\\")
    lines.append(" & ".join(["", *(c.translate(_LATEX) for c in table.columns)]) + r" \\")
    lines.append(r"\midrule")
    for label, entries in table.rows:
        cells = [label.translate(_LATEX), *(_latex_entry(e) for e in entries)]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    for i, text in enumerate(table.footnotes, 1):
        lines.append(f"% [{i}] {text}")
    return "\n".join(lines) + "\n"


def _latex_entry(entry: Entry) -> str:
    if not isinstance(entry, Value):
        return (entry or "-").translate(_LATEX)
    if entry.ours is None:
        text = "--"
    else:
        text = _number(entry.ours, entry.unit)
        if entry.interval is not None:
            text += rf"{{\scriptsize [{entry.interval[0]:.1f}, {entry.interval[1]:.1f}]}}"
    if entry.paper is not None:
        text += rf" {{\scriptsize ({entry.paper:.2f})}}"
    if entry.notes:
        text += r"\textsuperscript{" + ",".join(str(n) for n in entry.notes) + "}"
    return text
