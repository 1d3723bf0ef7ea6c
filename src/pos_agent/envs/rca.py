"""Microservice root-cause analysis over RCA100-layout case folders (DESIGN.md section 6).

A data folder holds `cases/<case_id>/` (task.json, topology.json, metrics/logs/traces/alerts
parquet), `answers/<case_id>.json` and usually `index.jsonl`. The environment reads only its
own case folder; the answer file is read by `read_answer`, called once by the scorer when the
agent submits. No tool takes a path: entity and metric names are matched against the case's
own data, so no argument can reach another file.

Tools (one decision turn = one call, or a JSON list of up to 3 calls; 50 turns and at most 150
tool calls): get_data_overview, list_entities, list_metric_names, get_topology, query_metrics,
search_logs, query_traces, get_alerts, submit_root_cause(root_cause_entity, fault_type,
analysis). Outputs are bounded (lines and characters) and say how to narrow a query.

Scoring: FT (fault type among the answer's types), RCL (the entity matches the answer at pod
or service level: the answer pod, its service, or another name of that service's pods) and
Joint (both). Environments: `rca` for any folder in this layout (data_dir= or POS_RCA_DATA)
and `rca-nezha` defaulting to ../shared/data/rca-nezha. Category: the case's system
(task.json), so that listing tasks never reads an answer.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pos_agent.envs._episode import BackendResult
from pos_agent.envs._types import EnvError, TaskSpec
from pos_agent.envs.tools import (
    ToolCall,
    ToolCallError,
    ToolEnvironment,
    ToolSpec,
    clip_lines,
    integer_param,
    locate_data,
    object_schema,
    parse_tool_calls,
    string_param,
)

GENERIC_ENV = "rca"
NEZHA_ENV = "rca-nezha"
DATA_ENV_VAR = "POS_RCA_DATA"
DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_TOOL_CALLS = 150
CALLS_PER_TURN = 3
DEFAULT_SPLIT = "all"
# Nezha's injected fault types; a case's task.json may list its own in `fault_types`.
DEFAULT_FAULT_TYPES = ("cpu_contention", "cpu_consumed", "network_delay", "return", "exception")
FAULT_ALIASES = {
    "cpu_hog": "cpu_consumed",
    "cpu_consumption": "cpu_consumed",
    "cpu_exhaustion": "cpu_consumed",
    "cpu_stress": "cpu_consumed",
    "high_cpu": "cpu_consumed",
    "cpu_throttling": "cpu_contention",
    "network_jam": "network_delay",
    "network_latency": "network_delay",
    "latency": "network_delay",
    "delay": "network_delay",
    "wrong_return_value": "return",
    "return_value": "return",
    "code_defect_return": "return",
    "injected_exception": "exception",
    "code_exception": "exception",
    "code_defect_exception": "exception",
}
# Before/after comparisons split the window this long before the alert unless told otherwise.
BASELINE_LEAD = timedelta(minutes=3)
MAX_OUTPUT_CHARS = 4000
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
TELEMETRY_FILES = ("metrics", "logs", "traces", "alerts")


# -- the data folder ----------------------------------------------------------------------------


def _check_case_id(case_id: str) -> str:
    cleaned = case_id.strip()
    if not _CASE_ID.match(cleaned) or cleaned.strip(".") == "":
        raise EnvError(
            f"Bad RCA case id {case_id!r}: a case id is a folder name under cases/ (letters, "
            "digits, '.', '_', '-'); `pos envs rca-nezha` lists them."
        )
    return cleaned


@dataclass(frozen=True)
class RcaData:
    """An RCA100-layout data folder."""

    root: Path

    @property
    def cases_dir(self) -> Path:
        return self.root / "cases"

    @property
    def answers_dir(self) -> Path:
        return self.root / "answers"

    @classmethod
    def locate(cls, env_name: str, data_dir: str | Path | None) -> RcaData:
        marker = "cases/<id>/ (task.json, topology.json, *.parquet) and answers/<id>.json"
        if env_name == GENERIC_ENV and data_dir in (None, "") and not os.environ.get(DATA_ENV_VAR):
            raise EnvError(
                f"The generic `rca` environment needs a data folder ({marker}): pass "
                f"data_dir=PATH (suite YAML env_options) or set {DATA_ENV_VAR}=PATH; "
                f"`rca-nezha` uses ../shared/data/rca-nezha by default."
            )
        root = locate_data(
            "rca-nezha", data_dir=data_dir, env_var=DATA_ENV_VAR, what="RCA", marker=marker
        )
        data = cls(root)
        if not data.cases_dir.is_dir():
            raise EnvError(f"{root} has no cases/ folder; it must hold {marker}.")
        return data

    def case_ids(self) -> list[str]:
        return sorted(
            d.name
            for d in self.cases_dir.iterdir()
            if d.is_dir() and _CASE_ID.match(d.name) and (d / "task.json").is_file()
        )

    def case_folder(self, case_id: str) -> Path:
        folder = self.cases_dir / _check_case_id(case_id)
        if not (folder / "task.json").is_file():
            raise EnvError(
                f"Unknown RCA case {case_id!r}: no {folder}/task.json; "
                "`pos envs rca-nezha` (or `pos envs rca`) lists the cases."
            )
        return folder


def list_rca_tasks(
    env_name: str, split: str | None, data_dir: str | Path | None = None
) -> list[TaskSpec]:
    """Every case (split `all`) or the cases of one system (split = the system name)."""
    data = RcaData.locate(env_name, data_dir)
    chosen = split or DEFAULT_SPLIT
    specs: list[TaskSpec] = []
    systems: set[str] = set()
    for case_id in data.case_ids():
        task = _read_task(data.cases_dir / case_id)
        system = str(task.get("system") or "unknown")
        systems.add(system)
        if chosen not in (DEFAULT_SPLIT, system):
            continue
        specs.append(
            TaskSpec(
                env=env_name,
                task_id=case_id,
                category=system,
                split=chosen,
                description=str(task.get("alert_title") or "Find the root cause of an alert."),
            )
        )
    if chosen != DEFAULT_SPLIT and chosen not in systems:
        raise EnvError(
            f"Unknown RCA split {chosen!r}; use `all` or a system: {', '.join(sorted(systems))}."
        )
    return specs


def _read_task(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EnvError(f"{folder}/task.json cannot be read ({exc}).") from exc
    if not isinstance(data, dict):
        raise EnvError(f"{folder}/task.json must hold a JSON object.")
    return data


# -- answers and scoring (the only code that touches answers/) ----------------------------------


class RcaAnswer(BaseModel):
    """`answers/<case_id>.json`."""

    model_config = ConfigDict(extra="allow", frozen=True)
    case_id: str = ""
    """The case."""
    root_cause_entities: list[str] = Field(min_length=1)
    """The injected pod and its service."""
    root_cause_types: list[str] = Field(min_length=1)
    """The injected fault type(s)."""


def read_answer(answers_dir: Path, case_id: str) -> RcaAnswer:
    """The answer key of one case; called by the scorer at submission, never by a tool."""
    path = answers_dir / f"{_check_case_id(case_id)}.json"
    try:
        return RcaAnswer.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise EnvError(f"The answer file {path} cannot be used ({exc}).") from exc


@dataclass(frozen=True)
class RcaScore:
    """FT, RCL and Joint for one submission, with what they were decided on."""

    ft: bool
    rcl: bool
    pod_exact: bool

    @property
    def joint(self) -> bool:
        return self.ft and self.rcl

    def metrics(self) -> dict[str, int]:
        return {"FT": int(self.ft), "RCL": int(self.rcl), "Joint": int(self.joint)}


def score_submission(
    answer: RcaAnswer,
    entity: str,
    fault_type: str,
    service_of: Callable[[str], str | None],
) -> RcaScore:
    """Pure scoring: fault type among the answer's types; entity at pod or service level."""
    types = {normalize_fault_type(t) for t in answer.root_cause_types}
    truth = set(answer.root_cause_entities)
    truth_services = {s for s in (service_of(e) for e in truth) if s}
    submitted_service = service_of(entity)
    rcl = entity in truth or (submitted_service is not None and submitted_service in truth_services)
    return RcaScore(
        ft=normalize_fault_type(fault_type) in types, rcl=rcl, pod_exact=entity in truth
    )


