"""The orientation tools: what the case holds, its names, its topology and its alerts."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from pos_agent.envs.rca.telemetry import CaseTelemetry, Table
from pos_agent.envs.rca.text import MAX_OUTPUT_CHARS, clock, short
from pos_agent.envs.rca.tools.base import RcaTool
from pos_agent.envs.rca.tools.params import ENTITY
from pos_agent.envs.tools import ToolSpec, clip_lines, object_schema, string_param

ENTITY_TYPES = ("service", "pod", "node")


def get_data_overview(data: CaseTelemetry) -> str:
    task = data.task
    window = task.get("alert_window") or {}
    topology = data.topology
    metrics, logs = data.table("metrics"), data.table("logs")
    alerts = data.table("alerts")
    lines = [
        f"Case {task.get('task_id', data.folder.name)} ({task.get('system', '?')}): "
        f"{task.get('alert_title', '')}",
        f"Alert time: {task.get('alert_time', '?')} on {task.get('alert_entity', '?')}; "
        f"telemetry window {window.get('start', '?')} .. {window.get('end', '?')}.",
        f"Description: {task.get('description', '')}",
        f"Topology: {len(topology.services)} services, {len(topology.pods)} pods, "
        f"{len(topology.nodes)} nodes, {len(topology.calls)} call edges.",
    ]
    lines.append(_metrics_overview(metrics))
    if logs.rows:
        pods = Counter(logs.col("_pod_name_"))
        times = [t for t in logs.col("_time_") if t is not None]
        lines.append(
            f"Logs: {logs.rows} lines from {len(pods)} pods, "
            f"{clock(min(times))} .. {clock(max(times))}."
        )
    else:
        lines.append("Logs: none in this case.")
    spans = data.spans()
    if spans:
        services = Counter(span.service for span in spans)
        starts = [span.start_us for span in spans if span.start_ns]
        errors = sum(span.failed for span in spans)
        lines.append(
            f"Traces: {len(spans)} spans from {len(services)} services, "
            f"{clock(min(starts))} .. {clock(max(starts))}; {errors} with error status."
        )
    else:
        lines.append("Traces: none in this case.")
    lines.append(f"Alerts: {alerts.rows} row(s); get_alerts shows them.")
    split = data.split_us(None)
    if split is not None:
        lines.append(
            f"Before/after comparisons split at {clock(split)} (3 min before the alert); "
            "pass baseline_end to change it."
        )
    return "\n".join(lines)


def _metrics_overview(metrics: Table) -> str:
    if not metrics.rows:
        return "Metrics: none in this case."
    entities = set(metrics.col("entity_name"))
    names = set(metrics.col("metric"))
    times = [t for t in metrics.col("time") if t is not None]
    return (
        f"Metrics: {metrics.rows} points, {len(names)} metric names over {len(entities)} "
        f"entities, {clock(min(times))} .. {clock(max(times))}."
    )


def list_entities(data: CaseTelemetry, type: str | None = None) -> str:
    names = data.entity_names()
    lines = []
    for kind in (*ENTITY_TYPES, "entity"):
        if type and kind != type:
            continue
        members = sorted(n for n, k in names.items() if k == kind)
        if not members:
            continue
        lines.append(f"{kind}s ({len(members)}):")
        for name in members:
            extra = ""
            if kind == "pod":
                service = data.topology.pods.get(name)
                node = data.topology.hosted_on.get(name)
                extra = f"  (service {service or '?'}" + (f", node {node})" if node else ")")
            lines.append(f"  {name}{extra}")
    if not lines:
        return f"No entities of type {type!r}."
    return clip_lines(lines, max_lines=160, max_chars=MAX_OUTPUT_CHARS, what="entities")


def list_metric_names(data: CaseTelemetry, entity: str | None = None) -> str:
    metrics = data.table("metrics")
    if not metrics.rows:
        return "This case has no metrics."
    keys = metrics.col("entity_name")
    names = metrics.col("metric")
    if not entity:
        counted = Counter(names)
        owners: dict[str, set[str]] = defaultdict(set)
        for key, name in zip(keys, names, strict=True):
            owners[name].add(key)
        lines = ["Metric names (points, entities):"] + [
            f"  {name} ({counted[name]}, {len(owners[name])})" for name in sorted(counted)
        ]
        return clip_lines(lines, max_lines=120, max_chars=MAX_OUTPUT_CHARS, what="metrics")
    resolved = data.resolve_entity(entity)
    members = data.members(resolved)
    counted = Counter(n for k, n in zip(keys, names, strict=True) if k in members)
    if not counted:
        return f"No metrics recorded for {resolved}."
    lines = [f"Metrics of {resolved} (points):"]
    lines += [f"  {name} ({counted[name]})" for name in sorted(counted)]
    return clip_lines(lines, max_lines=120, max_chars=MAX_OUTPUT_CHARS, what="metrics")


def get_topology(data: CaseTelemetry, entity: str | None = None) -> str:
    topology = data.topology
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
    resolved = data.resolve_entity(entity)
    service = data.service_of(resolved)
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


def get_alerts(data: CaseTelemetry) -> str:
    alerts = data.table("alerts")
    if not alerts.rows:
        return "No alerts fired (the alert in task.json is the only signal)."
    lines = [f"{alerts.rows} alert row(s):"]
    for time, status, severity, detail in alerts.rows_of("time", "status", "severity", "data"):
        try:
            decoded = json.loads(detail) if isinstance(detail, str) else detail
            text = ", ".join(f"{k}={v}" for k, v in decoded.items())
        except (ValueError, AttributeError):
            text = str(detail)
        lines.append(f"  {clock(time)} {status} {severity}: {short(text, 400)}")
    return clip_lines(lines, max_lines=25, max_chars=MAX_OUTPUT_CHARS, what="alerts")


OVERVIEW_TOOLS = (
    RcaTool(
        ToolSpec(
            "get_data_overview",
            "What telemetry this case has: time window, entities, metric/log/span/alert counts.",
            object_schema(),
        ),
        get_data_overview,
    ),
    RcaTool(
        ToolSpec(
            "list_entities",
            "List the services, pods and nodes (optionally of one type).",
            object_schema(
                type=string_param("Only entities of this type.", enum=list(ENTITY_TYPES))
            ),
        ),
        list_entities,
    ),
    RcaTool(
        ToolSpec(
            "list_metric_names",
            "List the metric names (optionally those of one entity).",
            object_schema(entity=ENTITY),
        ),
        list_metric_names,
    ),
    RcaTool(
        ToolSpec(
            "get_topology",
            "The call graph; with an entity: its callers, callees, pods and node.",
            object_schema(entity=ENTITY),
        ),
        get_topology,
    ),
)
ALERT_TOOL = RcaTool(
    ToolSpec("get_alerts", "The alerts that fired for this case.", object_schema()), get_alerts
)
