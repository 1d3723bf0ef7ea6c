"""`eval`: run every detector over a corpus and write the table (markdown, CSV) and a figure."""

from __future__ import annotations

import csv
import io
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pos_agent.trace import write_text_atomic
from pos_agent.trapbench.corpus import CORPUS_FILE
from pos_agent.trapbench.detectors import Detector, all_detectors
from pos_agent.trapbench.metrics import TRAP_KINDS, DetectorScore, LabelledRun, score_runs
from pos_agent.trapbench.records import Trajectory, load_trajectories

# The targets for `improved` on oracle beliefs.
TARGET_RECALL = 0.97
TARGET_NEW_STARTS = 1.0
TARGET_DELAY = 3
TARGET_PATTERN = 0.80


@dataclass(frozen=True, slots=True)
class DetectorRow:
    name: str
    score: DetectorScore
    seconds: float


@dataclass(frozen=True, slots=True)
class Evaluation:
    rows: list[DetectorRow]
    trajectories: int
    steps: int
    segments: Counter[str]
    games: int


def load_corpus(folder: Path) -> list[Trajectory]:
    path = folder / CORPUS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: build the corpus first with `pos trapbench make --out {folder}` "
            "(an interrupted make is resumed by running it again)"
        )
    return load_trajectories(path)


def run_detector(detector: Detector, trajectories: Sequence[Trajectory]) -> list[LabelledRun]:
    """The detector's alarms on every trajectory, with the labels to score them against."""
    runs = []
    for trajectory in trajectories:
        detector.start(trajectory)
        alarms: list[bool] = []
        patterns: list[str | None] = []
        for step, world in zip(trajectory.steps, trajectory.worlds(), strict=True):
            alarm = detector.step(step, world)
            alarms.append(alarm.on)
            patterns.append(alarm.pattern if alarm.on else None)
        runs.append(
            LabelledRun(
                labels=tuple(s.label for s in trajectory.steps),
                segments=tuple((s.kind, s.start - 1, s.end - 1) for s in trajectory.segments),
                alarms=tuple(alarms),
                patterns=tuple(patterns),
                clean=trajectory.kind == "clean",
            )
        )
    return runs


def evaluate(
    trajectories: Sequence[Trajectory],
    detectors: Sequence[Detector] | None = None,
    on_detector: Callable[[str], None] | None = None,
) -> Evaluation:
    rows = []
    for detector in detectors or all_detectors():
        if on_detector is not None:
            on_detector(detector.name)
        started = time.perf_counter()
        runs = run_detector(detector, trajectories)
        rows.append(DetectorRow(detector.name, score_runs(runs), time.perf_counter() - started))
    return Evaluation(
        rows=rows,
        trajectories=len(trajectories),
        steps=sum(len(t.steps) for t in trajectories),
        segments=Counter(s.kind for t in trajectories for s in t.segments),
        games=len({t.game for t in trajectories}),
    )


COLUMNS = (
    "detector",
    "static",
    "cycle",
    "drift",
    "all",
    "median delay",
    "false alarms /100",
    "new alarm starts /100",
    "pattern accuracy",
    "clean runs alarmed",
    "exploration alarmed",
)


def _cells(row: DetectorRow) -> list[str]:
    score = row.score
    delay = score.median_delay
    return [
        row.name,
        *(f"{score.recall(k):.2f}" for k in TRAP_KINDS),
        f"{score.recall():.2f}",
        "-" if delay is None else f"{delay:g}",
        f"{score.false_alarms_per_100:.1f}",
        f"{score.new_starts_per_100:.1f}",
        f"{score.pattern_accuracy:.2f}",
        f"{score.clean_alarmed_share:.2f}",
        f"{score.explore_alarmed_share:.2f}",
    ]


def markdown_table(evaluation: Evaluation) -> str:
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in evaluation.rows]
    return "\n".join(lines)


def summary_line(evaluation: Evaluation) -> str:
    segments = ", ".join(f"{k} {evaluation.segments.get(k, 0)}" for k in (*TRAP_KINDS, "explore"))
    return (
        f"{evaluation.games} games, {evaluation.trajectories} trajectories, "
        f"{evaluation.steps} steps; segments: {segments}"
    )