def normalize_fault_type(text: str) -> str:
    """`CPU Hog` -> `cpu_consumed` style: lower case, underscores, known aliases resolved."""
    key = re.sub(r"[\s\-/]+", "_", text.strip().lower()).strip("_")
    return FAULT_ALIASES.get(key, key)


# -- telemetry ----------------------------------------------------------------------------------


def _import_parquet() -> Any:
    try:
        import pyarrow.parquet as parquet
    except ImportError as exc:
        raise EnvError(
            "The RCA environments read parquet telemetry with pyarrow: install the `diagnosis` "
            "extra (`uv sync --extra diagnosis`, or pip install 'pos-agent[diagnosis]')."
        ) from exc
    return parquet


class ToolFailure(Exception):
    """A tool could not answer (bad argument, unreadable data); the agent sees the message."""


@dataclass
class Table:
    """A parquet file as plain column lists (empty when the file is absent)."""

    columns: dict[str, list[Any]]
    rows: int

    def col(self, name: str) -> list[Any]:
        return self.columns.get(name) or [None] * self.rows


def _load_table(path: Path, wanted: Sequence[str]) -> Table:
    if not path.is_file():
        return Table({name: [] for name in wanted}, 0)
    parquet = _import_parquet()
    try:
        table = parquet.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise ToolFailure(f"{path.name} could not be read ({type(exc).__name__}: {exc})") from exc
    columns = {
        name: table.column(name).to_pylist() if name in table.column_names else []
        for name in wanted
    }
    return Table(columns, table.num_rows)


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
            if not isinstance(entity, dict):
                continue
            name = str(entity.get("name") or entity.get("id") or "")
            kind = str(entity.get("type", ""))
            props = entity.get("props") or {}
            if not name:
                continue
            if kind == "service":
                topology.services.setdefault(name, [])
                for pod in props.get("pods", []) if isinstance(props, dict) else []:
                    topology.pods.setdefault(str(pod), name)
            elif kind == "pod":
                service = props.get("service") if isinstance(props, dict) else None
                topology.pods[name] = str(service) if service else topology.pods.get(name, "")
            elif kind == "node":
                topology.nodes.append(name)
            else:
                topology.other_types[name] = kind
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


