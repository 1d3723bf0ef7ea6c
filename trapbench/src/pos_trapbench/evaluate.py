"""`eval`: run every detector over each corpus family and write the tables (markdown, CSV) and
a figure.

A corpus folder holds the TextWorld family (`corpus.jsonl`) and the tool-agent family
(`tools/corpus.jsonl`), either or both. Each family gets its own table, with its own trap
kinds as columns; the overall table scores every run of both families together.
"""

from __future__ import annotations

import csv
import io
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pos_agent.trace import write_text_atomic
from pos_trapbench.corpus import CORPUS_FILE
from pos_trapbench.detectors import Detector, all_detectors
from pos_trapbench.metrics import DetectorScore, LabelledRun, score_runs
from pos_trapbench.records import Trajectory, load_trajectories
from pos_trapbench.runs import TEXTWORLD_TRAPS, BenchRun, bench_run
from pos_trapbench.toolagent.corpus import (
    TOOLS_B_FOLDER,
    TOOLS_FOLDER,
    load_tool_trajectories,
    tools_corpus_file,
)
from pos_trapbench.toolagent.records import TOOL_TRAP_KINDS, ToolTrajectory

# The targets for `improved`, per family, with a belief and model-free.
TARGET_RECALL = 0.95
TARGET_NEW_STARTS = 1.0
TARGET_PRODUCTIVE = 0.10
TARGET_DELAY = 3
TARGET_PATTERN = 0.85
TARGETED = ("improved · oracle belief", "improved · model-free")

FAMILY_TRAPS = {"textworld": TEXTWORLD_TRAPS, "tools": TOOL_TRAP_KINDS, "tools-b": TOOL_TRAP_KINDS}
OVERALL = "overall"


@dataclass(frozen=True, slots=True)
class DetectorRow:
    name: str
    score: DetectorScore
    seconds: float
    runs: tuple[LabelledRun, ...] = ()


@dataclass(frozen=True, slots=True)
class Evaluation:
    family: str
    kinds: tuple[str, ...]
    """The trap kinds of the family, in column order."""
    rows: list[DetectorRow]
    trajectories: int
    steps: int
    segments: Counter[str]


def load_corpus(folder: Path) -> list[Trajectory]:
    """The TextWorld family of a corpus folder."""
    path = folder / CORPUS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: build the corpus first with `pos trapbench make --out {folder}` "
            "(an interrupted make is resumed by running it again)"
        )
    return load_trajectories(path)


def load_families(folder: Path) -> dict[str, list[BenchRun]]:
    """Every family found in a corpus folder, as runs; raises FileNotFoundError when none."""
    families: dict[str, list[BenchRun]] = {}
    if (folder / CORPUS_FILE).is_file():
        families["textworld"] = [bench_run(t) for t in load_trajectories(folder / CORPUS_FILE)]
    for name in (TOOLS_FOLDER, TOOLS_B_FOLDER):
        if tools_corpus_file(folder, name).is_file():
            loaded = load_tool_trajectories(tools_corpus_file(folder, name))
            families[name] = [bench_run(t) for t in loaded]
    if not families:
        raise FileNotFoundError(
            f"no corpus in {folder} (neither {CORPUS_FILE} nor {tools_corpus_file(folder)}): "
            f"build it first with `pos trapbench make --out {folder}` (an interrupted make is "
            "resumed by running it again)"
        )
    return families


def run_detector(detector: Detector, runs: Sequence[BenchRun]) -> list[LabelledRun]:
    """The detector's alarms on every run, with the labels to score them against."""
    labelled = []
    for run in runs:
        detector.start(run)
        alarms: list[bool] = []
        patterns: list[str | None] = []
        for step in run.steps:
            alarm = detector.step(step)
            alarms.append(alarm.on)
            patterns.append(alarm.pattern if alarm.on else None)
        labelled.append(
            LabelledRun(
                labels=tuple(s.label for s in run.steps),
                segments=run.segments,
                alarms=tuple(alarms),
                patterns=tuple(patterns),
                clean=run.clean,
            )
        )
    return labelled


