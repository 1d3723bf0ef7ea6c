"""One case folder's telemetry: parquet tables, the topology, entity and metric names, times.

Every tool answers from a `CaseTelemetry` only; nothing here can open a file outside the case
folder. Times are read against the case's own data (its alert time, else its alert window, else
its earliest telemetry timestamp), never against the clock of the machine running it, so the
same call gives the same answer on any day.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from pos_agent.envs._types import EnvError
from pos_agent.envs.rca.data import read_task
from pos_agent.envs.rca.text import short

# Before/after comparisons split the window this long before the alert unless told otherwise.
BASELINE_LEAD = timedelta(minutes=3)
# OpenTelemetry's status code of a failed span (STATUS_CODE_ERROR; 0 is unset, 1 is ok). The
# RCA100 layout stores it as text.
SPAN_ERROR_STATUS = "2"
SPAN_UNSET_STATUS = "0"
# The trace columns a `Span` is read from, in the order of its fields.
SPAN_COLUMNS = (
    "spanId",
    "parentSpanId",
    "serviceName",
    "spanName",
    "startTime",
    "duration",
    "statusCode",
    "statusMessage",
)
# The columns each table is read with.
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "metrics": ("entity_name", "metric", "value", "time"),
    "logs": ("_pod_name_", "_time_", "content"),
    "traces": ("traceId", *SPAN_COLUMNS),
    "alerts": ("time", "status", "severity", "data"),
}
_CLOCK_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")


class ToolFailure(Exception):
    """A tool could not answer (bad argument, unreadable data); the agent sees the message."""


def import_parquet() -> Any:
    """pyarrow.parquet, or an EnvError naming the extra to install."""
    try:
        import pyarrow.parquet as parquet
    except ImportError as exc:
        raise EnvError(
            "The RCA environments read parquet telemetry with pyarrow: install the `diagnosis` "
            "extra (`uv sync --extra diagnosis`, or pip install 'pos-agent[diagnosis]')."
        ) from exc
    return parquet


@dataclass
class Table:
    """A parquet file as plain column lists (empty when the file is absent)."""

    columns: dict[str, list[Any]]
    rows: int

    def col(self, name: str) -> list[Any]:
        return self.columns.get(name) or [None] * self.rows

    def rows_of(self, *names: str) -> Iterator[tuple[Any, ...]]:
        """The named columns read together, one tuple a row."""
        return zip(*(self.col(name) for name in names), strict=True)


def load_table(path: Path, wanted: Sequence[str]) -> Table:
    if not path.is_file():
        return Table({name: [] for name in wanted}, 0)
    parquet = import_parquet()
    try:
        table = parquet.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise ToolFailure(f"{path.name} could not be read ({type(exc).__name__}: {exc})") from exc
    columns = {
        name: table.column(name).to_pylist() if name in table.column_names else []
        for name in wanted
    }
    return Table(columns, table.num_rows)


@dataclass(frozen=True)
class Span:
    """One row of traces.parquet."""

    span_id: str
    parent_id: str
    """Empty for a root span."""
    service: str
    name: str
    start_ns: int
    duration_ns: int
    status: str
    message: str

    @property
    def failed(self) -> bool:
        return self.status == SPAN_ERROR_STATUS

    @property
    def start_us(self) -> int:
        return self.start_ns // 1000

    @property
    def duration_ms(self) -> float:
        return self.duration_ns / 1e6


@dataclass
class Topology:
    """Services, pods, nodes and the edges between them."""

    services: dict[str, list[str]] = field(default_factory=dict)
    pods: dict[str, str] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    hosted_on: dict[str, str] = field(default_factory=dict)
    other_types: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Topology:
        topology = cls()
        if not path.is_file():
            return topology
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EnvError(f"{path} cannot be read ({exc}).") from exc
        for entity in data.get("entities", []) if isinstance(data, dict) else []:
            if isinstance(entity, dict):
                topology._add_entity(entity)
        for edge in data.get("edges", []) if isinstance(data, dict) else []:
            if not isinstance(edge, dict):
                continue
            src, dst, relation = str(edge.get("src")), str(edge.get("dst")), edge.get("relation")
            if relation == "calls":
                topology.calls.append((src, dst))
            elif relation == "instance_of":
                topology.pods[src] = dst
            elif relation == "hosted_on":
                topology.hosted_on[src] = dst
        for pod, service in topology.pods.items():
            if service:
                members = topology.services.setdefault(service, [])
                if pod not in members:
                    members.append(pod)
        return topology

    def _add_entity(self, entity: dict[str, Any]) -> None:
        name = str(entity.get("name") or entity.get("id") or "")
        kind = str(entity.get("type", ""))
        props = entity.get("props") or {}
        if not name:
            return
        if kind == "service":
            self.services.setdefault(name, [])
            for pod in props.get("pods", []) if isinstance(props, dict) else []:
                self.pods.setdefault(str(pod), name)
        elif kind == "pod":
            service = props.get("service") if isinstance(props, dict) else None
            self.pods[name] = str(service) if service else self.pods.get(name, "")
        elif kind == "node":
            self.nodes.append(name)
        else:
            self.other_types[name] = kind


def parse_iso(text: str) -> datetime | None:
    """A full ISO-8601 time (UTC when no zone is given), or None."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_time(text: str, reference: datetime | None) -> datetime:
    """ISO-8601, or HH:MM[:SS] on the reference's date (UTC).

    Without a reference (a case with no time anywhere) only full ISO-8601 times can be read.
    """
    cleaned = text.strip()
    match = _CLOCK_TIME.fullmatch(cleaned)
    if match:
        if reference is None:
            raise ToolFailure(
                f"Cannot place {text!r} on a date: this case has no alert time and no "
                "timestamps; write full ISO-8601 (2023-01-29T09:41:00Z)."
            )
        hour, minute, second = (int(g) if g else 0 for g in match.groups())
        try:
            return reference.replace(hour=hour, minute=minute, second=second, microsecond=0)
        except ValueError:
            raise ToolFailure(f"{text!r} is not a time of day (HH:MM[:SS], 24 h).") from None
    parsed = parse_iso(cleaned)
    if parsed is None:
        raise ToolFailure(
            f"Cannot read the time {text!r}: write ISO-8601 (2023-01-29T09:41:00Z) or HH:MM[:SS]."
        )
    return parsed


