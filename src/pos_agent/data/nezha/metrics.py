"""Metric rows of a date: every pod's per-minute series plus the entry service's SLO series.

Long format, one row per (entity, metric, minute): the pod files' columns become `metric`
names, `front_service.csv`'s columns are filed under the entry service. Time comes from the
`Time` string floored to the second (one pod's `TimeStamp` column is corrupt upstream). Empty
cells are dropped, and so is a column that is zero for every pod all day (it was not collected:
showing it would claim a 0% success rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pos_agent.data.nezha.upstream import ENTRY_SERVICE, DateFolder, utc_seconds

NOT_METRICS = ("Time", "TimeStamp", "PodName", "ServiceName")
FRONT_FILE = "front_service.csv"

MetricRow = tuple[int, str, str, float]
"""(time in seconds, entity name, metric, value)."""


def _value(cell: str | None) -> float | None:
    if cell is None or cell.strip() == "":
        return None
    try:
        value = float(cell)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _zero_columns(tables: list[list[dict[str, str]]]) -> list[str]:
    """Columns that hold only zeros (and empty cells) in every table."""
    columns: list[str] = []
    for table in tables:
        for name in table[0].keys() if table else ():
            if name not in NOT_METRICS and name not in columns:
                columns.append(name)
    dropped = []
    for name in columns:
        values = [_value(row.get(name)) for table in tables for row in table]
        seen = [value for value in values if value is not None]
        if seen and all(value == 0 for value in seen):
            dropped.append(name)
    return dropped


@dataclass
class DateMetrics:
    """All metric rows of one date, sorted by (time, entity, metric)."""

    system: str
    rows: list[MetricRow] = field(default_factory=list)
    dropped_pod_columns: list[str] = field(default_factory=list)
    dropped_front_columns: list[str] = field(default_factory=list)

    @property
    def first_time(self) -> int:
        return self.rows[0][0]

    @property
    def last_time(self) -> int:
        return self.rows[-1][0]

    def window(self, start: int, end: int) -> list[MetricRow]:
        return [row for row in self.rows if start <= row[0] <= end]

    def entry_series(self, rows: list[MetricRow], metric: str) -> list[tuple[int, float]]:
        entry = ENTRY_SERVICE[self.system]
        return [(time, value) for time, name, key, value in rows if name == entry and key == metric]


def read_metrics(folder: DateFolder, system: str, pods: list[str]) -> DateMetrics:
    """Every metric row of the date."""
    tables = {pod: folder.csv_rows(f"metric/{pod}_metric.csv") or [] for pod in pods}
    front = folder.csv_rows(f"metric/{FRONT_FILE}") or []
    result = DateMetrics(
        system=system,
        dropped_pod_columns=_zero_columns(list(tables.values())),
        dropped_front_columns=_zero_columns([front]),
    )
    rows: list[MetricRow] = []
    sources = [(pod, table, result.dropped_pod_columns) for pod, table in tables.items()]
    sources.append((ENTRY_SERVICE[system], front, result.dropped_front_columns))
    for entity, table, dropped in sources:
        for record in table:
            time = utc_seconds(record["Time"])
            for name, cell in record.items():
                if name in NOT_METRICS or name in dropped or name is None:
                    continue
                value = _value(cell)
                if value is not None:
                    rows.append((time, entity, name, value))
    rows.sort(key=lambda row: (row[0], row[1], row[2]))
    result.rows = rows
    return result