def evaluate(
    trajectories: Sequence[Trajectory | ToolTrajectory | BenchRun],
    detectors: Sequence[Detector] | None = None,
    on_detector: Callable[[str], None] | None = None,
    family: str | None = None,
) -> Evaluation:
    """Score every detector on one family's trajectories."""
    runs = [bench_run(t) for t in trajectories]
    family = family or (runs[0].family if runs else "textworld")
    rows = []
    for detector in detectors or all_detectors():
        if on_detector is not None:
            on_detector(f"{family}: {detector.name}")
        started = time.perf_counter()
        labelled = tuple(run_detector(detector, runs))
        rows.append(
            DetectorRow(
                detector.name, score_runs(labelled), time.perf_counter() - started, labelled
            )
        )
    return Evaluation(
        family=family,
        kinds=FAMILY_TRAPS.get(family, TEXTWORLD_TRAPS),
        rows=rows,
        trajectories=len(runs),
        steps=sum(len(r.steps) for r in runs),
        segments=Counter(s.kind for r in runs for s in r.segments),
    )


def overall(evaluations: Sequence[Evaluation]) -> Evaluation:
    """Every family's runs scored together, detector by detector."""
    rows = []
    for index, row in enumerate(evaluations[0].rows):
        runs = tuple(r for e in evaluations for r in e.rows[index].runs)
        seconds = sum(e.rows[index].seconds for e in evaluations)
        rows.append(DetectorRow(row.name, score_runs(runs), seconds, runs))
    segments: Counter[str] = Counter()
    for evaluation in evaluations:
        segments.update(evaluation.segments)
    return Evaluation(
        family=OVERALL,
        kinds=(),
        rows=rows,
        trajectories=sum(e.trajectories for e in evaluations),
        steps=sum(e.steps for e in evaluations),
        segments=segments,
    )


def _columns(evaluation: Evaluation) -> list[str]:
    kinds = list(evaluation.kinds) if evaluation.family != OVERALL else ["worst kind"]
    return [
        "detector",
        *kinds,
        "all",
        "median delay",
        "alarmed steps /100",
        "new alarm starts /100",
        "productive segments alarmed",
        "pattern right",
        "clean runs alarmed",
    ]


def _worst(score: DetectorScore) -> float:
    return min((score.recall(k) for k in score.segments), default=0.0)


def _cells(evaluation: Evaluation, row: DetectorRow) -> list[str]:
    score = row.score
    delay = score.median_delay
    if evaluation.family == OVERALL:
        kinds = [f"{_worst(score):.2f}"]
    else:
        kinds = [f"{score.recall(k):.2f}" if score.segments[k] else "-" for k in evaluation.kinds]
    return [
        row.name,
        *kinds,
        f"{score.recall():.2f}",
        "-" if delay is None else f"{delay:g}",
        f"{score.false_alarms_per_100:.1f}",
        f"{score.new_starts_per_100:.1f}",
        f"{score.productive_alarmed_share():.0%}",
        f"{score.pattern_accuracy:.2f}",
        f"{score.clean_alarmed_share:.0%}",
    ]


def markdown_table(evaluation: Evaluation) -> str:
    columns = _columns(evaluation)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cells(evaluation, row)) + " |" for row in evaluation.rows]
    return "\n".join(lines)


def summary_line(evaluation: Evaluation) -> str:
    segments = ", ".join(f"{k} {n}" for k, n in sorted(evaluation.segments.items()))
    return (
        f"{evaluation.family}: {evaluation.trajectories} trajectories, {evaluation.steps} steps; "
        f"segments: {segments}"
    )


def target_check(evaluation: Evaluation, name: str) -> list[str]:
    """One line per target of the issue for one detector row of one table."""
    row = next((r for r in evaluation.rows if r.name == name), None)
    if row is None:
        return []
    score = row.score
    delay = score.median_delay
    kinds = [k for k in score.segments]
    rules = [r for r in evaluation.rows if not r.name.startswith(("improved", "paper"))]
    beaten = [
        r.name
        for r in rules
        if not (
            score.recall() > r.score.recall()
            and score.new_starts_per_100 <= r.score.new_starts_per_100
        )
    ]
    checks = [
        (
            f"recall >= {TARGET_RECALL} for each trap kind",
            all(score.recall(k) >= TARGET_RECALL for k in kinds),
            ", ".join(f"{k} {score.recall(k):.3f}" for k in kinds),
        ),
        (
            f"new alarm starts <= {TARGET_NEW_STARTS} per 100 non-trap steps",
            score.new_starts_per_100 <= TARGET_NEW_STARTS,
            f"{score.new_starts_per_100:.2f}",
        ),
        (
            f"productive segments alarmed <= {TARGET_PRODUCTIVE:.0%}",
            score.productive_alarmed_share() <= TARGET_PRODUCTIVE,
            f"{score.productive_alarmed_share():.1%}",
        ),
        (
            f"pattern right >= {TARGET_PATTERN}",
            score.pattern_accuracy >= TARGET_PATTERN,
            f"{score.pattern_accuracy:.3f}",
        ),
        (
            f"median delay <= {TARGET_DELAY} steps",
            delay is not None and delay <= TARGET_DELAY,
            "-" if delay is None else f"{delay:g}",
        ),
        (
            "more recall than every rule baseline at no more new alarm starts",
            not beaten,
            "all beaten" if not beaten else "not beaten: " + ", ".join(beaten),
        ),
    ]
    return [
        f"{evaluation.family} · {name}: {'met' if ok else 'NOT MET'}: {what} ({value})"
        for what, ok, value in checks
    ]


