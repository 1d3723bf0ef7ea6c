"""The four telemetry tables of a generated incident: metrics, logs, traces and alerts, with
noise and the red herring. Every draw comes from the case's own random generator, in a fixed
order, so the same seed writes the same rows."""

from __future__ import annotations

import json
import math
import random
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pos_agent.envs.rca.generator.incident import (
    ENTRY,
    FAULT_START_MINUTE,
    HEX,
    REQUESTS_PER_MINUTE,
    WINDOW_MINUTES,
    Incident,
    own_latency_ms,
    service_latency_ms,
    to_us,
)
from pos_agent.envs.rca.telemetry import SPAN_ERROR_STATUS, SPAN_UNSET_STATUS


@dataclass
class Telemetry:
    """Rows for the four parquet files."""

    metrics: dict[str, list[Any]] = field(
        default_factory=lambda: {"entity_name": [], "metric": [], "value": [], "time": []}
    )
    logs: dict[str, list[Any]] = field(
        default_factory=lambda: {"_pod_name_": [], "_time_": [], "content": []}
    )
    traces: dict[str, list[Any]] = field(
        default_factory=lambda: {
            "traceId": [],
            "spanId": [],
            "parentSpanId": [],
            "serviceName": [],
            "spanName": [],
            "startTime": [],
            "duration": [],
            "statusCode": [],
            "statusMessage": [],
        }
    )
    alerts: dict[str, list[Any]] = field(
        default_factory=lambda: {"time": [], "status": [], "severity": [], "data": []}
    )

    def metric(self, entity: str, name: str, value: float, moment: datetime) -> None:
        self.metrics["entity_name"].append(entity)
        self.metrics["metric"].append(name)
        self.metrics["value"].append(float(value))
        self.metrics["time"].append(to_us(moment))

    def log(self, pod: str, moment: datetime, content: str) -> None:
        self.logs["_pod_name_"].append(pod)
        self.logs["_time_"].append(to_us(moment))
        self.logs["content"].append(content)


def _noisy(rng: random.Random, value: float, spread: float = 0.05) -> float:
    return max(0.0, value * (1.0 + rng.gauss(0.0, spread)))


def _error_rate(incident: Incident, moment: datetime) -> float:
    """Percent of entry requests failing (code faults only)."""
    if incident.fault_type in ("exception", "return") and incident.faulty(moment):
        return 25.0 if incident.fault_type == "exception" else 15.0
    return 0.0


def build_metrics(incident: Incident, rng: random.Random, out: Telemetry) -> None:
    base_cpu = {pod: rng.uniform(2.0, 20.0) for pod in incident.nodes}
    base_memory = {pod: rng.uniform(150.0, 600.0) for pod in incident.nodes}
    # Sorted: a set's order changes between interpreter runs, and the draws must not.
    base_node = {node: rng.uniform(15.0, 40.0) for node in sorted(set(incident.nodes.values()))}
    fault_node = incident.nodes[incident.fault_pod]
    for minute in range(WINDOW_MINUTES + 1):
        moment = incident.start + timedelta(minutes=minute, seconds=incident.second_offset)
        faulty = incident.faulty(moment)
        cache: dict[str, float] = {}
        for service in incident.services.values():
            server_ms = service_latency_ms(incident, service.name, moment, cache)
            client_ms = sum(service_latency_ms(incident, c, moment, cache) for c in service.callees)
            for pod in service.pods:
                cpu = base_cpu[pod]
                node_cpu = base_node[incident.nodes[pod]]
                if faulty and pod == incident.fault_pod:
                    if incident.fault_type == "cpu_consumed":
                        cpu = rng.uniform(90.0, 99.0)
                    elif incident.fault_type == "cpu_contention":
                        cpu = min(69.0, cpu * rng.uniform(2.0, 3.0))
                if (
                    faulty
                    and incident.fault_type == "cpu_contention"
                    and (incident.nodes[pod] == fault_node)
                ):
                    node_cpu = rng.uniform(85.0, 95.0)
                elif (
                    faulty
                    and incident.fault_type == "cpu_consumed"
                    and (incident.nodes[pod] == fault_node)
                ):
                    node_cpu = base_node[fault_node] + 10.0
                if pod == incident.red_herring_pod and minute in (
                    FAULT_START_MINUTE,
                    FAULT_START_MINUTE + 1,
                ):
                    cpu = min(75.0, cpu * rng.uniform(3.0, 5.0))
                own_server = server_ms
                if len(service.pods) > 1 and pod != incident.fault_pod:
                    own_server = (
                        server_ms
                        - (
                            max(
                                own_latency_ms(incident, service.name, p, moment)
                                for p in service.pods
                            )
                            - service.own_ms
                        )
                        * 0.5
                    )
                workload = rng.uniform(8.0, 12.0)
                out.metric(pod, "CpuUsageRate(%)", _noisy(rng, cpu), moment)
                out.metric(pod, "MemoryUsage(Mi)", _noisy(rng, base_memory[pod], 0.01), moment)
                out.metric(pod, "NodeCpuUsageRate(%)", _noisy(rng, node_cpu, 0.03), moment)
                out.metric(pod, "PodWorkload(Ops)", workload, moment)
                out.metric(pod, "PodServerLatencyP90(s)", _noisy(rng, own_server) / 1000, moment)
                out.metric(pod, "PodClientLatencyP90(s)", _noisy(rng, client_ms) / 1000, moment)
                out.metric(pod, "NetworkReceiveBytes", _noisy(rng, workload * 900), moment)
                out.metric(pod, "NetworkTransmitBytes", _noisy(rng, workload * 2100), moment)
        entry_ms = service_latency_ms(incident, ENTRY, moment, cache) * 1.1
        out.metric(ENTRY, "LatencyP90(s)", _noisy(rng, entry_ms) / 1000, moment)
        success = 100.0 - _error_rate(incident, moment) - abs(rng.gauss(0.0, 0.2))
        out.metric(ENTRY, "SuccessRate(%)", success, moment)


