"""A deterministic incident generator writing RCA100-layout cases with answers.

    from pos_agent.envs.rca_generator import generate
    generate("runs/synthetic-rca", n_cases=200, seed=7)   # cases/, answers/, index.jsonl

Each case is a small service call graph (one entry service, 6-10 services, one or two pods
each, 3-4 nodes) observed for ten minutes, with one injected fault of a known type at a known
pod (never the entry service), starting six minutes in and lasting three. The fault shows up
as it would in the Nezha data:

| fault type | at the faulty pod | along the calls |
|---|---|---|
| `cpu_consumed` | CpuUsageRate 90-99 %, server latency x2-3 | callers' latency rises |
| `cpu_contention` | node CPU 85-95 %, own CPU x2-3 (< 70 %), "waiting for CPU" warnings, latency x3-5 | callers' latency rises |
| `network_delay` | +150-400 ms server latency, CPU flat | callers' client and server latency rise |
| `exception` | ERROR lines with an injected exception, error spans | callers log failed calls; entry success drops |
| `return` | nothing unusual in its own logs | callers log invalid responses from it, their spans fail |

Latency propagates to every transitive caller. Every case also has noise (Gaussian metric
noise, sampled INFO logs, log-normal span durations) and a red herring: a pod off the fault's
path whose CPU spikes during the incident and which logs a benign ERROR at a steady rate through
the whole window. The same seed always writes the same files.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pos_agent.envs._types import EnvError
from pos_agent.envs.rca import DEFAULT_FAULT_TYPES

SYSTEM = "synthetic-shop"
ENTRY = "frontend"
SERVICE_POOL = (
    "checkout",
    "cart",
    "catalog",
    "payment",
    "shipping",
    "currency",
    "email",
    "recommendation",
    "ad",
    "auth",
    "user",
    "inventory",
    "order",
    "search",
    "review",
)
WINDOW_MINUTES = 10
FAULT_START_MINUTE = 6
FAULT_MINUTES = 3
ALERT_DELAY = timedelta(minutes=2)
REQUESTS_PER_MINUTE = 12
_HEX = "0123456789abcdef"
_ALNUM = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class Service:
    """One service of the generated system."""

    name: str
    pods: list[str]
    own_ms: float
    callees: list[str] = field(default_factory=list)


@dataclass
class Incident:
    """Everything about one generated case before it is written."""

    case_id: str
    services: dict[str, Service]
    nodes: dict[str, str]
    fault_type: str
    fault_pod: str
    fault_service: str
    red_herring_pod: str
    start: datetime
    second_offset: int
    fault_delay_ms: float
    fault_factor: float

    @property
    def fault_start(self) -> datetime:
        return self.start + timedelta(minutes=FAULT_START_MINUTE)

    @property
    def fault_end(self) -> datetime:
        return self.fault_start + timedelta(minutes=FAULT_MINUTES)

    @property
    def alert_time(self) -> datetime:
        return self.fault_start + ALERT_DELAY

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=WINDOW_MINUTES)

    def service_of(self, pod: str) -> str:
        return next(s.name for s in self.services.values() if pod in s.pods)

    def callers_of(self, service: str) -> list[str]:
        return sorted(s.name for s in self.services.values() if service in s.callees)

    def faulty(self, moment: datetime) -> bool:
        return self.fault_start <= moment < self.fault_end


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _us(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def _pod_name(rng: random.Random, service: str) -> str:
    replica = "".join(rng.choice(_HEX) for _ in range(9))
    suffix = "".join(rng.choice(_ALNUM) for _ in range(5))
    return f"{service}-{replica}-{suffix}"


def build_incident(case_id: str, rng: random.Random, fault_type: str, day: int) -> Incident:
    """The system, its fault and its red herring (no telemetry yet)."""
    count = rng.randint(5, 9)
    names = [ENTRY, *rng.sample(SERVICE_POOL, count)]
    services: dict[str, Service] = {}
    for name in names:
        pods = [_pod_name(rng, name) for _ in range(2 if rng.random() < 0.2 else 1)]
        services[name] = Service(name, pods, own_ms=rng.uniform(2.0, 20.0))
    # A layered DAG: every service has a caller earlier in the list, so all are reachable.
    for index, name in enumerate(names[1:], start=1):
        caller = ENTRY if index <= 2 else rng.choice(names[:index])
        if name not in services[caller].callees:
            services[caller].callees.append(name)
        if rng.random() < 0.3 and index > 1:
            extra = rng.choice(names[1:index])
            if name not in services[extra].callees:
                services[extra].callees.append(name)
    node_names = [f"node-{n}" for n in range(1, rng.randint(3, 4) + 1)]
    nodes = {pod: rng.choice(node_names) for s in services.values() for pod in s.pods}
    fault_service = rng.choice(names[1:])
    fault_pod = rng.choice(services[fault_service].pods)
    affected = {fault_service} | _ancestors(services, fault_service)
    bystanders = [
        pod
        for s in services.values()
        if s.name not in affected
        for pod in s.pods
        if nodes[pod] != nodes[fault_pod]
    ]
    if not bystanders:
        bystanders = [p for s in services.values() if s.name != fault_service for p in s.pods]
    start = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=day, minutes=rng.randrange(0, 1380))
    return Incident(
        case_id=case_id,
        services=services,
        nodes=nodes,
        fault_type=fault_type,
        fault_pod=fault_pod,
        fault_service=fault_service,
        red_herring_pod=rng.choice(bystanders),
        start=start.replace(second=0),
        second_offset=rng.randrange(0, 60),
        fault_delay_ms=rng.uniform(150.0, 400.0),
        fault_factor=rng.uniform(2.0, 3.0) if fault_type == "cpu_consumed" else rng.uniform(3, 5),
    )


def _ancestors(services: dict[str, Service], service: str) -> set[str]:
    found: set[str] = set()
    frontier = [service]
    while frontier:
        current = frontier.pop()
        for s in services.values():
            if current in s.callees and s.name not in found:
                found.add(s.name)
                frontier.append(s.name)
    return found


# -- telemetry --------------------------------------------------------------------------------


def _own_latency_ms(incident: Incident, service: str, pod: str, moment: datetime) -> float:
    """A request's processing time in the pod itself (children excluded)."""
    base = incident.services[service].own_ms
    if pod != incident.fault_pod or not incident.faulty(moment):
        return base
    # A saturated CPU queues requests; a jammed network delays every response.
    if incident.fault_type == "cpu_consumed":
        return base * incident.fault_factor + 0.6 * incident.fault_delay_ms
    if incident.fault_type == "cpu_contention":
        return base * incident.fault_factor + incident.fault_delay_ms
    if incident.fault_type == "network_delay":
        return base + incident.fault_delay_ms
    return base