def _parse_time(text: str, reference: datetime) -> datetime:
    """ISO-8601, or HH:MM[:SS] on the reference's date (UTC)."""
    cleaned = text.strip()
    match = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", cleaned)
    if match:
        hour, minute, second = (int(g) if g else 0 for g in match.groups())
        return reference.replace(hour=hour, minute=minute, second=second, microsecond=0)
    try:
        parsed = datetime.fromisoformat(cleaned.replace("Z", "+00:00"))
    except ValueError:
        raise ToolFailure(
            f"Cannot read the time {text!r}: write ISO-8601 (2023-01-29T09:41:00Z) or HH:MM[:SS]."
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _clock(us: int | None) -> str:
    if us is None:
        return "-"
    return datetime.fromtimestamp(us / 1_000_000, tz=UTC).strftime("%H:%M:%S")


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01 or value == 0:
        return f"{value:.3f}".rstrip("0").rstrip(".") or "0"
    return f"{value:.2e}"


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    position = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[position]


def _ratio(after: float | None, before: float | None) -> str:
    if after is None or before is None:
        return "n/a"
    if abs(before) < 1e-12:
        return "new" if abs(after) > 1e-12 else "x1.0"
    return f"x{after / before:.2f}"


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


class CaseTelemetry:
    """One case folder, read lazily; every query is answered from these tables only."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.task = _read_task(folder)
        self.topology = Topology.read(folder / "topology.json")
        self._tables: dict[str, Table] = {}
        self._entity_names: dict[str, str] | None = None
        alert = str(self.task.get("alert_time") or "")
        try:
            self.alert_time: datetime | None = _parse_time(alert, datetime.now(UTC))
        except ToolFailure:
            self.alert_time = None

    def table(self, name: str) -> Table:
        if name not in self._tables:
            wanted = {
                "metrics": ("entity_name", "metric", "value", "time"),
                "logs": ("_pod_name_", "_time_", "content"),
                "traces": (
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "serviceName",
                    "spanName",
                    "startTime",
                    "duration",
                    "statusCode",
                    "statusMessage",
                ),
                "alerts": ("time", "status", "severity", "data"),
            }[name]
            self._tables[name] = _load_table(self.folder / f"{name}.parquet", wanted)
        return self._tables[name]

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
            f"No entity named {_short(wanted)!r} in this case.{hint} list_entities shows the names."
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
                f"{_short(wanted)!r} matches several metrics: {', '.join(partial[:12])}; "
                "give one of them."
            )
        raise ToolFailure(
            f"No metric named {_short(wanted)!r} here; list_metric_names shows the names."
        )

    # -- time ---------------------------------------------------------------------------------

    def split_us(self, baseline_end: str | None) -> int | None:
        reference = self.alert_time or datetime.now(UTC)
        if baseline_end:
            return _us(_parse_time(baseline_end, reference))
        if self.alert_time is None:
            return None
        return _us(self.alert_time - BASELINE_LEAD)

    def window(self, start: str | None, end: str | None) -> tuple[int | None, int | None]:
        reference = self.alert_time or datetime.now(UTC)
        low = _us(_parse_time(start, reference)) if start else None
        high = _us(_parse_time(end, reference)) if end else None
        if low is not None and high is not None and low > high:
            raise ToolFailure("start is after end; swap them.")
        return low, high


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _in_window(us: int | None, low: int | None, high: int | None) -> bool:
    if us is None:
        return False
    return (low is None or us >= low) and (high is None or us <= high)


# -- the tools ----------------------------------------------------------------------------------

TIME_HELP = "ISO-8601 (2023-01-29T09:41:00Z) or HH:MM[:SS] on the alert's date (UTC)"
ENTITY = string_param("A service, pod or node name as list_entities shows it.")

RCA_QUERY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_data_overview",
        "What telemetry this case has: time window, entities, metric/log/span/alert counts.",
        object_schema(),
    ),
    ToolSpec(
        "list_entities",
        "List the services, pods and nodes (optionally of one type).",
        object_schema(type=string_param("service, pod or node", enum=["service", "pod", "node"])),
    ),
    ToolSpec(
        "list_metric_names",
        "List the metric names (optionally those of one entity).",
        object_schema(entity=ENTITY),
    ),
    ToolSpec(
        "get_topology",
        "The call graph; with an entity: its callers, callees, pods and node.",
        object_schema(entity=ENTITY),
    ),
    ToolSpec(
        "query_metrics",
        "Metrics before vs after the baseline split (3 min before the alert unless "
        "baseline_end is given). entity only: a summary of each of its metrics; entity and "
        "metric: that series; metric only: the entities whose metric changed most.",
        object_schema(
            entity=ENTITY,
            metric=string_param("A metric name (or a unique part of one)."),
            start=string_param(f"Window start, {TIME_HELP}."),
            end=string_param(f"Window end, {TIME_HELP}."),
            baseline_end=string_param(f"End of the baseline period, {TIME_HELP}."),
        ),
    ),
    ToolSpec(
        "search_logs",
        "Search log lines (case-insensitive text; 'a|b' matches either). Without a pattern: "
        "line and error counts per pod.",
        object_schema(
            pattern=string_param("Text to find, e.g. 'error|exception'."),
            entity=ENTITY,
            start=string_param(f"Window start, {TIME_HELP}."),
            end=string_param(f"Window end, {TIME_HELP}."),
            limit=integer_param("Lines to show (1-50, default 20).", minimum=1, maximum=50),
        ),
    ),
    ToolSpec(
        "query_traces",
        "Span latency and errors. Without a service: per-service summary before vs after the "
        "baseline split; with a service: its operations, slowest spans, errors and the "
        "services it calls.",
        object_schema(
            service=string_param("A service (or pod) name."),
            operation=string_param("Only spans whose name contains this text."),
            min_duration_ms=integer_param("Only spans at least this long.", minimum=0),
            errors_only={"type": "boolean", "description": "Only spans with error status."},
            baseline_end=string_param(f"End of the baseline period, {TIME_HELP}."),
        ),
    ),
    ToolSpec("get_alerts", "The alerts that fired for this case.", object_schema()),
)


def _submit_spec(fault_types: Sequence[str]) -> ToolSpec:
    return ToolSpec(
        "submit_root_cause",
        "Submit the root cause; this ends the case.",
        object_schema(
            ["root_cause_entity", "fault_type"],
            root_cause_entity=string_param("The faulty pod or service."),
            fault_type=string_param(f"One of: {', '.join(fault_types)}."),
            analysis=string_param("The evidence for your conclusion."),
        ),
    )


class RcaTools:
    """The query tools over one case's telemetry: pure reads, bounded text out."""

    def __init__(self, telemetry: CaseTelemetry) -> None:
        self.data = telemetry

    def run(self, call: ToolCall) -> str:
        handler: Callable[..., str] = getattr(self, f"tool_{call.tool}")
        return handler(**call.args)

    # -- overview and names -------------------------------------------------------------------

    def tool_get_data_overview(self) -> str:
        task = self.data.task
        window = task.get("alert_window") or {}
        topology = self.data.topology
        metrics, logs = self.data.table("metrics"), self.data.table("logs")
        traces, alerts = self.data.table("traces"), self.data.table("alerts")
        lines = [
            f"Case {task.get('task_id', self.data.folder.name)} ({task.get('system', '?')}): "
            f"{task.get('alert_title', '')}",
            f"Alert time: {task.get('alert_time', '?')} on {task.get('alert_entity', '?')}; "
            f"telemetry window {window.get('start', '?')} .. {window.get('end', '?')}.",
            f"Description: {task.get('description', '')}",
            f"Topology: {len(topology.services)} services, {len(topology.pods)} pods, "
            f"{len(topology.nodes)} nodes, {len(topology.calls)} call edges.",
        ]
        lines.append(self._metrics_overview(metrics))
        if logs.rows:
            pods = Counter(logs.col("_pod_name_"))
            times = [t for t in logs.col("_time_") if t is not None]
            lines.append(
                f"Logs: {logs.rows} lines from {len(pods)} pods, "
                f"{_clock(min(times))} .. {_clock(max(times))}."
            )
        else:
            lines.append("Logs: none in this case.")
        if traces.rows:
            services = Counter(traces.col("serviceName"))
            starts = [t // 1000 for t in traces.col("startTime") if t is not None]
            errors = sum(1 for s in traces.col("statusCode") if str(s) == "2")
            lines.append(
                f"Traces: {traces.rows} spans from {len(services)} services, "
                f"{_clock(min(starts))} .. {_clock(max(starts))}; {errors} with error status."
            )
        else:
            lines.append("Traces: none in this case.")
        lines.append(f"Alerts: {alerts.rows} row(s); get_alerts shows them.")
        split = self.data.split_us(None)
        if split is not None:
            lines.append(
                f"Before/after comparisons split at {_clock(split)} (3 min before the alert); "
                "pass baseline_end to change it."
            )
        return "\n".join(lines)

    def _metrics_overview(self, metrics: Table) -> str:
        if not metrics.rows:
            return "Metrics: none in this case."
        entities = set(metrics.col("entity_name"))
        names = set(metrics.col("metric"))
        times = [t for t in metrics.col("time") if t is not None]
        return (
            f"Metrics: {metrics.rows} points, {len(names)} metric names over {len(entities)} "
            f"entities, {_clock(min(times))} .. {_clock(max(times))}."
        )

    def tool_list_entities(self, type: str | None = None) -> str:
        names = self.data.entity_names()
        lines = []
        for kind in ("service", "pod", "node", "entity"):
            if type and kind != type:
                continue
            members = sorted(n for n, k in names.items() if k == kind)
            if not members:
                continue
            lines.append(f"{kind}s ({len(members)}):")
            for name in members:
                extra = ""
                if kind == "pod":
                    service = self.data.topology.pods.get(name)
                    node = self.data.topology.hosted_on.get(name)
                    extra = f"  (service {service or '?'}" + (f", node {node})" if node else ")")
                lines.append(f"  {name}{extra}")
        if not lines:
            return f"No entities of type {type!r}."
        return clip_lines(lines, max_lines=160, max_chars=MAX_OUTPUT_CHARS, what="entities")

    def tool_list_metric_names(self, entity: str | None = None) -> str:
        metrics = self.data.table("metrics")
        if not metrics.rows:
            return "This case has no metrics."
        keys = metrics.col("entity_name")
        names = metrics.col("metric")
        if entity:
            resolved = self.data.resolve_entity(entity)
            members = self.data.members(resolved)
            counted = Counter(n for k, n in zip(keys, names, strict=True) if k in members)
            if not counted:
                return f"No metrics recorded for {resolved}."
            header = f"Metrics of {resolved} (points):"
        else:
            counted = Counter(names)
            owners: dict[str, set[str]] = defaultdict(set)
            for key, name in zip(keys, names, strict=True):
                owners[name].add(key)
            header = "Metric names (points, entities):"
            lines = [header] + [
                f"  {name} ({counted[name]}, {len(owners[name])})" for name in sorted(counted)
            ]
            return clip_lines(lines, max_lines=120, max_chars=MAX_OUTPUT_CHARS, what="metrics")
        lines = [header] + [f"  {name} ({counted[name]})" for name in sorted(counted)]
        return clip_lines(lines, max_lines=120, max_chars=MAX_OUTPUT_CHARS, what="metrics")

    def tool_get_topology(self, entity: str | None = None) -> str:
        topology = self.data.topology
        if not entity:
            lines = [f"Call edges ({len(topology.calls)}; caller -> callee):"]
            lines += [f"  {src} -> {dst}" for src, dst in sorted(topology.calls)]
            by_node: dict[str, list[str]] = defaultdict(list)
            for pod, node in topology.hosted_on.items():
                by_node[node].append(pod)
            if by_node:
                lines.append("Pods per node:")
                lines += [
                    f"  {node}: {', '.join(sorted(pods))}" for node, pods in sorted(by_node.items())
                ]
            return clip_lines(lines, max_lines=200, max_chars=MAX_OUTPUT_CHARS, what="lines")
        resolved = self.data.resolve_entity(entity)
        service = self.data.service_of(resolved)
        lines = [f"{resolved}:"]
        if service and service != resolved:
            lines.append(f"  pod of service {service}")
        if service:
            pods = topology.services.get(service, [])
            callers = sorted(src for src, dst in topology.calls if dst == service)
            callees = sorted(dst for src, dst in topology.calls if src == service)
            lines.append(f"  pods: {', '.join(pods) or 'none listed'}")
            for pod in pods:
                if pod in topology.hosted_on:
                    lines.append(f"  {pod} runs on node {topology.hosted_on[pod]}")
            lines.append(f"  called by: {', '.join(callers) or 'nobody (entry or leaf)'}")
            lines.append(f"  calls: {', '.join(callees) or 'nothing'}")
        elif resolved in topology.nodes:
            hosted = sorted(p for p, n in topology.hosted_on.items() if n == resolved)
            lines.append(f"  node hosting: {', '.join(hosted) or 'no pods listed'}")
        else:
            lines.append("  not in the topology (seen only in telemetry)")
        return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="lines")

    # -- metrics --------------------------------------------------------------------------------

    def _summaries(
        self,
        keep: Callable[[str, str], bool],
        low: int | None,
        high: int | None,
        split: int | None,
    ) -> list[MetricSummary]:
        metrics = self.data.table("metrics")
        series: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        for key, name, value, time in zip(
            metrics.col("entity_name"),
            metrics.col("metric"),
            metrics.col("value"),
            metrics.col("time"),
            strict=True,
        ):
            if value is None or time is None or not keep(key, name):
                continue
            if not _in_window(time, low, high) or (isinstance(value, float) and math.isnan(value)):
                continue
            series[(key, name)].append((time, float(value)))
        summaries = []
        for (key, name), points in series.items():
            points.sort()
            cut = split if split is not None else points[len(points) // 2][0]
            before = [v for t, v in points if t < cut]
            after = [(t, v) for t, v in points if t >= cut]
            peak = max(after, key=lambda p: p[1]) if after else None
            summaries.append(
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
        return summaries

    def tool_query_metrics(
        self,
        entity: str | None = None,
        metric: str | None = None,
        start: str | None = None,
        end: str | None = None,
        baseline_end: str | None = None,
    ) -> str:
        metrics = self.data.table("metrics")
        if not metrics.rows:
            return "This case has no metrics."
        if not entity and not metric:
            raise ToolFailure(
                "query_metrics needs an entity, a metric, or both (list_entities and "
                "list_metric_names show the names)."
            )
        low, high = self.data.window(start, end)
        split = self.data.split_us(baseline_end)
        split_text = f"baseline before {_clock(split)}" if split else "baseline = first half"
        available = sorted(set(metrics.col("metric")))
        name = self.data.resolve_metric(metric, available) if metric else None
        if entity:
            resolved = self.data.resolve_entity(entity)
            members = self.data.members(resolved)
            summaries = self._summaries(
                lambda k, n: k in members and (name is None or n == name), low, high, split
            )
            if not summaries:
                what = f" for metric {name}" if name else ""
                return f"No metric points for {resolved}{what} in that window."
            if name is not None:
                return self._series(resolved, name, members, low, high, split_text, summaries)
            summaries.sort(key=lambda s: (-abs(s.change), s.metric))
            lines = [f"Metrics of {resolved} ({split_text}; most changed first):"]
            lines += [self._summary_line(s, with_entity=len(members) > 1) for s in summaries]
            return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="metrics")
        summaries = self._summaries(lambda k, n: n == name, low, high, split)
        summaries.sort(key=lambda s: (-s.change, s.entity))
        lines = [f"{name} by entity ({split_text}; biggest rise first):"]
        lines += [self._summary_line(s, with_entity=True, with_metric=False) for s in summaries]
        return clip_lines(lines, max_lines=25, max_chars=MAX_OUTPUT_CHARS, what="entities")

    def _summary_line(
        self, s: MetricSummary, *, with_entity: bool, with_metric: bool = True
    ) -> str:
        label = " / ".join(
            part for part, wanted in ((s.entity, with_entity), (s.metric, with_metric)) if wanted
        )
        return (
            f"  {label}: baseline {_fmt(s.baseline_mean)}, after mean {_fmt(s.incident_mean)}, "
            f"peak {_fmt(s.incident_peak)} at {_clock(s.peak_time)} "
            f"({_ratio(s.incident_peak, s.baseline_mean)}, score {s.change:.1f})"
        )

    def _series(
        self,
        entity: str,
        name: str,
        members: set[str],
        low: int | None,
        high: int | None,
        split_text: str,
        summaries: list[MetricSummary],
    ) -> str:
        metrics = self.data.table("metrics")
        points = sorted(
            (time, key, float(value))
            for key, metric, value, time in zip(
                metrics.col("entity_name"),
                metrics.col("metric"),
                metrics.col("value"),
                metrics.col("time"),
                strict=True,
            )
            if key in members
            and metric == name
            and value is not None
            and time is not None
            and _in_window(time, low, high)
        )
        # At most 40 points: evenly spaced, always keeping the peak.
        shown = points
        if len(points) > 40:
            step = len(points) / 40
            picked = {int(i * step) for i in range(40)}
            picked.add(max(range(len(points)), key=lambda i: points[i][2]))
            shown = [points[i] for i in sorted(picked)]
        lines = [f"{entity} / {name} ({split_text}):"]
        lines += [self._summary_line(s, with_entity=len(members) > 1) for s in summaries]
        several = len({key for _, key, _ in points}) > 1
        lines.append(
            f"Series ({len(points)} points{', sampled' if len(shown) < len(points) else ''}):"
        )
        lines += [
            f"  {_clock(time)} {_fmt(value)}" + (f" [{key}]" if several else "")
            for time, key, value in shown
        ]
        return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="points")

    # -- logs -------------------------------------------------------------------------------

    def tool_search_logs(
        self,
        pattern: str | None = None,
        entity: str | None = None,
        start: str | None = None,
        end: str | None = None,
        limit: int = 20,
    ) -> str:
        logs = self.data.table("logs")
        if not logs.rows:
            return "This case has no logs."
        low, high = self.data.window(start, end)
        members: set[str] | None = None
        if entity:
            resolved = self.data.resolve_entity(entity)
            members = self.data.members(resolved)
        needles = [p.strip().lower() for p in (pattern or "").split("|") if p.strip()]
        hits: list[tuple[int, str, str]] = []
        for pod, time, content in zip(
            logs.col("_pod_name_"), logs.col("_time_"), logs.col("content"), strict=True
        ):
            if members is not None and pod not in members:
                continue
            if not _in_window(time, low, high):
                continue
            text = str(content or "")
            if needles and not any(n in text.lower() for n in needles):
                continue
            hits.append((int(time or 0), str(pod), text))
        if not needles:
            return self._log_counts(hits)
        if not hits:
            return f"No log line matches {_short(pattern or '')!r} there."
        hits.sort()
        by_pod = Counter(pod for _, pod, _ in hits)
        counts = ", ".join(f"{pod} {n}" for pod, n in by_pod.most_common(10))
        lines = [f"{len(hits)} matching lines (per pod: {counts}). First {min(limit, len(hits))}:"]
        lines += [
            f"  {_clock(time)} {pod}: {_short(' '.join(text.split()), 240)}"
            for time, pod, text in hits[:limit]
        ]
        return clip_lines(lines, max_lines=limit + 2, max_chars=MAX_OUTPUT_CHARS, what="lines")

    def _log_counts(self, hits: list[tuple[int, str, str]]) -> str:
        total: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        for _, pod, text in hits:
            total[pod] += 1
            lowered = text.lower()
            if "error" in lowered or "exception" in lowered or "warn" in lowered:
                errors[pod] += 1
        if not total:
            return "No log lines there."
        lines = ["Log lines per pod (lines, of which error/warn/exception):"]
        lines += [
            f"  {pod}: {n}, {errors[pod]}"
            for pod, n in sorted(total.items(), key=lambda kv: (-errors[kv[0]], -kv[1], kv[0]))
        ]
        return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="pods")

    # -- traces -----------------------------------------------------------------------------

    def tool_query_traces(
        self,
        service: str | None = None,
        operation: str | None = None,
        min_duration_ms: int | None = None,
        errors_only: bool = False,
        baseline_end: str | None = None,
    ) -> str:
        traces = self.data.table("traces")
        if not traces.rows:
            return "This case has no traces."
        split = self.data.split_us(baseline_end)
        spans = list(
            zip(
                traces.col("spanId"),
                traces.col("parentSpanId"),
                traces.col("serviceName"),
                traces.col("spanName"),
                traces.col("startTime"),
                traces.col("duration"),
                traces.col("statusCode"),
                traces.col("statusMessage"),
                strict=True,
            )
        )

        def keep(span: tuple[Any, ...]) -> bool:
            name, duration, status = span[3], span[5], str(span[6])
            if operation and operation.lower() not in str(name).lower():
                return False
            if min_duration_ms is not None and (duration or 0) < min_duration_ms * 1_000_000:
                return False
            return not errors_only or status == "2"

        if not service:
            return self._trace_overview([s for s in spans if keep(s)], split)
        resolved = self.data.resolve_entity(service)
        target = self.data.service_of(resolved) or resolved
        owner = {s[0]: s[2] for s in spans}
        mine = [s for s in spans if s[2] == target and keep(s)]
        if not mine:
            return f"No spans of {target} match."
        lines = [f"Spans of {target}: {len(mine)}"]
        by_operation: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        for span in mine:
            by_operation[str(span[3])].append(span)
        lines.append("Operations (spans, p50 ms, p90 ms, max ms, errors):")
        for name, group in sorted(by_operation.items(), key=lambda kv: -len(kv[1]))[:12]:
            durations = [(s[5] or 0) / 1e6 for s in group]
            errors = sum(1 for s in group if str(s[6]) == "2")
            lines.append(
                f"  {_short(name, 60)}: {len(group)}, {_fmt(_percentile(durations, 0.5))}, "
                f"{_fmt(_percentile(durations, 0.9))}, {_fmt(max(durations))}, {errors}"
            )
        callees: dict[str, list[float]] = defaultdict(list)
        my_ids = {s[0] for s in spans if s[2] == target}
        for span in spans:
            if span[1] in my_ids and span[2] != target:
                callees[str(span[2])].append((span[5] or 0) / 1e6)
        if callees:
            lines.append("Calls it makes (callee: spans, p90 ms):")
            lines += [
                f"  {callee}: {len(d)}, {_fmt(_percentile(d, 0.9))}"
                for callee, d in sorted(
                    callees.items(), key=lambda kv: -(_percentile(kv[1], 0.9) or 0)
                )
            ]
        slowest = sorted(mine, key=lambda s: -(s[5] or 0))[:5]
        lines.append("Slowest spans (start, operation, ms, status, caller):")
        for span in slowest:
            caller = owner.get(span[1], "root") if span[1] else "root"
            lines.append(
                f"  {_clock((span[4] or 0) // 1000)} {_short(str(span[3]), 50)} "
                f"{_fmt((span[5] or 0) / 1e6)} {span[6]} {caller}"
            )
        failed = [s for s in mine if str(s[6]) == "2"]
        if failed:
            lines.append(f"Error spans ({len(failed)}), first messages:")
            for message, n in Counter(_short(str(s[7]), 160) for s in failed).most_common(4):
                lines.append(f"  x{n}: {message}")
        return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="lines")

    def _trace_overview(self, spans: list[tuple[Any, ...]], split: int | None) -> str:
        if not spans:
            return "No spans match."
        before: dict[str, list[float]] = defaultdict(list)
        after: dict[str, list[float]] = defaultdict(list)
        errors: Counter[str] = Counter()
        for span in spans:
            service = str(span[2])
            start_us = (span[4] or 0) // 1000
            bucket = before if split is not None and start_us < split else after
            bucket[service].append((span[5] or 0) / 1e6)
            if str(span[6]) == "2":
                errors[service] += 1
        rows = []
        for service in set(before) | set(after):
            p90_before = _percentile(before[service], 0.9)
            p90_after = _percentile(after[service], 0.9)
            rows.append((service, p90_before, p90_after))

        def rise(row: tuple[str, float | None, float | None]) -> float:
            _, b, a = row
            if a is None:
                return -1.0
            return a / b if b else a

        rows.sort(key=lambda r: (-errors[r[0]], -rise(r), r[0]))
        split_text = f"before/after {_clock(split)}" if split is not None else "all spans"
        lines = [f"Spans per service ({split_text}): spans, p90 ms before -> after, errors"]
        for service, p90_before, p90_after in rows:
            count = len(before[service]) + len(after[service])
            lines.append(
                f"  {service}: {count}, {_fmt(p90_before)} -> {_fmt(p90_after)} "
                f"({_ratio(p90_after, p90_before)}), {errors[service]}"
            )
        return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="services")

    # -- alerts -----------------------------------------------------------------------------

    def tool_get_alerts(self) -> str:
        alerts = self.data.table("alerts")
        if not alerts.rows:
            return "No alerts fired (the alert in task.json is the only signal)."
        lines = [f"{alerts.rows} alert row(s):"]
        for time, status, severity, data in zip(
            alerts.col("time"),
            alerts.col("status"),
            alerts.col("severity"),
            alerts.col("data"),
            strict=True,
        ):
            try:
                detail = json.loads(data) if isinstance(data, str) else data
                text = ", ".join(f"{k}={v}" for k, v in detail.items())
            except (ValueError, AttributeError):
                text = str(data)
            lines.append(f"  {_clock(time)} {status} {severity}: {_short(text, 400)}")
        return clip_lines(lines, max_lines=25, max_chars=MAX_OUTPUT_CHARS, what="alerts")


