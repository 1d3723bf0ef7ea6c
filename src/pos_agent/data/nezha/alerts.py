"""Alerts of a case, derived from the case's own metrics (never from the answer).

Two rules on the entry service's SLO rows, each against the median of the window's rows before
the injection: its `LatencyP90(s)` above 2 x that median, and (where the success rate was
collected) its error rate `100 - SuccessRate(%)` above max(2 x median, 1 point). A rule fires at
a row that crosses (critical above 5 x the median / at 10 points or more, else warning) and
resolves at the next row back under the threshold; it can fire again after that.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from pos_agent.data.nezha.metrics import MetricRow
from pos_agent.data.nezha.upstream import ENTRY_SERVICE

AlertRow = tuple[int, str, str, str]
"""(time in seconds, status, severity, data as a JSON string)."""
DERIVED_FROM = "metrics.parquet (front_service.csv rows)"


@dataclass(frozen=True)
class Rule:
    name: str
    metric: str
    source_metric: str
    describe: str
    value: Callable[[float], float]
    threshold: Callable[[float], float]
    critical: Callable[[float, float], bool]


RULES = (
    Rule(
        name="EntryLatencyP90High",
        metric="LatencyP90(s)",
        source_metric="LatencyP90(s)",
        describe="value > 2 x median(LatencyP90(s)) over the window rows before the alert",
        value=lambda raw: raw,
        threshold=lambda median: 2 * median,
        critical=lambda value, median: value > 5 * median,
    ),
    Rule(
        name="EntryErrorRateHigh",
        metric="100 - SuccessRate(%)",
        source_metric="SuccessRate(%)",
        describe=(
            "error rate (100 - SuccessRate(%)) > max(2 x baseline median, 1 percentage point)"
        ),
        value=lambda raw: 100 - raw,
        threshold=lambda median: max(2 * median, 1.0),
        critical=lambda value, _median: value >= 10,
    ),
)


def _data(rule: Rule, entry: str, value: float, median: float, threshold: float) -> str:
    return json.dumps(
        {
            "alertname": rule.name,
            "service": entry,
            "entity_name": entry,
            "metric": rule.metric,
            "value": round(value, 6),
            "baseline_median": round(median, 6),
            "threshold": round(threshold, 6),
            "rule": rule.describe,
            "derived_from": DERIVED_FROM,
        }
    )


def _rule_alerts(
    rule: Rule, series: list[tuple[int, float]], inject: int, entry: str
) -> list[AlertRow]:
    before = [rule.value(raw) for time, raw in series if time < inject]
    if not before:
        return []
    median = statistics.median(before)
    threshold = rule.threshold(median)
    found: list[AlertRow] = []
    firing = False
    for time, raw in series:
        if time < inject:
            continue
        value = rule.value(raw)
        if not firing and value > threshold:
            severity = "critical" if rule.critical(value, median) else "warning"
            found.append((time, "firing", severity, _data(rule, entry, value, median, threshold)))
            firing = True
        elif firing and value <= threshold:
            found.append((time, "resolved", "info", _data(rule, entry, value, median, threshold)))
            firing = False
    return found


def derive_alerts(rows: list[MetricRow], system: str, inject: int) -> list[AlertRow]:
    """The alert rows of a case's metric rows, sorted by time."""
    entry = ENTRY_SERVICE[system]
    found: list[AlertRow] = []
    for rule in RULES:
        series = [
            (time, value)
            for time, name, metric, value in rows
            if name == entry and metric == rule.source_metric
        ]
        if series:
            found.extend(_rule_alerts(rule, series, inject, entry))
    return sorted(found, key=lambda row: row[0])