def _service_latency_ms(
    incident: Incident, service: str, moment: datetime, cache: dict[str, float]
) -> float:
    """Typical (p90-ish) latency seen at a service's server side, children included."""
    if service in cache:
        return cache[service]
    pods = incident.services[service].pods
    own = max(_own_latency_ms(incident, service, pod, moment) for pod in pods)
    if len(pods) > 1:
        # Only one pod of the service is faulty: its p90 rises by about half the effect.
        normal = incident.services[service].own_ms
        own = normal + (own - normal) * 0.5
    children = sum(
        0.8 * _service_latency_ms(incident, callee, moment, cache)
        for callee in incident.services[service].callees
    )
    cache[service] = own + children
    return cache[service]


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
        self.metrics["time"].append(_us(moment))

    def log(self, pod: str, moment: datetime, content: str) -> None:
        self.logs["_pod_name_"].append(pod)
        self.logs["_time_"].append(_us(moment))
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
            server_ms = _service_latency_ms(incident, service.name, moment, cache)
            client_ms = sum(
                _service_latency_ms(incident, c, moment, cache) for c in service.callees
            )
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
                                _own_latency_ms(incident, service.name, p, moment)
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
        entry_ms = _service_latency_ms(incident, ENTRY, moment, cache) * 1.1
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
        return "".join(rng.choice(_HEX) for _ in range(length - 6)) + f"{counter:06x}"

    def span(
        trace_id: str, parent: str, service: str, start: datetime, depth: int
    ) -> tuple[float, bool]:
        """Emit a span (and its children); returns its duration in ms and whether it failed."""
        pod = rng.choice(incident.services[service].pods)
        span_id = new_id(16)
        own = _own_latency_ms(incident, service, pod, start) * math.exp(rng.gauss(0.0, 0.25))
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
        out.traces["startTime"].append(_us(start) * 1000)
        out.traces["duration"].append(int(duration * 1_000_000))
        out.traces["statusCode"].append("2" if failed else "0")
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
    cut = _us(incident.fault_start)
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


# -- writing ---------------------------------------------------------------------------------------


def _write_parquet(path: Path, columns: dict[str, list[Any]], types: dict[str, str]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise EnvError(
            "The incident generator writes parquet with pyarrow: install the `diagnosis` extra "
            "(`uv sync --extra diagnosis`)."
        ) from exc
    kinds = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64()}
    schema = pa.schema([(name, kinds[types[name]]) for name in columns])
    pq.write_table(pa.table(columns, schema=schema), path)


