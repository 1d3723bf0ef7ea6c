"""The shape of a table in the paper's layout: values with their interval, the published value
beside them and the difference, grouped columns, and numbered footnotes (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pos_agent.bench.paper import CLINDIAG_HALVES, Benchmark
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
    """The footnotes a cell needs: missing, substituted, fewer cases than the paper's (and, on
    ClinDiag, a half of the paper's not run), unscored cases, and stand-ins for the paper's
    models."""
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
    marks += halves_missing(cell, benchmark, notes)
    if cell.unscored:
        left = ", ".join(f"{n} {s}" for s, n in sorted(cell.unscored.items()))
        marks.append(notes.mark(f"unscored cases left out of the rate: {left}"))
    if cell.offline_env_models:
        roles = " and ".join(sorted(cell.offline_env_models))
        marks.append(notes.mark(f"ClinDiag's {roles}: the offline stand-in, not the paper's LLM"))
    if cell.lexical_scorer:
        marks.append(notes.mark("PACE scored relevance with TF-IDF, not the paper's embeddings"))
    return tuple(marks)


def halves_missing(cell: Cell, benchmark: Benchmark, notes: Footnotes) -> list[int]:
    """ClinDiag: a footnote for each of the paper's halves (Common, Rare) the cell has no
    recorded case of, when it has cases of the other (its overall is then over one half)."""
    if benchmark.key != "clindiag" or not cell.categories:
        return []
    run = [half for half in CLINDIAG_HALVES if cell.categories.get(half)]
    if not run:
        return []
    return [
        notes.mark(
            f"ClinDiag: no {half.title()} case run (only {' and '.join(h.title() for h in run)}); "
            f"the paper's overall is over Common + Rare "
            f"({' + '.join(str(n) for n in CLINDIAG_HALVES.values())})"
        )
        for half in CLINDIAG_HALVES
        if half not in run
    ]
