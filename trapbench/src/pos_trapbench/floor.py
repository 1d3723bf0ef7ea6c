"""The floor of issue 32: on every corpus, `improved` must catch at least what the simplest
rule catches, at no more new alarm starts.

For each table, each `improved` row is checked against the hashed-call rule (the floor itself)
and against every other anchor's rules: met when its recall is at least the anchor's and its
new alarm starts per 100 non-trap steps are at most the anchor's.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from pos_trapbench.anchor_rules import HashedCallRules
from pos_trapbench.evaluate import Evaluation

FLOOR_RULE = HashedCallRules.name


@dataclass(frozen=True, slots=True)
class FloorCheck:
    table: str
    detector: str
    anchor: str
    recall: float
    anchor_recall: float
    new_starts: float
    anchor_new_starts: float

    @property
    def met(self) -> bool:
        return self.recall >= self.anchor_recall and self.new_starts <= self.anchor_new_starts

    def figures(self) -> str:
        recall = "<" if self.recall < self.anchor_recall else ">="
        starts = "<=" if self.new_starts <= self.anchor_new_starts else ">"
        return (
            f"recall {self.recall:.2f} {recall} {self.anchor_recall:.2f}, new starts "
            f"{self.new_starts:.2f} {starts} {self.anchor_new_starts:.2f}"
        )


def is_anchor(name: str) -> bool:
    return not name.startswith(("improved", "paper"))


def floor_checks(evaluation: Evaluation) -> list[FloorCheck]:
    """Each `improved` row of the table against each anchor's row."""
    anchors = [r for r in evaluation.rows if is_anchor(r.name)]
    return [
        FloorCheck(
            evaluation.family,
            row.name,
            anchor.name,
            row.score.recall(),
            anchor.score.recall(),
            row.score.new_starts_per_100,
            anchor.score.new_starts_per_100,
        )
        for row in evaluation.rows
        if row.name.startswith("improved")
        for anchor in anchors
    ]


def floor_lines(evaluation: Evaluation) -> list[str]:
    """Per `improved` row: the floor (against the hashed-call rule), then every anchor."""
    lines = []
    checks = floor_checks(evaluation)
    for detector in dict.fromkeys(c.detector for c in checks):
        mine = [c for c in checks if c.detector == detector]
        prefix = f"floor · {evaluation.family} · {detector}"
        for check in mine:
            if check.anchor == FLOOR_RULE:
                verdict = "met" if check.met else "NOT MET"
                lines.append(f"{prefix}: vs {FLOOR_RULE}: {verdict} ({check.figures()})")
        below = [c for c in mine if not c.met]
        if below:
            named = "; ".join(f"{c.anchor}: {c.figures()}" for c in below)
            lines.append(f"{prefix}: vs every anchor: NOT MET ({named})")
        else:
            lines.append(f"{prefix}: vs every anchor: met")
    return lines


FLOOR_CSV_HEADER = (
    "table",
    "detector",
    "anchor",
    "recall",
    "anchor_recall",
    "new_alarm_starts_per_100",
    "anchor_new_alarm_starts_per_100",
    "met",
)


def floor_csv(evaluations: Sequence[Evaluation]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(FLOOR_CSV_HEADER)
    for evaluation in evaluations:
        for c in floor_checks(evaluation):
            writer.writerow(
                [
                    c.table,
                    c.detector,
                    c.anchor,
                    round(c.recall, 4),
                    round(c.anchor_recall, 4),
                    round(c.new_starts, 3),
                    round(c.anchor_new_starts, 3),
                    c.met,
                ]
            )
    return buffer.getvalue()