CSV_HEADER = (
    "family",
    "detector",
    "kind",
    "recall",
    "segments",
    "median_delay",
    "alarmed_steps_per_100",
    "new_alarm_starts_per_100",
    "productive_alarmed",
    "pattern_right",
    "clean_runs_alarmed",
    "non_trap_steps",
    "seconds",
)


def csv_text(evaluations: Sequence[Evaluation]) -> str:
    """One row per family, detector and trap kind, plus one "all" row per family and detector."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_HEADER)
    for evaluation in evaluations:
        for row in evaluation.rows:
            s = row.score
            for kind in [*s.segments, "all"]:
                writer.writerow(
                    [
                        evaluation.family,
                        row.name,
                        kind,
                        round(s.recall(None if kind == "all" else kind), 4),
                        sum(s.segments.values()) if kind == "all" else s.segments[kind],
                        "" if s.median_delay is None else s.median_delay,
                        round(s.false_alarms_per_100, 3),
                        round(s.new_starts_per_100, 3),
                        round(s.productive_alarmed_share(), 4),
                        round(s.pattern_accuracy, 4),
                        round(s.clean_alarmed_share, 4),
                        s.non_trap_steps,
                        round(row.seconds, 3),
                    ]
                )
    return buffer.getvalue()


def write_figure(evaluations: Sequence[Evaluation], path: Path) -> None:
    """Per table: recall per trap kind and new alarm starts per detector, one row of panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(evaluations),
        2,
        figsize=(14, 4.6 * len(evaluations)),
        gridspec_kw={"width_ratios": [3, 1.3]},
        squeeze=False,
    )
    for (left, right), evaluation in zip(axes, evaluations, strict=True):
        names = [row.name for row in evaluation.rows]
        kinds = list(evaluation.kinds) or ["all"]
        width = 0.8 / len(kinds)
        for offset, kind in enumerate(kinds):
            positions = [i + (offset - (len(kinds) - 1) / 2) * width for i in range(len(names))]
            values = [r.score.recall(None if kind == "all" else kind) for r in evaluation.rows]
            left.bar(positions, values, width, label=kind)
        left.axhline(TARGET_RECALL, color="black", linewidth=0.8, linestyle="--")
        left.set_xticks(range(len(names)), names, rotation=25, ha="right", fontsize=8)
        left.set_ylim(0, 1.05)
        left.set_ylabel("recall")
        left.set_title(textwrap.fill(summary_line(evaluation), 110), fontsize=8, loc="left")
        left.legend(fontsize=7, ncol=len(kinds))
        right.barh(names[::-1], [r.score.new_starts_per_100 for r in evaluation.rows][::-1])
        right.axvline(TARGET_NEW_STARTS, color="black", linewidth=0.8, linestyle="--")
        right.set_xlabel("new alarm starts per 100 non-trap steps")
        right.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(temporary, dpi=110)
    plt.close(fig)
    temporary.replace(path)


def tables_text(evaluations: Sequence[Evaluation]) -> str:
    parts = []
    for evaluation in evaluations:
        parts += [f"## {evaluation.family}", "", summary_line(evaluation), ""]
        parts += [markdown_table(evaluation), ""]
    return "\n".join(parts)


def write_outputs(
    evaluations: Sequence[Evaluation], folder: Path, notes: str = ""
) -> dict[str, Path]:
    """table.md, table.csv and table.png in `folder`, every table in each; `notes` (markdown)
    goes at the end of table.md."""
    paths = {
        "markdown": folder / "table.md",
        "csv": folder / "table.csv",
        "figure": folder / "table.png",
    }
    write_text_atomic(paths["markdown"], tables_text(evaluations) + notes)
    write_text_atomic(paths["csv"], csv_text(evaluations))
    write_figure(evaluations, paths["figure"])
    return paths
