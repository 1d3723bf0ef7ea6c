"""Writing a converted case: task.json, topology.json, the four parquet tables, the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pos_agent.data.errors import DataError
from pos_agent.data.nezha.alerts import AlertRow
from pos_agent.data.nezha.logs import LogRow
from pos_agent.data.nezha.metrics import MetricRow
from pos_agent.data.nezha.traces import COLUMNS as SPAN_COLUMNS
from pos_agent.data.nezha.traces import Span


def _arrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DataError(
            'Converting Nezha needs pyarrow: pip install "pos-agent[harness]" (in a clone: '
            "make install)."
        ) from exc
    return pa, pq


def write_json(path: Path, value: Any, indent: int = 2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=indent, ensure_ascii=False) + "\n", "utf-8")


def _write_table(path: Path, columns: dict[str, tuple[str, list[Any]]]) -> None:
    pa, pq = _arrow()
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64()}
    table = pa.table(
        {name: pa.array(values, type=types[kind]) for name, (kind, values) in columns.items()}
    )
    pq.write_table(table, path, compression="zstd")


def write_metrics(path: Path, rows: list[MetricRow]) -> None:
    _write_table(
        path,
        {
            "entity_name": ("string", [row[1] for row in rows]),
            "metric": ("string", [row[2] for row in rows]),
            "value": ("float64", [row[3] for row in rows]),
            "time": ("int64", [row[0] * 1_000_000 for row in rows]),
        },
    )


def write_logs(path: Path, rows: list[LogRow]) -> None:
    _write_table(
        path,
        {
            "_pod_name_": ("string", [row[0] for row in rows]),
            "_time_": ("int64", [row[1] for row in rows]),
            "content": ("string", [row[2] for row in rows]),
        },
    )


def write_spans(path: Path, rows: list[Span]) -> None:
    kinds = {"startTime": "int64", "duration": "int64"}
    _write_table(
        path,
        {
            name: (kinds.get(name, "string"), [row[at] for row in rows])
            for at, name in enumerate(SPAN_COLUMNS)
        },
    )


def write_alerts(path: Path, rows: list[AlertRow]) -> None:
    _write_table(
        path,
        {
            "time": ("int64", [row[0] * 1_000_000 for row in rows]),
            "status": ("string", [row[1] for row in rows]),
            "severity": ("string", [row[2] for row in rows]),
            "data": ("string", [row[3] for row in rows]),
        },
    )
