"""The paper's Figures 1 (left), 3 and 4 from the run's cells, as PNG (matplotlib's Agg canvas).

- figure1: per benchmark and backbone, PoS and the strongest baseline (95% intervals), with the
  paper's published values of the same two methods as markers;
- figure3: trapping incidence of the methods that run the health check, and the distribution
  of the diagnosed patterns over trapped steps (the paper's figure is not in its tables: ours
  only);
- figure4: LOCA-Bench success against context length, per method (ours only).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pos_agent.agents.methods import FULL_POS, METHODS
from pos_agent.bench.paper import BENCHMARKS, published
from pos_agent.bench.report.files import save_figure
from pos_agent.bench.report.paper.cells import PaperData, context_length
from pos_agent.bench.report.paper.tables import rate, strongest_baseline, success
from pos_agent.bench.report.stats import PATTERNS


def write_figures(data: PaperData, out_dir: Path) -> list[Path]:
    from matplotlib.figure import Figure

    written = []
    for name, draw in FIGURES:
        figure = Figure(figsize=(9, 4.5), dpi=110, layout="constrained")
        if draw(figure, data):
            written.append(save_figure(figure, out_dir / f"{name}.png"))
    return written


def _figure1(figure: Any, data: PaperData) -> bool:
    groups, bars = [], []
    paper = published()
    for backbone in data.backbones:
        for benchmark in BENCHMARKS:
            pos = data.cell(backbone.label, benchmark.key, FULL_POS)
            best = strongest_baseline(data, backbone.label, benchmark.key)
            if pos is None or best is None or not pos.scored:
                continue
            groups.append(f"{benchmark.column}\n{backbone.label}")
            pair = []
            for cell in (pos, best):
                value = rate(list(cell.outcomes.values()), success)
                published_value = paper.table1_value(backbone.paper, cell.method, benchmark.column)
                pair.append((cell.method, value, published_value))
            bars.append(pair)
    if not groups:
        return False
    axes = figure.add_subplot()
    for side, (offset, colour) in enumerate(((-0.2, "#d62728"), (0.2, "#7f7f7f"))):
        for x, pair in enumerate(bars):
            method, value, published_value = pair[side]
            height = value.ours or 0.0
            low, high = value.interval or (height, height)
            axes.bar(x + offset, height, 0.38, color=colour,
                     yerr=[[height - low], [high - height]], capsize=3)  # fmt: skip
            axes.annotate(method, (x + offset, 2), ha="center", fontsize=6, rotation=90)
            if published_value is not None:
                axes.plot([x + offset], [published_value], marker="D", color="black", markersize=4)
    axes.set_xticks(range(len(groups)), groups, fontsize=7)
    axes.set_ylim(0, 105)
    axes.set_ylabel("success (%)")
    axes.set_title("PoS (red) against the strongest baseline (grey); diamonds: the paper's values")
    return True


def _figure3(figure: Any, data: PaperData) -> bool:
    incidence: dict[str, list[bool]] = {}
    patterns: dict[str, Counter[str]] = {}
    for (_, _, method), cell in data.cells.items():
        if not METHODS.get(method) or not METHODS[method].health_checked:
            continue
        for outcome in cell.outcomes.values():
            incidence.setdefault(method, []).append(outcome.result.trapped_steps > 0)
            patterns.setdefault(method, Counter()).update(
                {p: n for p, n in outcome.result.patterns.items() if n > 0}
            )
    if not incidence:
        return False
    left, right = figure.subplots(1, 2)
    methods = list(incidence)
    shares = [100 * sum(v) / len(v) for v in incidence.values()]
    left.bar(methods, shares, 0.6, color="#1f77b4")
    left.set_ylim(0, 105)
    left.set_ylabel("episodes with a trapped step (%)")
    left.set_title("Trapping incidence")
    bottoms = [0.0] * len(methods)
    for pattern in PATTERNS:
        heights = []
        for method in methods:
            total = sum(patterns[method].values())
            heights.append(100 * patterns[method][pattern] / total if total else 0.0)
        right.bar(methods, heights, 0.6, bottom=bottoms, label=pattern)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    right.set_ylim(0, 105)
    right.set_ylabel("share of trapped steps (%)")
    right.set_title("Pattern distribution")
    right.legend(fontsize=7)
    for axes in (left, right):
        axes.tick_params(axis="x", labelrotation=20, labelsize=7)
    return True


def _figure4(figure: Any, data: PaperData) -> bool:
    series: dict[str, dict[float, list[float]]] = {}
    for (backbone, benchmark, method), cell in data.cells.items():
        if benchmark != "loca":
            continue
        for outcome in cell.outcomes.values():
            length = context_length(outcome)
            if length is not None:
                key = f"{method} · {backbone}" if len(data.backbones) > 1 else method
                series.setdefault(key, {}).setdefault(length, []).append(success(outcome))
    if not series:
        return False
    axes = figure.add_subplot()
    for label, points in series.items():
        xs = sorted(points)
        axes.plot(xs, [100 * sum(points[x]) / len(points[x]) for x in xs], marker="o", label=label)
    axes.set_xscale("log", base=2)
    axes.set_ylim(-5, 105)
    axes.set_xlabel("LOCA-Bench environment length (tokens)")
    axes.set_ylabel("success (%)")
    axes.set_title("LOCA-Bench success against context length")
    axes.legend(fontsize=6)
    return True


FIGURES: list[tuple[str, Callable[[Any, PaperData], bool]]] = [
    ("figure1", _figure1),
    ("figure3", _figure3),
    ("figure4", _figure4),
]
