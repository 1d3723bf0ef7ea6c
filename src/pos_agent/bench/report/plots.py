"""The report's figures as PNG files, drawn with matplotlib's Agg canvas (no display needed).

Each figure is one function `(figure, data, colours) -> bool` (False: nothing to draw);
`FIGURES` lists them with their file stems. Adding a figure is one function and one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pos_agent.bench.report.files import save_figure
from pos_agent.bench.report.stats import PATTERNS, Rate, ReportData
from pos_agent.bench.report.tables import context_text, pos_vs_baseline_table


def write_plots(data: ReportData, out_dir: Path) -> list[Path]:
    """PNG figures (matplotlib's Agg canvas: no display needed); plots without data are skipped."""
    # matplotlib is imported here, not at the top, so `pos --help` stays fast.
    from matplotlib.figure import Figure

    colours = _method_colours(data.methods)
    written = []
    for name, draw in FIGURES:
        figure = Figure(figsize=(8, 4.5), dpi=110, layout="constrained")
        if draw(figure, data, colours):
            written.append(save_figure(figure, out_dir / f"{name}.png"))
    return written


def _method_colours(methods: Sequence[str]) -> dict[str, str]:
    palette = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#7f7f7f",
        "#bcbd22",
        "#17becf",
    ]
    return {m: palette[i % len(palette)] for i, m in enumerate(methods)}


