"""Log lines of a case: the container log records of the window, capped per pod and minute.

`content` is the `log` field of the collector's JSON record (a record whose JSON is broken
upstream is dropped). At most `cap` lines per pod per minute: every line that looks like an
error, a warning or an exception is kept first, the rest is a seeded sample (`sampling.py`).
The pods' nodes are read here too: TrainTicket's topology places pods by the `Node` column.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pos_agent.data.nezha.sampling import draw
from pos_agent.data.nezha.upstream import DateFolder

LOG_CAP = 300
IMPORTANT = re.compile(r"ERROR|WARN|[Ee]xception")
MINUTE_US = 60_000_000

LogRow = tuple[str, int, str]
"""(pod, time in microseconds, content)."""


def content_of(record: str) -> str | None:
    """The `log` text of a collector record, without its line break; None if unreadable."""
    try:
        value = json.loads(record)
    except ValueError:
        return None
    text = value.get("log") if isinstance(value, dict) else None
    return text.rstrip("\n") if isinstance(text, str) else None


@dataclass
class CaseLogs:
    """A case's log lines, and what the cap removed."""

    rows: list[LogRow] = field(default_factory=list)
    before_cap: int = 0


def window_lines(folder: DateFolder, files: list[str], start: int, end: int) -> list[LogRow]:
    """The readable lines of `files` whose time falls in [start, end] (whole seconds)."""
    low, high = start * 1_000_000_000, end * 1_000_000_000
    found = []
    for name in files:
        for record in folder.csv_rows(f"log/{name}") or []:
            nanos = int(record["TimeUnixNano"])
            if not low <= nanos <= high:
                continue
            text = content_of(record.get("Log") or "")
            if text is not None:
                found.append((record["PodName"], nanos // 1000, text))
    return found


def cap_lines(lines: list[LogRow], rng: Any, cap: int = LOG_CAP) -> list[LogRow]:
    """At most `cap` lines per (pod, minute), important ones first; sorted by time and pod
    (then file order)."""
    groups: dict[tuple[str, int], list[int]] = {}
    for at, line in enumerate(lines):
        groups.setdefault((line[0], line[1] // MINUTE_US), []).append(at)
    kept: list[int] = []
    for members in groups.values():
        if len(members) <= cap:
            kept.extend(members)
            continue
        important = [at for at in members if IMPORTANT.search(lines[at][2])]
        rest = [at for at in members if not IMPORTANT.search(lines[at][2])]
        kept.extend(important)
        kept.extend(draw(rng, rest, cap - len(important)))
    return sorted((lines[at] for at in sorted(kept)), key=lambda row: (row[1], row[0]))


def case_logs(
    folder: DateFolder, files: list[str], start: int, end: int, rng: Any, cap: int = LOG_CAP
) -> CaseLogs:
    lines = window_lines(folder, files, start, end)
    return CaseLogs(rows=cap_lines(lines, rng, cap), before_cap=len(lines))


def pod_nodes(folder: DateFolder, files: list[str]) -> dict[str, str]:
    """Pod -> node, from the `Node` column of the log files."""
    nodes: dict[str, str] = {}
    for name in files:
        for record in folder.csv_rows(f"log/{name}") or []:
            pod, node = record.get("PodName"), record.get("Node")
            if pod and node:
                nodes.setdefault(pod, node)
    return nodes
