"""The real corpus's tables for `eval`: the generated families' table (recall per loop type,
median delay, alarmed steps and new alarm starts per 100 non-trap steps, productive stretches
alarmed, pattern right, clean runs alarmed) for the whole split and per task kind (text games,
tool agents), every model-free detector side by side; plus the share of productive stretches
alarmed per productive type."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from pos_trapbench.detectors import model_free_detectors
from pos_trapbench.evaluate import DetectorRow, Evaluation, evaluate
from pos_trapbench.metrics import score_runs
from pos_trapbench.real.build import BUILD_FILE
from pos_trapbench.real.corpus import RealRun
from pos_trapbench.real.manifest import PRODUCTIVE_TYPES, STUCK_TYPES, TASK_KINDS, Split

TEST_WARNING = (
    "the test split is for the final measurement: evaluate it once, at the end, and tune on "
    "dev only"
)


def real_table_name(split: Split, kind: str | None = None) -> str:
    return f"real {split}" if kind is None else f"real {split} · {kind}"


def evaluate_real(
    runs: Sequence[RealRun], split: Split, on_detector: Callable[[str], None] | None = None
) -> list[Evaluation]:
    """The whole split's table, then one per task kind present (each detector run once)."""
    by_kind = []
    for kind in TASK_KINDS:
        mine = [r.run for r in runs if r.kind == kind]
        if mine:
            found = evaluate(
                mine, model_free_detectors(), on_detector, family=real_table_name(split, kind)
            )
            by_kind.append(replace(found, kinds=STUCK_TYPES))
    if len(by_kind) < 2:
        return [replace(e, family=real_table_name(split)) for e in by_kind] + by_kind
    return [_combined(by_kind, real_table_name(split)), *by_kind]


def _combined(parts: Sequence[Evaluation], name: str) -> Evaluation:
    rows = []
    for index, row in enumerate(parts[0].rows):
        runs = tuple(r for e in parts for r in e.rows[index].runs)
        seconds = sum(e.rows[index].seconds for e in parts)
        rows.append(DetectorRow(row.name, score_runs(runs), seconds, runs))
    segments: Counter[str] = Counter()
    for part in parts:
        segments.update(part.segments)
    return Evaluation(
        family=name,
        kinds=STUCK_TYPES,
        rows=rows,
        trajectories=sum(e.trajectories for e in parts),
        steps=sum(e.steps for e in parts),
        segments=segments,
    )


def productive_table(evaluation: Evaluation) -> str:
    """Share of productive stretches alarmed, per productive type (stretch counts in the
    header; "-" for a type with none)."""
    first = evaluation.rows[0].score if evaluation.rows else None
    counts = {t: first.productive_segments[t] if first else 0 for t in PRODUCTIVE_TYPES}
    columns = ["detector", *(f"{t} ({counts[t]})" for t in PRODUCTIVE_TYPES), "all"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in evaluation.rows:
        shares = [
            f"{row.score.productive_alarmed_share(t):.0%}" if counts[t] else "-"
            for t in PRODUCTIVE_TYPES
        ]
        every = f"{row.score.productive_alarmed_share():.0%}" if any(counts.values()) else "-"
        lines.append("| " + " | ".join([row.name, *shares, every]) + " |")
    return "\n".join(lines)


def productive_csv(evaluations: Sequence[Evaluation]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(("table", "detector", "type", "stretches", "alarmed", "share"))
    for evaluation in evaluations:
        for row in evaluation.rows:
            s = row.score
            for kind in PRODUCTIVE_TYPES:
                if s.productive_segments[kind]:
                    writer.writerow(
                        [
                            evaluation.family,
                            row.name,
                            kind,
                            s.productive_segments[kind],
                            s.productive_alarmed[kind],
                            round(s.productive_alarmed_share(kind), 4),
                        ]
                    )
    return buffer.getvalue()


def write_productive_figure(evaluations: Sequence[Evaluation], path: Path) -> None:
    """Per real table: the share of productive stretches alarmed per type and detector."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(evaluations), 1, figsize=(12, 4.2 * len(evaluations)), squeeze=False
    )
    for (axis,), evaluation in zip(axes, evaluations, strict=True):
        names = [row.name for row in evaluation.rows]
        width = 0.8 / len(PRODUCTIVE_TYPES)
        for offset, kind in enumerate(PRODUCTIVE_TYPES):
            positions = [
                i + (offset - (len(PRODUCTIVE_TYPES) - 1) / 2) * width for i in range(len(names))
            ]
            values = [r.score.productive_alarmed_share(kind) for r in evaluation.rows]
            axis.bar(positions, values, width, label=kind)
        axis.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
        axis.set_ylim(0, 1.05)
        axis.set_ylabel("productive stretches alarmed")
        axis.set_title(evaluation.family, fontsize=9, loc="left")
        axis.legend(fontsize=7, ncol=len(PRODUCTIVE_TYPES))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(temporary, dpi=110)
    plt.close(fig)
    temporary.replace(path)


def incomplete_note(folder: Path) -> str | None:
    """What the build left out, from the corpus's build.json (None when nothing)."""
    try:
        built = json.loads((folder / BUILD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(built, dict):
        return None
    missing = sum(len(m.get("trajectories", [])) for m in built.get("missing", []))
    unconverted = len(built.get("unconverted", []))
    if not missing and not unconverted:
        return None
    return (
        f"{folder} is incomplete: {missing} trajectories' source files were missing and "
        f"{unconverted} did not convert (see {folder / BUILD_FILE}); the tables cover the rest"
    )
