"""Converting Nezha's `rca_data/` into the RCA100 case layout, one date at a time.

Output: `cases/<id>/` (task.json, topology.json, metrics/logs/traces/alerts parquet),
`answers/<id>.json`, `index.jsonl` (one line per case: system, fault, window, coverage,
counts), README.md and LICENSE. Each case's sampling is seeded by its id, so the output is the
same on every machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.data.nezha.alerts import derive_alerts
from pos_agent.data.nezha.cases import CasePlan, plan_cases, set_window
from pos_agent.data.nezha.logs import LOG_CAP, case_logs
from pos_agent.data.nezha.metrics import DateMetrics, read_metrics
from pos_agent.data.nezha.sampling import case_rng
from pos_agent.data.nezha.topology import boutique_topology, trainticket_topology
from pos_agent.data.nezha.traces import SPAN_CAP, case_spans
from pos_agent.data.nezha.upstream import DateFolder, list_dates, system_of
from pos_agent.data.nezha.write import (
    write_alerts,
    write_json,
    write_logs,
    write_metrics,
    write_spans,
)
from pos_agent.data.tree import SourceTree

Progress = Callable[[str], None]


@dataclass
class DateSummary:
    """What the README says about one date."""

    date: str
    system: str
    pods: int
    injections: int
    first_row: int
    last_row: int
    log_files: int
    log_missing: int
    trace_files: int
    trace_missing: int
    call_edges: int
    dropped_pod_columns: list[str] = field(default_factory=list)
    dropped_front_columns: list[str] = field(default_factory=list)
    inferred: list[tuple[str, str]] = field(default_factory=list)


def _topology(
    folder: DateFolder, pods: list[str], system: str
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    if system == "online-boutique":
        return boutique_topology(folder, pods)
    traces = [item.name for item in folder.minute_files("trace") if item.present]
    logs = [item.name for item in folder.minute_files("log") if item.present]
    return trainticket_topology(folder, pods, traces, logs)


def build_case(
    plan: CasePlan,
    folder: DateFolder,
    metrics: DateMetrics,
    topology: dict[str, Any],
    out: Path,
    caps: tuple[int, int],
) -> dict[str, Any]:
    """Write one case and return its index line."""
    folder_out = out / "cases" / plan.case_id
    folder_out.mkdir(parents=True, exist_ok=True)
    log_files = plan.wanted(folder.minute_files("log"))
    trace_files = plan.wanted(folder.minute_files("trace"))
    logs_used = [item.name for item in log_files if item.present]
    traces_used = [item.name for item in trace_files if item.present]
    rng = case_rng(plan.case_id)
    rows = metrics.window(plan.start, plan.end)
    logs = case_logs(folder, logs_used, plan.start, plan.end, rng, caps[0])
    spans = case_spans(folder, traces_used, logs_used, plan.start, plan.end, rng, caps[1])
    alerts = derive_alerts(rows, plan.system, plan.injection.time)
    write_json(folder_out / "task.json", plan.task())
    write_json(folder_out / "topology.json", topology, indent=1)
    write_metrics(folder_out / "metrics.parquet", rows)
    write_logs(folder_out / "logs.parquet", logs.rows)
    write_spans(folder_out / "traces.parquet", spans.rows)
    write_alerts(folder_out / "alerts.parquet", alerts)
    write_json(out / "answers" / f"{plan.case_id}.json", plan.answer())
    return {
        "case_id": plan.case_id,
        "system": plan.system,
        "fault_type": plan.injection.kind,
        "root_cause_service": plan.service,
        "source": plan.injection.source,
        "inject_time": plan.answer()["inject_time"],
        "window_start": plan.task()["alert_window"]["start"],
        "window_end": plan.task()["alert_window"]["end"],
        "has_logs": bool(logs.rows),
        "has_traces": bool(spans.rows),
        "n_metric_rows": len(rows),
        "n_log_lines": len(logs.rows),
        "n_log_lines_before_cap": logs.before_cap,
        "n_spans": len(spans.rows),
        "n_error_spans": sum(1 for span in spans.rows if span[7] == "2"),
        "n_error_spans_before_sampling": spans.errors_before_sampling,
        "n_alerts": len(alerts),
        "alert_fired": any(alert[1] == "firing" for alert in alerts),
        "log_files_used": logs_used,
        "log_files_missing_from_snapshot": [i.name for i in log_files if not i.present],
        "trace_files_used": traces_used,
        "trace_files_missing_from_snapshot": [i.name for i in trace_files if not i.present],
        "prev_injection_gap_s": plan.prev_gap,
        "next_injection_gap_s": plan.next_gap,
        "window_notes": plan.notes,
        "source_inject_timestamp_offset_s": plan.injection.timestamp - plan.injection.time,
    }


def convert(
    tree: SourceTree,
    out: Path,
    *,
    only: set[str] | None = None,
    caps: tuple[int, int] = (LOG_CAP, SPAN_CAP),
    progress: Progress | None = None,
) -> tuple[list[dict[str, Any]], list[DateSummary]]:
    """Convert every case (or the ids in `only`) into `out`; the index lines and date notes."""
    say = progress or (lambda _message: None)
    folders = {date: DateFolder(tree, date) for date in list_dates(tree)}
    pods = {date: folder.pods() for date, folder in folders.items()}
    systems = {date: system_of(pods[date]) for date in folders}
    injections = {date: folder.injections() for date, folder in folders.items()}
    plans = plan_cases(injections, systems)
    index: list[dict[str, Any]] = []
    summaries = []
    for date, folder in folders.items():
        todo = [
            p for p in plans if p.injection.date == date and (only is None or p.case_id in only)
        ]
        if not todo:
            continue
        say(f"{date} ({systems[date]}): reading metrics of {len(pods[date])} pods")
        metrics = read_metrics(folder, systems[date], pods[date])
        topology, inferred = _topology(folder, pods[date], systems[date])
        for plan in todo:
            set_window(plan, metrics.first_time)
            index.append(build_case(plan, folder, metrics, topology, out, caps))
            say(
                f"{plan.case_id}: {index[-1]['n_metric_rows']} metric rows, "
                f"{index[-1]['n_log_lines']} log lines, {index[-1]['n_spans']} spans"
            )
        summaries.append(
            _summary(
                date,
                folder,
                systems[date],
                pods[date],
                injections[date],
                metrics,
                topology,
                inferred,
            )
        )
        del metrics
    index.sort(key=lambda line: line["case_id"])
    return index, summaries


def _summary(
    date: str,
    folder: DateFolder,
    system: str,
    pods: list[str],
    injections: list[Any],
    metrics: DateMetrics,
    topology: dict[str, Any],
    inferred: list[tuple[str, str]],
) -> DateSummary:
    logs, traces = folder.minute_files("log"), folder.minute_files("trace")
    return DateSummary(
        date=date,
        system=system,
        pods=len(pods),
        injections=len(injections),
        first_row=metrics.first_time,
        last_row=metrics.last_time,
        log_files=len(logs),
        log_missing=sum(1 for item in logs if not item.present),
        trace_files=len(traces),
        trace_missing=sum(1 for item in traces if not item.present),
        call_edges=sum(1 for edge in topology["edges"] if edge["relation"] == "calls"),
        dropped_pod_columns=metrics.dropped_pod_columns,
        dropped_front_columns=metrics.dropped_front_columns,
        inferred=inferred,
    )
