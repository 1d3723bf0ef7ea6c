"""query_metrics: metric series before and after the baseline split."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from pos_agent.envs.rca.telemetry import CaseTelemetry, ToolFailure, in_window
from pos_agent.envs.rca.text import MAX_OUTPUT_CHARS, clock, number, ratio
from pos_agent.envs.rca.tools.base import RcaTool
from pos_agent.envs.rca.tools.params import BASELINE_END, END, ENTITY, START
from pos_agent.envs.tools import ToolSpec, clip_lines, object_schema, string_param

# A series longer than this is sampled evenly (its peak always kept).
MAX_SERIES_POINTS = 40


@dataclass(frozen=True)
class MetricSummary:
    """One (entity, metric) series before and after the baseline split."""

    entity: str
    metric: str
    baseline_mean: float | None
    baseline_std: float
    incident_mean: float | None
    incident_peak: float | None
    peak_time: int | None
    points: int

    @property
    def change(self) -> float:
        """How unusual the incident peak is against the baseline (a z-like score)."""
        if self.baseline_mean is None or self.incident_peak is None:
            return 0.0
        spread = self.baseline_std + 0.05 * abs(self.baseline_mean) + 1e-9
        return (self.incident_peak - self.baseline_mean) / spread


def summaries(
    data: CaseTelemetry,
    keep: Callable[[str, str], bool],
    low: int | None,
    high: int | None,
    split: int | None,
) -> list[MetricSummary]:
    """A summary of every kept (entity, metric) series inside [low, high]."""
    metrics = data.table("metrics")
    series: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for key, name, value, time in metrics.rows_of("entity_name", "metric", "value", "time"):
        if value is None or time is None or not keep(key, name):
            continue
        if not in_window(time, low, high) or (isinstance(value, float) and math.isnan(value)):
            continue
        series[(key, name)].append((time, float(value)))
    found = []
    for (key, name), points in series.items():
        points.sort()
        cut = split if split is not None else points[len(points) // 2][0]
        before = [v for t, v in points if t < cut]
        after = [(t, v) for t, v in points if t >= cut]
        peak = max(after, key=lambda p: p[1]) if after else None
        found.append(
            MetricSummary(
                entity=key,
                metric=name,
                baseline_mean=statistics.fmean(before) if before else None,
                baseline_std=statistics.pstdev(before) if len(before) > 1 else 0.0,
                incident_mean=statistics.fmean(v for _, v in after) if after else None,
                incident_peak=peak[1] if peak else None,
                peak_time=peak[0] if peak else None,
                points=len(points),
            )
        )
    return found


def query_metrics(
    data: CaseTelemetry,
    entity: str | None = None,
    metric: str | None = None,
    start: str | None = None,
    end: str | None = None,
    baseline_end: str | None = None,
) -> str:
    metrics = data.table("metrics")
    if not metrics.rows:
        return "This case has no metrics."
    if not entity and not metric:
        raise ToolFailure(
            "query_metrics needs an entity, a metric, or both (list_entities and "
            "list_metric_names show the names)."
        )
    low, high = data.window(start, end)
    split = data.split_us(baseline_end)
    split_text = f"baseline before {clock(split)}" if split else "baseline = first half"
    available = sorted(set(metrics.col("metric")))
    name = data.resolve_metric(metric, available) if metric else None
    if entity:
        resolved = data.resolve_entity(entity)
        members = data.members(resolved)
        found = summaries(
            data, lambda k, n: k in members and (name is None or n == name), low, high, split
        )
        if not found:
            what = f" for metric {name}" if name else ""
            return f"No metric points for {resolved}{what} in that window."
        if name is not None:
            return _series(data, resolved, name, members, (low, high), split_text, found)
        found.sort(key=lambda s: (-abs(s.change), s.metric))
        lines = [f"Metrics of {resolved} ({split_text}; most changed first):"]
        lines += [_summary_line(s, with_entity=len(members) > 1) for s in found]
        return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="metrics")
    found = summaries(data, lambda k, n: n == name, low, high, split)
    found.sort(key=lambda s: (-s.change, s.entity))
    lines = [f"{name} by entity ({split_text}; biggest rise first):"]
    lines += [_summary_line(s, with_entity=True, with_metric=False) for s in found]
    return clip_lines(lines, max_lines=25, max_chars=MAX_OUTPUT_CHARS, what="entities")


def _summary_line(s: MetricSummary, *, with_entity: bool, with_metric: bool = True) -> str:
    label = " / ".join(
        part for part, wanted in ((s.entity, with_entity), (s.metric, with_metric)) if wanted
    )
    return (
        f"  {label}: baseline {number(s.baseline_mean)}, after mean {number(s.incident_mean)}, "
        f"peak {number(s.incident_peak)} at {clock(s.peak_time)} "
        f"({ratio(s.incident_peak, s.baseline_mean)}, score {s.change:.1f})"
    )


def _series(
    data: CaseTelemetry,
    entity: str,
    name: str,
    members: set[str],
    window: tuple[int | None, int | None],
    split_text: str,
    found: list[MetricSummary],
) -> str:
    metrics = data.table("metrics")
    low, high = window
    points = sorted(
        (time, key, float(value))
        for key, metric, value, time in metrics.rows_of("entity_name", "metric", "value", "time")
        if key in members
        and metric == name
        and value is not None
        and time is not None
        and in_window(time, low, high)
    )
    shown = points
    if len(points) > MAX_SERIES_POINTS:
        step = len(points) / MAX_SERIES_POINTS
        picked = {int(i * step) for i in range(MAX_SERIES_POINTS)}
        picked.add(max(range(len(points)), key=lambda i: points[i][2]))
        shown = [points[i] for i in sorted(picked)]
    lines = [f"{entity} / {name} ({split_text}):"]
    lines += [_summary_line(s, with_entity=len(members) > 1) for s in found]
    several = len({key for _, key, _ in points}) > 1
    lines.append(f"Series ({len(points)} points{', sampled' if len(shown) < len(points) else ''}):")
    lines += [
        f"  {clock(time)} {number(value)}" + (f" [{key}]" if several else "")
        for time, key, value in shown
    ]
    return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="points")


METRICS_TOOL = RcaTool(
    ToolSpec(
        "query_metrics",
        "Metrics before vs after the baseline split (3 min before the alert unless "
        "baseline_end is given). entity only: a summary of each of its metrics; entity and "
        "metric: that series; metric only: the entities whose metric changed most.",
        object_schema(
            entity=ENTITY,
            metric=string_param("A metric name (or a unique part of one)."),
            start=START,
            end=END,
            baseline_end=BASELINE_END,
        ),
    ),
    query_metrics,
)