_INFO_TEMPLATES = (
    "INFO  request handled path=/api/{service}/{n} status=200",
    "INFO  cache hit ratio={ratio:.2f}",
    "INFO  served {n} items in {ms:.0f}ms",
    "DEBUG connection pool size={n}",
)


def build_logs(incident: Incident, rng: random.Random, out: Telemetry) -> None:
    for minute in range(WINDOW_MINUTES):
        for service in incident.services.values():
            for pod in service.pods:
                for _ in range(rng.randint(2, 4)):
                    moment = incident.start + timedelta(minutes=minute, seconds=rng.uniform(0, 59))
                    template = rng.choice(_INFO_TEMPLATES)
                    out.log(
                        pod,
                        moment,
                        template.format(
                            service=service.name,
                            n=rng.randint(1, 99),
                            ratio=rng.random(),
                            ms=rng.uniform(1, 50),
                        ),
                    )
                if pod == incident.red_herring_pod:
                    for second in (5, 25, 45):
                        out.log(
                            pod,
                            incident.start + timedelta(minutes=minute, seconds=second),
                            "ERROR cache refresh failed (timeout talking to config store); "
                            "serving the stale entry",
                        )
        moment0 = incident.start + timedelta(minutes=minute)
        if not incident.faulty(moment0):
            continue
        fault = incident.fault_service
        for _ in range(rng.randint(4, 7)):
            moment = moment0 + timedelta(seconds=rng.uniform(0, 59))
            if incident.fault_type == "exception":
                out.log(
                    incident.fault_pod,
                    moment,
                    f"ERROR {fault}.Handler - java.lang.RuntimeException: injected failure "
                    f"while processing request",
                )
                for caller in incident.callers_of(fault):
                    out.log(
                        incident.services[caller].pods[0],
                        moment + timedelta(milliseconds=5),
                        f"WARN  call to {fault} failed: HTTP 500 Internal Server Error",
                    )
            elif incident.fault_type == "return":
                for caller in incident.callers_of(fault):
                    out.log(
                        incident.services[caller].pods[0],
                        moment + timedelta(milliseconds=5),
                        f"ERROR invalid response from {fault}: unexpected value in field "
                        f"'result' (validation failed)",
                    )
            elif incident.fault_type == "cpu_contention":
                out.log(
                    incident.fault_pod,
                    moment,
                    "WARN  request processing slow: worker threads waiting for CPU",
                )
            elif incident.fault_type == "network_delay":
                for caller in incident.callers_of(fault):
                    out.log(
                        incident.services[caller].pods[0],
                        moment + timedelta(milliseconds=5),
                        f"WARN  slow response from {fault} ({incident.fault_delay_ms:.0f}ms)",
                    )