def write_case(
    root: Path, incident: Incident, telemetry: Telemetry, seed: int, index: int
) -> dict[str, Any]:
    """Write one case folder and its answer; returns its index.jsonl row."""
    folder = root / "cases" / incident.case_id
    folder.mkdir(parents=True, exist_ok=True)
    task = {
        "task_id": incident.case_id,
        "system": SYSTEM,
        "alert_title": f"Elevated latency/error rate at {ENTRY}",
        "alert_time": _iso(incident.alert_time),
        "alert_window": {"start": _iso(incident.start), "end": _iso(incident.end)},
        "alert_entity": ENTRY,
        "description": (
            f"An alert reports elevated latency or errors at the entry service {ENTRY} of a "
            f"synthetic shop deployment around {_iso(incident.alert_time)}; use the telemetry in "
            "this folder to identify the root-cause component and the kind of fault."
        ),
        "fault_types": list(DEFAULT_FAULT_TYPES),
    }
    (folder / "task.json").write_text(json.dumps(task, indent=2) + "\n", encoding="utf-8")
    entities: list[dict[str, Any]] = []
    edges: list[dict[str, str]] = []
    for service in sorted(incident.services.values(), key=lambda s: s.name):
        entities.append(
            {
                "id": service.name,
                "name": service.name,
                "type": "service",
                "props": {"pods": list(service.pods)},
            }
        )
        for callee in sorted(service.callees):
            edges.append({"src": service.name, "dst": callee, "relation": "calls"})
    for pod, node in sorted(incident.nodes.items()):
        service_name = incident.service_of(pod)
        entities.append({"id": pod, "name": pod, "type": "pod", "props": {"service": service_name}})
        edges.append({"src": pod, "dst": service_name, "relation": "instance_of"})
        edges.append({"src": pod, "dst": node, "relation": "hosted_on"})
    for node in sorted(set(incident.nodes.values())):
        entities.append({"id": node, "name": node, "type": "node", "props": {}})
    (folder / "topology.json").write_text(
        json.dumps({"entities": entities, "edges": edges}, indent=1) + "\n", encoding="utf-8"
    )
    _write_parquet(
        folder / "metrics.parquet",
        telemetry.metrics,
        {"entity_name": "string", "metric": "string", "value": "float64", "time": "int64"},
    )
    _write_parquet(
        folder / "logs.parquet",
        telemetry.logs,
        {"_pod_name_": "string", "_time_": "int64", "content": "string"},
    )
    _write_parquet(
        folder / "traces.parquet",
        telemetry.traces,
        {
            "traceId": "string",
            "spanId": "string",
            "parentSpanId": "string",
            "serviceName": "string",
            "spanName": "string",
            "startTime": "int64",
            "duration": "int64",
            "statusCode": "string",
            "statusMessage": "string",
        },
    )
    _write_parquet(
        folder / "alerts.parquet",
        telemetry.alerts,
        {"time": "int64", "status": "string", "severity": "string", "data": "string"},
    )
    answer = {
        "case_id": incident.case_id,
        "root_cause_entities": [incident.fault_pod, incident.fault_service],
        "root_cause_types": [incident.fault_type],
        "inject_time": _iso(incident.fault_start),
        "system": SYSTEM,
        "source": f"rca_generator seed {seed} #{index}",
    }
    answers = root / "answers"
    answers.mkdir(parents=True, exist_ok=True)
    (answers / f"{incident.case_id}.json").write_text(
        json.dumps(answer, indent=2) + "\n", encoding="utf-8"
    )
    return {
        "case_id": incident.case_id,
        "system": SYSTEM,
        "fault_type": incident.fault_type,
        "root_cause_service": incident.fault_service,
        "root_cause_pod": incident.fault_pod,
        "red_herring_pod": incident.red_herring_pod,
        "inject_time": _iso(incident.fault_start),
        "window_start": _iso(incident.start),
        "window_end": _iso(incident.end),
        "n_services": len(incident.services),
        "n_metric_rows": len(telemetry.metrics["time"]),
        "n_log_lines": len(telemetry.logs["_time_"]),
        "n_spans": len(telemetry.traces["spanId"]),
        "n_alerts": len(telemetry.alerts["time"]),
        "seed": seed,
    }


def generate_case(case_id: str, seed: int, index: int) -> tuple[Incident, Telemetry]:
    """One incident and its telemetry, determined by (seed, index)."""
    rng = random.Random(f"rca-generator:{seed}:{index}")
    rotation = random.Random(f"rca-generator:{seed}").randrange(len(DEFAULT_FAULT_TYPES))
    # Round-robin over the fault types so that any five consecutive cases cover all of them.
    fault_type = DEFAULT_FAULT_TYPES[(index + rotation) % len(DEFAULT_FAULT_TYPES)]
    incident = build_incident(case_id, rng, fault_type, day=(seed * 7 + index) % 365)
    telemetry = Telemetry()
    build_metrics(incident, rng, telemetry)
    build_logs(incident, rng, telemetry)
    build_traces(incident, rng, telemetry)
    build_alerts(telemetry, incident)
    return incident, telemetry


def generate(out_dir: str | Path, n_cases: int, seed: int) -> list[str]:
    """Write `n_cases` incidents (cases/, answers/, index.jsonl) under `out_dir`; their ids.

    Deterministic: the same (n_cases, seed) writes the same files. Case ids are
    `syn-<seed>-<NNNN>`. Existing files of the same ids are overwritten; index.jsonl is
    rewritten.
    """
    if n_cases < 1:
        raise EnvError(f"n_cases must be at least 1 (got {n_cases}).")
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    ids: list[str] = []
    for index in range(n_cases):
        case_id = f"syn-{seed}-{index:04d}"
        incident, telemetry = generate_case(case_id, seed, index)
        rows.append(write_case(root, incident, telemetry, seed, index))
        ids.append(case_id)
    (root / "index.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    return ids