def to_us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def in_window(us: int | None, low: int | None, high: int | None) -> bool:
    if us is None:
        return False
    return (low is None or us >= low) and (high is None or us <= high)


class CaseTelemetry:
    """One case folder, read lazily; every query is answered from these tables only."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.task = read_task(folder)
        self.topology = Topology.read(folder / "topology.json")
        self._tables: dict[str, Table] = {}
        self._entity_names: dict[str, str] | None = None

    def table(self, name: str) -> Table:
        if name not in self._tables:
            self._tables[name] = load_table(self.folder / f"{name}.parquet", TABLE_COLUMNS[name])
        return self._tables[name]

    def spans(self) -> list[Span]:
        """Every span of traces.parquet as a named record."""
        traces = self.table("traces")
        return [
            Span(
                span_id=str(span_id or ""),
                parent_id=str(parent or ""),
                service=str(service),
                name=str(name),
                start_ns=int(start or 0),
                duration_ns=int(duration or 0),
                status=str(status),
                message=str(message),
            )
            for span_id, parent, service, name, start, duration, status, message in traces.rows_of(
                *SPAN_COLUMNS
            )
        ]

    # -- names ------------------------------------------------------------------------------

    def entity_names(self) -> dict[str, str]:
        """Every entity name the case knows, with its kind."""
        if self._entity_names is None:
            self._entity_names = self._collect_entity_names()
        return self._entity_names

    def _collect_entity_names(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for service in self.topology.services:
            names[service] = "service"
        for pod in self.topology.pods:
            names[pod] = "pod"
        for node in self.topology.nodes:
            names[node] = "node"
        for name, kind in self.topology.other_types.items():
            names.setdefault(name, kind)
        for table, column, kind in (
            ("metrics", "entity_name", "entity"),
            ("logs", "_pod_name_", "pod"),
            ("traces", "serviceName", "service"),
        ):
            try:
                seen = set(self.table(table).col(column))
            except ToolFailure:
                continue  # an unreadable file costs its own queries, not every name lookup
            for name in sorted(str(n) for n in seen if n):
                names.setdefault(name, "pod" if name in self.topology.pods else kind)
        return names

    def service_of(self, name: str) -> str | None:
        if name in self.topology.services:
            return name
        service = self.topology.pods.get(name)
        if service:
            return service
        if self.entity_names().get(name) == "service":
            return name
        return None

    def members(self, name: str) -> set[str]:
        """The name itself plus, for a service, its pods (what telemetry rows may be keyed by)."""
        found = {name}
        found.update(self.topology.services.get(name, []))
        return found

    def resolve_entity(self, text: str) -> str:
        """An entity name of this case matching `text` (exact, case-insensitive or unique prefix)."""
        names = self.entity_names()
        wanted = text.strip()
        if wanted in names:
            return wanted
        lowered = {n.lower(): n for n in names}
        if wanted.lower() in lowered:
            return lowered[wanted.lower()]
        prefixed = [n for n in names if n.lower().startswith(wanted.lower())] if wanted else []
        services = [n for n in prefixed if names[n] == "service"]
        if len(prefixed) == 1:
            return prefixed[0]
        if len(services) == 1 and all(self.service_of(n) == services[0] for n in prefixed):
            return services[0]
        close = difflib.get_close_matches(wanted, list(names), n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ToolFailure(
            f"No entity named {short(wanted)!r} in this case.{hint} list_entities shows the names."
        )

    def resolve_metric(self, text: str, available: Sequence[str]) -> str:
        wanted = text.strip()
        if wanted in available:
            return wanted
        lowered = [m for m in available if m.lower() == wanted.lower()]
        if len(lowered) == 1:
            return lowered[0]
        prefixed = [m for m in available if m.lower().startswith(wanted.lower())] if wanted else []
        if len(prefixed) == 1:
            return prefixed[0]
        partial = [m for m in available if wanted.lower() in m.lower()] if wanted else []
        if len(partial) == 1:
            return partial[0]
        if partial:
            raise ToolFailure(
                f"{short(wanted)!r} matches several metrics: {', '.join(partial[:12])}; "
                "give one of them."
            )
        raise ToolFailure(
            f"No metric named {short(wanted)!r} here; list_metric_names shows the names."
        )

    # -- time ---------------------------------------------------------------------------------

    @cached_property
    def reference_time(self) -> datetime | None:
        """What HH:MM[:SS] is read against: the alert time, else the alert window, else the
        earliest telemetry timestamp; None for a case with no time at all."""
        window = self.task.get("alert_window")
        bounds = window if isinstance(window, dict) else {}
        for text in (self.task.get("alert_time"), bounds.get("start"), bounds.get("end")):
            parsed = parse_iso(str(text)) if text else None
            if parsed is not None:
                return parsed
        return self._earliest_timestamp()

    @cached_property
    def alert_time(self) -> datetime | None:
        """The alert time of task.json (HH:MM read on the case's own date), if it has one."""
        text = str(self.task.get("alert_time") or "")
        if not text:
            return None
        try:
            return parse_time(text, self.reference_time)
        except ToolFailure:
            return None

    def _earliest_timestamp(self) -> datetime | None:
        starts: list[int] = []
        for table, column, per_second in (
            ("metrics", "time", 1_000_000),
            ("logs", "_time_", 1_000_000),
            ("traces", "startTime", 1_000_000_000),
            ("alerts", "time", 1_000_000),
        ):
            try:
                values = [v for v in self.table(table).col(column) if isinstance(v, int | float)]
            except ToolFailure:
                continue
            if values:
                starts.append(int(min(values) * 1_000_000 // per_second))
        if not starts:
            return None
        return datetime.fromtimestamp(min(starts) / 1_000_000, tz=UTC)

    def split_us(self, baseline_end: str | None) -> int | None:
        if baseline_end:
            return to_us(parse_time(baseline_end, self.reference_time))
        if self.alert_time is None:
            return None
        return to_us(self.alert_time - BASELINE_LEAD)

    def window(self, start: str | None, end: str | None) -> tuple[int | None, int | None]:
        low = to_us(parse_time(start, self.reference_time)) if start else None
        high = to_us(parse_time(end, self.reference_time)) if end else None
        if low is not None and high is not None and low > high:
            raise ToolFailure("start is after end; swap them.")
        return low, high