def build_traces(incident: Incident, rng: random.Random, out: Telemetry) -> None:
    counter = 0

    def new_id(length: int) -> str:
        nonlocal counter
        counter += 1
        return "".join(rng.choice(HEX) for _ in range(length - 6)) + f"{counter:06x}"

    def span(
        trace_id: str, parent: str, service: str, start: datetime, depth: int
    ) -> tuple[float, bool]:
        """Emit a span (and its children); returns its duration in ms and whether it failed."""
        pod = rng.choice(incident.services[service].pods)
        span_id = new_id(16)
        own = own_latency_ms(incident, service, pod, start) * math.exp(rng.gauss(0.0, 0.25))
        elapsed = own / 2
        failed = False
        message = ""
        if (
            pod == incident.fault_pod
            and incident.faulty(start)
            and (incident.fault_type == "exception" and rng.random() < 0.6)
        ):
            failed, message = True, "java.lang.RuntimeException: injected failure"
        for callee in incident.services[service].callees:
            if depth > 6 or rng.random() > 0.7:
                continue
            child_ms, child_failed = span(
                trace_id, span_id, callee, start + timedelta(milliseconds=elapsed), depth + 1
            )
            elapsed += child_ms
            if child_failed and not failed:
                failed, message = True, f"call to {callee} failed"
            if (
                callee == incident.fault_service
                and incident.fault_type == "return"
                and incident.faulty(start)
                and rng.random() < 0.5
            ):
                failed, message = True, f"invalid response from {callee}"
        duration = elapsed + own / 2
        out.traces["traceId"].append(trace_id)
        out.traces["spanId"].append(span_id)
        out.traces["parentSpanId"].append(parent)
        out.traces["serviceName"].append(service)
        out.traces["spanName"].append(f"/{service}.{rng.choice(('Get', 'List', 'Update'))}")
        out.traces["startTime"].append(to_us(start) * 1000)
        out.traces["duration"].append(int(duration * 1_000_000))
        out.traces["statusCode"].append(SPAN_ERROR_STATUS if failed else SPAN_UNSET_STATUS)
        out.traces["statusMessage"].append(message)
        return duration, failed

    for minute in range(WINDOW_MINUTES):
        for _ in range(REQUESTS_PER_MINUTE):
            start = incident.start + timedelta(minutes=minute, seconds=rng.uniform(0, 59))
            span(new_id(32), "", ENTRY, start, 0)


def build_alerts(out: Telemetry, incident: Incident) -> None:
    """Entry latency above 2x, or error rate above max(2x, +1 point), versus the pre-fault median."""
    rows = sorted(
        (time, metric, value)
        for entity, metric, value, time in zip(
            out.metrics["entity_name"],
            out.metrics["metric"],
            out.metrics["value"],
            out.metrics["time"],
            strict=True,
        )
        if entity == ENTRY and metric in ("LatencyP90(s)", "SuccessRate(%)")
    )
    cut = to_us(incident.fault_start)
    latency_before = [v for t, m, v in rows if m == "LatencyP90(s)" and t < cut]
    errors_before = [100 - v for t, m, v in rows if m == "SuccessRate(%)" and t < cut]
    latency_median = statistics.median(latency_before)
    error_median = statistics.median(errors_before)
    firing: str | None = None
    for time, metric, value in rows:
        if time < cut:
            continue
        if metric == "LatencyP90(s)":
            crossed = value > 2 * latency_median
            name, shown, baseline = "EntryLatencyP90High", value, latency_median
            severe = value > 5 * latency_median
        else:
            error = 100 - value
            crossed = error > max(2 * error_median, error_median + 1)
            name, shown, baseline = "EntryErrorRateHigh", error, error_median
            severe = error >= error_median + 10
        if crossed and firing is None:
            firing = name
            _alert(out, time, "firing", "critical" if severe else "warning", name, shown, baseline)
        elif not crossed and firing == name:
            _alert(out, time, "resolved", "info", name, shown, baseline)
            firing = None


def _alert(
    out: Telemetry, time: int, status: str, severity: str, name: str, value: float, base: float
) -> None:
    out.alerts["time"].append(time)
    out.alerts["status"].append(status)
    out.alerts["severity"].append(severity)
    out.alerts["data"].append(
        json.dumps(
            {
                "alertname": name,
                "service": ENTRY,
                "entity_name": ENTRY,
                "value": round(value, 4),
                "baseline_median": round(base, 4),
            }
        )
    )