# -- the environment ------------------------------------------------------------------------------


@dataclass
class _Turn:
    """What one decision turn produced."""

    sections: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    terminal: BackendResult | None = None


class RcaEnvironment(ToolEnvironment):
    """One RCA case: query tools over the case folder, submit_root_cause to finish."""

    def __init__(
        self,
        case_id: str,
        *,
        env_name: str = NEZHA_ENV,
        split: str | None = None,
        max_steps: int | None = None,
        max_tool_calls: int | None = None,
        data_dir: str | Path | None = None,
    ) -> None:
        _import_parquet()
        data = RcaData.locate(env_name, data_dir)
        folder = data.case_folder(case_id)
        if not (data.answers_dir / f"{folder.name}.json").is_file():
            raise EnvError(
                f"No answer file answers/{folder.name}.json under {data.root}: the case cannot "
                "be scored. Every case folder needs its answer in answers/."
            )
        telemetry = CaseTelemetry(folder)
        system = str(telemetry.task.get("system") or "unknown")
        chosen = split or DEFAULT_SPLIT
        if chosen not in (DEFAULT_SPLIT, system):
            raise EnvError(f"RCA case {folder.name} belongs to {system}, not split {chosen!r}.")
        super().__init__(
            task_id=folder.name,
            max_steps=max_steps or DEFAULT_MAX_TURNS,
            category=system,
            split=chosen,
        )
        self.name = env_name
        self.max_tool_calls = max_tool_calls or DEFAULT_MAX_TOOL_CALLS
        if self.max_tool_calls < 1:
            raise EnvError(f"max_tool_calls must be at least 1 (got {self.max_tool_calls}).")
        self.tool_calls_used = 0
        self._answers_dir = data.answers_dir
        self._telemetry = telemetry
        self._tools = RcaTools(telemetry)
        listed = telemetry.task.get("fault_types")
        self.fault_types = (
            tuple(str(t) for t in listed)
            if isinstance(listed, list) and listed
            else DEFAULT_FAULT_TYPES
        )
        self._specs = (*RCA_QUERY_TOOLS, _submit_spec(self.fault_types))

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return list(self._specs)

    # -- BudgetedEnvironment ---------------------------------------------------------------

    def _backend_reset(self) -> BackendResult:
        self.tool_calls_used = 0
        task = self._telemetry.task
        self.goal = (
            "Find the root cause of the alert: the faulty pod or service and the fault type, "
            "then submit them with submit_root_cause."
        )
        text = (
            f"Incident {self.task_id} ({task.get('system', '?')}): "
            f"{task.get('alert_title', 'an alert fired')}.\n"
            f"{task.get('description', '')}\n\n"
            f"You are the on-call SRE. Investigate with the tools, then call submit_root_cause "
            f"(fault types: {', '.join(self.fault_types)}). Budget: {self.max_steps} turns, "
            f"at most {self.max_tool_calls} tool calls; a turn is one call or a JSON list of up "
            f"to {CALLS_PER_TURN} calls.\n"
            f"Tools: {', '.join(t.name for t in self._specs)}.\n"
            'Action format: {"tool": "<name>", "args": {...}}, e.g. '
            '{"tool": "query_metrics", "args": {"metric": "CpuUsageRate(%)"}}.'
        )
        return BackendResult(text=text, admissible_actions=None, extra=self._base_info())

    def _backend_step(self, action: str) -> BackendResult:
        try:
            calls = parse_tool_calls(action, self._specs, max_calls=CALLS_PER_TURN)
        except ToolCallError as error:
            invalid = self.invalid_result(str(error))
            invalid.extra.update(self._base_info())
            return self._pending(invalid)
        turn = self._run_turn(calls)
        if turn.terminal is not None:
            return turn.terminal
        text = "\n\n".join(turn.sections)
        result = BackendResult(text=text, admissible_actions=None, extra=self._base_info())
        if turn.errors and len(turn.errors) == len(turn.sections):
            result.invalid = True
            result.error = " | ".join(turn.errors)
        if self.tool_calls_used >= self.max_tool_calls:
            result.done = True
            result.text += (
                f"\n\n[Tool-call budget of {self.max_tool_calls} exhausted: the case ends as a "
                "failure.]"
            )
            result.extra.update(self._failure_info())
            result.extra["budget_exhausted"] = True
            return result
        result.text += (
            f"\n[{self.max_steps - self.steps_used} turn(s), "
            f"{self.max_tool_calls - self.tool_calls_used} tool call(s) left]"
        )
        return self._pending(result)

    def _backend_restart(self) -> None:
        """Nothing runs in the background: a restart has nothing to replace."""

    def _backend_close(self) -> None:
        """Nothing to stop."""

    # -- turns ------------------------------------------------------------------------------

    def _run_turn(self, calls: list[ToolCall]) -> _Turn:
        turn = _Turn()
        several = len(calls) > 1
        for number, call in enumerate(calls, start=1):
            header = f"[{number}] {call.tool}\n" if several else ""
            if self.tool_calls_used >= self.max_tool_calls:
                turn.sections.append(f"{header}Not run: the tool-call budget is used up.")
                turn.errors.append("tool-call budget used up")
                continue
            self.tool_calls_used += 1
            if call.tool == "submit_root_cause":
                outcome = self._submit(call)
                if isinstance(outcome, str):
                    turn.sections.append(f"{header}{outcome}")
                    turn.errors.append(outcome)
                    continue
                earlier = "\n\n".join(turn.sections)
                outcome.text = f"{earlier}\n\n{header}{outcome.text}" if earlier else outcome.text
                turn.terminal = outcome
                return turn
            try:
                output = self._tools.run(call)
            except ToolFailure as failure:
                output = f"Error: {failure}"
                turn.errors.append(str(failure))
            except Exception as exc:  # a tool bug must cost one call, not the case
                output = f"Error: {call.tool} failed ({type(exc).__name__}: {exc})."
                turn.errors.append(output)
            turn.sections.append(f"{header}{output}")
        return turn

    def _submit(self, call: ToolCall) -> BackendResult | str:
        """The terminal result, or the error text of a malformed submission."""
        try:
            entity = self._telemetry.resolve_entity(str(call.args["root_cause_entity"]))
        except ToolFailure as failure:
            return f"Submission not accepted: {failure} Submit again."
        fault_type = normalize_fault_type(str(call.args["fault_type"]))
        allowed = {normalize_fault_type(t): t for t in self.fault_types}
        if fault_type not in allowed:
            return (
                f"Submission not accepted: unknown fault_type {call.args['fault_type']!r}; use "
                f"one of {', '.join(self.fault_types)}. Submit again."
            )
        answer = read_answer(self._answers_dir, self.task_id)
        score = score_submission(answer, entity, allowed[fault_type], self._telemetry.service_of)
        verdict = "correct" if score.joint else "not fully correct"
        return BackendResult(
            text=f"Root cause submitted: {entity}, {allowed[fault_type]}. The case is closed "
            f"({verdict}: FT {int(score.ft)}, RCL {int(score.rcl)}).",
            admissible_actions=None,
            done=True,
            success=score.joint,
            score=1.0 if score.joint else 0.0,
            extra={
                **self._base_info(),
                "metrics": score.metrics(),
                "judge": "matcher",
                "rcl_pod_exact": score.pod_exact,
                "submission": {
                    "root_cause_entity": entity,
                    "fault_type": allowed[fault_type],
                    "analysis": str(call.args.get("analysis", "")),
                },
                "answer": {
                    "root_cause_entities": list(answer.root_cause_entities),
                    "root_cause_types": list(answer.root_cause_types),
                },
            },
        )

    # -- info -------------------------------------------------------------------------------

    def _base_info(self) -> dict[str, Any]:
        return {
            "subset": self.category,
            "tool_calls_used": self.tool_calls_used,
            "max_tool_calls": self.max_tool_calls,
        }

    def _failure_info(self) -> dict[str, Any]:
        return {"metrics": {"FT": 0, "RCL": 0, "Joint": 0}, "judge": "none"}

    def _pending(self, result: BackendResult) -> BackendResult:
        """A non-terminal result; on the last turn it carries the failure metrics."""
        if not result.done and self.steps_used >= self.max_steps:
            result.extra.update(self._failure_info())
        return result