def _plot_success(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    envs = data.envs
    groups = envs + (["all"] if len(envs) > 1 else [])
    if not groups or not data.methods:
        return False
    axes = figure.add_subplot()
    width = 0.8 / len(data.methods)
    for i, method in enumerate(data.methods):
        stats = data.method(method)
        rates = [stats.success if g == "all" else stats.env_rate(g) for g in groups]
        xs = [g + (i - (len(data.methods) - 1) / 2) * width for g in range(len(groups))]
        heights = [100 * (r.value or 0.0) for r in rates]
        bars = axes.bar(xs, heights, width, label=method, color=colours[method])
        labels = [f"{h:.0f}%\nn={r.n}" if r.n else "" for h, r in zip(heights, rates, strict=True)]
        axes.bar_label(bars, labels=labels, fontsize=7, padding=2)
    axes.set_xticks(range(len(groups)), groups)
    axes.set_ylim(0, 115)
    axes.set_ylabel("success rate (%)")
    axes.set_title("Success rate per benchmark")
    axes.legend(fontsize=8, loc="upper right")
    return True


def _plot_tokens(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    if not data.roles:
        return False
    axes = figure.add_subplot()
    role_colours = _method_colours(data.roles)
    bottoms = [0.0] * len(data.methods)
    for role in data.roles:
        heights = []
        for method in data.methods:
            tokens = data.method(method).tokens
            prompt = tokens.mean(tokens.prompt, role) or 0.0
            completion = tokens.mean(tokens.completion, role) or 0.0
            heights.append(prompt + completion)
        axes.bar(data.methods, heights, 0.6, bottom=bottoms, label=role, color=role_colours[role])
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, total in enumerate(bottoms):
        axes.annotate(f"{total:.0f}", (x, total), ha="center", va="bottom", fontsize=8)
    axes.set_ylabel("tokens per episode (prompt + completion)")
    axes.set_title("Tokens per role per episode")
    axes.legend(fontsize=8)
    return True


def _plot_trapping(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    trapping = {m: data.method(m).trapping for m in data.methods}
    measured = [m for m, trap in trapping.items() if trap.measured and trap.incidence.n]
    if not measured:
        return False
    left, right = figure.subplots(1, 2)
    incidence = [100 * (trapping[m].incidence.value or 0.0) for m in measured]
    bars = left.bar(measured, incidence, 0.6, color=[colours[m] for m in measured])
    left.bar_label(bars, labels=[f"{v:.0f}%" for v in incidence], fontsize=8)
    left.set_ylim(0, 110)
    left.set_ylabel("episodes with a trapped step (%)")
    left.set_title("Trapping incidence")
    pattern_colours = {"static": "#d62728", "cycle": "#ff7f0e", "drift": "#9467bd", "none": "#999"}
    bottoms = [0.0] * len(measured)
    for pattern in PATTERNS:
        shares = []
        for m in measured:
            total = sum(trapping[m].patterns.values())
            shares.append(100 * trapping[m].patterns[pattern] / total if total else 0.0)
        right.bar(
            measured, shares, 0.6, bottom=bottoms, label=pattern, color=pattern_colours[pattern]
        )
        bottoms = [b + s for b, s in zip(bottoms, shares, strict=True)]
    right.set_ylim(0, 110)
    right.set_ylabel("share of trapped steps (%)")
    right.set_title("Pattern distribution")
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for axes in (left, right):
        axes.tick_params(axis="x", labelrotation=20, labelsize=8)
    return True


def _plot_context(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    values = data.context_values
    if not values:
        return False
    numeric = all(isinstance(v, float) for v in values)
    axes = figure.add_subplot()
    positions = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
    for method in data.methods:
        per = data.method(method).by_context
        points = [(positions[v], 100 * (per[v].value or 0.0), per[v].n) for v in values if v in per]
        if points:
            xs, ys, _ = zip(*points, strict=True)
            axes.plot(xs, ys, marker="o", label=method, color=colours[method])
            for x, y, n in points:  # each point's denominator
                axes.annotate(
                    f"n={n}",
                    (x, y),
                    textcoords="offset points",
                    xytext=(3, 3),
                    fontsize=6,
                    color=colours[method],
                )
    if not numeric:
        axes.set_xticks(list(positions.values()), [str(v) for v in values])
    elif float(values[0]) > 0 and float(values[-1]) / float(values[0]) >= 8:
        axes.set_xscale("log", base=2)  # context lengths usually double from one to the next
        axes.set_xticks([float(v) for v in values], [context_text(v) for v in values])
        axes.minorticks_off()
    axes.set_ylim(-5, 105)
    axes.set_xlabel(data.context_field)
    axes.set_ylabel("success rate (%)")
    axes.set_title(f"Success rate against {data.context_field}")
    axes.legend(fontsize=8)
    return True


def _plot_pos_vs_baseline(figure: Any, data: ReportData, colours: dict[str, str]) -> bool:
    """Figure 1 (left): per benchmark and backbone, PoS beside the strongest baseline."""
    table = pos_vs_baseline_table(data)
    if table is None:
        return False
    axes = figure.add_subplot()
    groups = [f"{row[0]}\n{row[1]}" for row in table.rows]
    for offset, rate_at, name_at, colour in ((-0.2, 3, 2, "#d62728"), (0.2, 5, 4, "#7f7f7f")):
        rates = [row[rate_at] for row in table.rows]
        heights = [100 * (r.value or 0.0) if isinstance(r, Rate) else 0.0 for r in rates]
        xs = [i + offset for i in range(len(groups))]
        bars = axes.bar(xs, heights, 0.4, color=colour)
        labels = [f"{row[name_at]}\n{h:.0f}%" for row, h in zip(table.rows, heights, strict=True)]
        axes.bar_label(bars, labels=labels, fontsize=7, padding=2)
    axes.set_xticks(range(len(groups)), groups, fontsize=8)
    axes.set_ylim(0, 120)
    axes.set_ylabel("success rate (%)")
    axes.set_title("PoS against the strongest baseline (Figure 1, left)")
    return True


Draw = Callable[[Any, ReportData, dict[str, str]], bool]
FIGURES: list[tuple[str, Draw]] = [
    ("success", _plot_success),
    ("pos_vs_baseline", _plot_pos_vs_baseline),
    ("tokens", _plot_tokens),
    ("trapping", _plot_trapping),
    ("context_length", _plot_context),
]
