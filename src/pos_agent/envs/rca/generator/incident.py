"""The synthetic system and its fault: services, pods, nodes, the injected fault, the red herring,
and how latency follows from them. Telemetry is built from this in `signals`."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

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
HEX = "0123456789abcdef"
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


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def to_us(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def _pod_name(rng: random.Random, service: str) -> str:
    replica = "".join(rng.choice(HEX) for _ in range(9))
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


def own_latency_ms(incident: Incident, service: str, pod: str, moment: datetime) -> float:
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


def service_latency_ms(
    incident: Incident, service: str, moment: datetime, cache: dict[str, float]
) -> float:
    """Typical (p90-ish) latency seen at a service's server side, children included."""
    if service in cache:
        return cache[service]
    pods = incident.services[service].pods
    own = max(own_latency_ms(incident, service, pod, moment) for pod in pods)
    if len(pods) > 1:
        # Only one pod of the service is faulty: its p90 rises by about half the effect.
        normal = incident.services[service].own_ms
        own = normal + (own - normal) * 0.5
    children = sum(
        0.8 * service_latency_ms(incident, callee, moment, cache)
        for callee in incident.services[service].callees
    )
    cache[service] = own + children
    return cache[service]
