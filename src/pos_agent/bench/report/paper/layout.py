"""The shape of a table in the paper's layout: values with their interval, the published value
beside them and the difference, grouped columns, and numbered footnotes (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pos_agent.bench.paper import Benchmark
from pos_agent.bench.report.paper.cells import Cell


@dataclass(frozen=True)
class Value:
    """One number of a table: ours (with its interval and n), the paper's, and footnotes."""

    ours: float | None
    interval: tuple[float, float] | None = None
    n: int = 0
    paper: float | None = None
    notes: tuple[int, ...] = ()
    unit: str = "%"
    """% (a rate in percent) or K (thousands of tokens)."""

    @property
    def diff(self) -> float | None:
        if self.ours is None or self.paper is None:
            return None
        return self.ours - self.paper


Entry = Value | str | None


@dataclass
class PaperTable:
    """A table: grouped columns (label, span), rows (a label and one entry per column)."""

    name: str
    """Its file stem (CSV, LaTeX)."""
    title: str
    groups: list[tuple[str, int]]
    columns: list[str]
    rows: list[tuple[str, list[Entry]]]
    footnotes: list[str] = field(default_factory=list)
    note: str = ""


class Footnotes:
    """Numbered footnotes of one table, each text once."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def mark(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1


def cell_notes(cell: Cell | None, benchmark: Benchmark, notes: Footnotes) -> tuple[int, ...]:
    """The footnotes a cell needs: missing, substituted, fewer cases than the paper's, unscored
    cases, and stand-ins for the paper's models."""
    if cell is None or (cell.listed == 0 and cell.scored == 0):
        return (notes.mark("missing: not run"),)
    marks = []
    if cell.scored == 0:
        left = ", ".join(f"{n} {s}" for s, n in sorted(cell.unscored.items())) or "none recorded"
        marks.append(notes.mark(f"missing: no scored case ({left})"))
    for env in sorted(cell.envs):
        if env in benchmark.substitute:
            marks.append(notes.mark(f"substituted: {benchmark.substitute[env]}"))
    listed = max(cell.listed, cell.scored + sum(cell.unscored.values()))
    if listed < benchmark.paper_cases:
        marks.append(
            notes.mark(
                f"{benchmark.title}: {listed} case(s) run, fewer than the paper's "
                f"{benchmark.paper_cases}"
            )
        )
    if cell.unscored:
        left = ", ".join(f"{n} {s}" for s, n in sorted(cell.unscored.items()))
        marks.append(notes.mark(f"unscored cases left out of the rate: {left}"))
    if cell.offline_env_models:
        roles = " and ".join(sorted(cell.offline_env_models))
        marks.append(notes.mark(f"ClinDiag's {roles}: the offline stand-in, not the paper's LLM"))
    if cell.lexical_scorer:
        marks.append(notes.mark("PACE scored relevance with TF-IDF, not the paper's embeddings"))
    return tuple(marks)
