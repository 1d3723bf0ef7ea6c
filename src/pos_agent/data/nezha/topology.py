"""The topology of a date: services, pods and nodes, and the calls / instance_of / hosted_on
edges between them.

Services are pod names without the ReplicaSet hash and pod suffix. Online Boutique's call
edges and hosts come from `metric/dependency.csv` (`service -> service` and `service -> IP`
rows). TrainTicket's call edges are the parent -> child span pairs that cross services, pooled
over every trace file of the date, and its pods are placed by the `Node` column of the logs;
its entry proxy (`ts-ui-dashboard`) is not instrumented, so its one edge, to the gateway where
the traces start, is added and said to be inferred.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pos_agent.data.nezha.logs import pod_nodes
from pos_agent.data.nezha.upstream import ENTRY_SERVICE, DateFolder, service_of

TT_INFERRED = (("ts-ui-dashboard", "ts-gateway-service"),)


def _entities(pods: list[str], system: str, nodes: dict[str, str]) -> list[dict[str, Any]]:
    services: dict[str, list[str]] = {}
    for pod in pods:
        services.setdefault(service_of(pod), []).append(pod)
    found: list[dict[str, Any]] = []
    for service in sorted(services):
        props: dict[str, Any] = {"pods": sorted(services[service])}
        if service == ENTRY_SERVICE[system]:
            props["entry"] = True
        found.append({"id": service, "name": service, "type": "service", "props": props})
    for pod in pods:
        pod_props = {"service": service_of(pod)}
        if pod in nodes:
            pod_props["node"] = nodes[pod]
        found.append({"id": pod, "name": pod, "type": "pod", "props": pod_props})
    for node in sorted(set(nodes.values())):
        found.append({"id": node, "name": node, "type": "node", "props": {"ip": node}})
    return found


def _edges(
    calls: Iterable[tuple[str, str]], pods: list[str], nodes: dict[str, str]
) -> list[dict[str, str]]:
    found = [{"src": a, "dst": b, "relation": "calls"} for a, b in sorted(set(calls))]
    for pod in pods:
        found.append({"src": pod, "dst": service_of(pod), "relation": "instance_of"})
        if pod in nodes:
            found.append({"src": pod, "dst": nodes[pod], "relation": "hosted_on"})
    return found


def boutique_topology(
    folder: DateFolder, pods: list[str]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    services = {service_of(pod) for pod in pods}
    rows = folder.csv_rows("metric/dependency.csv") or []
    calls = [
        (r["Source"], r["Target"])
        for r in rows
        if r["Source"] in services and r["Target"] in services
    ]
    hosts = {
        r["Source"]: r["Target"]
        for r in rows
        if r["Source"] in services and r["Target"] not in services
    }
    nodes = {pod: hosts[service_of(pod)] for pod in pods if service_of(pod) in hosts}
    topology = {
        "entities": _entities(pods, "online-boutique", nodes),
        "edges": _edges(calls, pods, nodes),
    }
    return topology, []


def span_calls(folder: DateFolder, trace_files: list[str]) -> set[tuple[str, str]]:
    """Service pairs of parent -> child spans that cross services, over `trace_files`."""
    pods_of: dict[tuple[str, str], str] = {}
    links: list[tuple[str, str, str]] = []
    for name in trace_files:
        for record in folder.csv_rows(f"trace/{name}") or []:
            pods_of[(record["TraceID"], record["SpanID"])] = record["PodName"]
            if record["ParentID"] != "root":
                links.append((record["TraceID"], record["ParentID"], record["PodName"]))
    calls = set()
    for trace, parent, pod in links:
        parent_pod = pods_of.get((trace, parent))
        if parent_pod is None:
            continue
        caller, callee = service_of(parent_pod), service_of(pod)
        if caller != callee:
            calls.add((caller, callee))
    return calls


def trainticket_topology(
    folder: DateFolder, pods: list[str], trace_files: list[str], log_files: list[str]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The topology, and the call edges that were inferred rather than seen in traces."""
    calls = span_calls(folder, trace_files)
    inferred = [edge for edge in TT_INFERRED if edge not in calls]
    calls.update(inferred)
    known = set(pods)
    nodes = {pod: node for pod, node in pod_nodes(folder, log_files).items() if pod in known}
    topology = {
        "entities": _entities(pods, "train-ticket", nodes),
        "edges": _edges(calls, pods, nodes),
    }
    return topology, inferred