def target_check(evaluation: Evaluation, name: str = "improved · oracle belief") -> list[str]:
    """One line per target of the issue, for the `improved` row on oracle beliefs."""
    row = next((r for r in evaluation.rows if r.name == name), None)
    if row is None:
        return []
    score = row.score
    delay = score.median_delay
    checks = [
        (
            f"recall >= {TARGET_RECALL} for each pattern",
            all(score.recall(k) >= TARGET_RECALL for k in TRAP_KINDS),
            ", ".join(f"{k} {score.recall(k):.3f}" for k in TRAP_KINDS),
        ),
        (
            f"new false-alarm starts <= {TARGET_NEW_STARTS} per 100 non-trap steps",
            score.new_starts_per_100 <= TARGET_NEW_STARTS,
            f"{score.new_starts_per_100:.2f}",
        ),
        (
            f"median delay <= {TARGET_DELAY} steps",
            delay is not None and delay <= TARGET_DELAY,
            "-" if delay is None else f"{delay:g}",
        ),
        (
            f"pattern named right >= {TARGET_PATTERN:.0%} of detected traps",
            score.pattern_accuracy >= TARGET_PATTERN,
            f"{score.pattern_accuracy:.3f}",
        ),
    ]
    return [f"{'met' if ok else 'NOT MET'}: {what} ({value})" for what, ok, value in checks]


def csv_text(evaluation: Evaluation) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        [
            "detector",
            "recall_static",
            "recall_cycle",
            "recall_drift",
            "recall_all",
            "median_delay",
            "false_alarms_per_100",
            "new_alarm_starts_per_100",
            "pattern_accuracy",
            "clean_runs_alarmed",
            "exploration_alarmed",
            "segments_static",
            "segments_cycle",
            "segments_drift",
            "non_trap_steps",
            "seconds",
        ]
    )
    for row in evaluation.rows:
        s = row.score
        writer.writerow(
            [
                row.name,
                *(round(s.recall(k), 4) for k in TRAP_KINDS),
                round(s.recall(), 4),
                "" if s.median_delay is None else s.median_delay,
                round(s.false_alarms_per_100, 3),
                round(s.new_starts_per_100, 3),
                round(s.pattern_accuracy, 4),
                round(s.clean_alarmed_share, 4),
                round(s.explore_alarmed_share, 4),
                *(s.segments[k] for k in TRAP_KINDS),
                s.non_trap_steps,
                round(row.seconds, 3),
            ]
        )
    return buffer.getvalue()


def write_figure(evaluation: Evaluation, path: Path) -> None:
    """Recall per pattern and new false-alarm starts per detector, as one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [row.name for row in evaluation.rows]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 1.3]}
    )
    width = 0.26
    for offset, kind in enumerate(TRAP_KINDS):
        positions = [i + (offset - 1) * width for i in range(len(names))]
        left.bar(positions, [r.score.recall(kind) for r in evaluation.rows], width, label=kind)
    left.axhline(TARGET_RECALL, color="black", linewidth=0.8, linestyle="--")
    left.set_xticks(range(len(names)), names, rotation=25, ha="right", fontsize=8)
    left.set_ylim(0, 1.05)
    left.set_ylabel("recall")
    left.set_title("Trap recall per pattern")
    left.legend(fontsize=8)
    right.barh(names[::-1], [r.score.new_starts_per_100 for r in evaluation.rows][::-1])
    right.axvline(TARGET_NEW_STARTS, color="black", linewidth=0.8, linestyle="--")
    right.set_xlabel("new alarm starts per 100 non-trap steps")
    right.tick_params(axis="y", labelsize=8)
    fig.suptitle(summary_line(evaluation), fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(temporary, dpi=120)
    plt.close(fig)
    temporary.replace(path)


def write_outputs(evaluation: Evaluation, folder: Path) -> dict[str, Path]:
    """table.md, table.csv and table.png in `folder`."""
    paths = {
        "markdown": folder / "table.md",
        "csv": folder / "table.csv",
        "figure": folder / "table.png",
    }
    write_text_atomic(
        paths["markdown"], summary_line(evaluation) + "\n\n" + markdown_table(evaluation) + "\n"
    )
    write_text_atomic(paths["csv"], csv_text(evaluation))
    write_figure(evaluation, paths["figure"])
    return paths
