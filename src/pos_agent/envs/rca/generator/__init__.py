"""A deterministic incident generator writing RCA100-layout cases with answers.

    from pos_agent.envs.rca.generator import generate
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
import random
from pathlib import Path
from typing import Any

from pos_agent.envs._types import EnvError
from pos_agent.envs.rca.generator.incident import ENTRY, SYSTEM, Incident, build_incident, iso
from pos_agent.envs.rca.generator.signals import (
    Telemetry,
    build_alerts,
    build_logs,
    build_metrics,
    build_traces,
)
from pos_agent.envs.rca.scoring import DEFAULT_FAULT_TYPES


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


# The column types of each telemetry file, as RCA100's parquet files have them.
TELEMETRY_COLUMNS: dict[str, dict[str, str]] = {
    "metrics": {"entity_name": "string", "metric": "string", "value": "float64", "time": "int64"},
    "logs": {"_pod_name_": "string", "_time_": "int64", "content": "string"},
    "traces": {
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
    "alerts": {"time": "int64", "status": "string", "severity": "string", "data": "string"},
}


def write_case(
    root: Path, incident: Incident, telemetry: Telemetry, seed: int, index: int
) -> dict[str, Any]:
    """Write one case folder and its answer; returns its index.jsonl row."""
    folder = root / "cases" / incident.case_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(
        json.dumps(_task(incident), indent=2) + "\n", encoding="utf-8"
    )
    (folder / "topology.json").write_text(
        json.dumps(_topology(incident), indent=1) + "\n", encoding="utf-8"
    )
    tables = {
        "metrics": telemetry.metrics,
        "logs": telemetry.logs,
        "traces": telemetry.traces,
        "alerts": telemetry.alerts,
    }
    for name, columns in tables.items():
        _write_parquet(folder / f"{name}.parquet", columns, TELEMETRY_COLUMNS[name])
    answer = {
        "case_id": incident.case_id,
        "root_cause_entities": [incident.fault_pod, incident.fault_service],
        "root_cause_types": [incident.fault_type],
        "inject_time": iso(incident.fault_start),
        "system": SYSTEM,
        "source": f"rca_generator seed {seed} #{index}",
    }
    answers = root / "answers"
    answers.mkdir(parents=True, exist_ok=True)
    (answers / f"{incident.case_id}.json").write_text(
        json.dumps(answer, indent=2) + "\n", encoding="utf-8"
    )
    return _index_row(incident, telemetry, seed)


def _task(incident: Incident) -> dict[str, Any]:
    """task.json: the alert the agent starts from."""
    return {
        "task_id": incident.case_id,
        "system": SYSTEM,
        "alert_title": f"Elevated latency/error rate at {ENTRY}",
        "alert_time": iso(incident.alert_time),
        "alert_window": {"start": iso(incident.start), "end": iso(incident.end)},
        "alert_entity": ENTRY,
        "description": (
            f"An alert reports elevated latency or errors at the entry service {ENTRY} of a "
            f"synthetic shop deployment around {iso(incident.alert_time)}; use the telemetry in "
            "this folder to identify the root-cause component and the kind of fault."
        ),
        "fault_types": list(DEFAULT_FAULT_TYPES),
    }


def _topology(incident: Incident) -> dict[str, Any]:
    """topology.json: services, pods and nodes, and the calls, instances and hosts between."""
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
    return {"entities": entities, "edges": edges}


def _index_row(incident: Incident, telemetry: Telemetry, seed: int) -> dict[str, Any]:
    """The case's line in index.jsonl."""
    return {
        "case_id": incident.case_id,
        "system": SYSTEM,
        "fault_type": incident.fault_type,
        "root_cause_service": incident.fault_service,
        "root_cause_pod": incident.fault_pod,
        "red_herring_pod": incident.red_herring_pod,
        "inject_time": iso(incident.fault_start),
        "window_start": iso(incident.start),
        "window_end": iso(incident.end),
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


__all__ = ["ENTRY", "SYSTEM", "generate", "generate_case", "write_case"]
