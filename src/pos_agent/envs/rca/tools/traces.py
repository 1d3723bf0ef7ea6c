"""query_traces: span latency and errors, per service or for one service."""

from __future__ import annotations

from collections import Counter, defaultdict

from pos_agent.envs.rca.telemetry import CaseTelemetry, Span
from pos_agent.envs.rca.text import MAX_OUTPUT_CHARS, clock, number, percentile, ratio, short
from pos_agent.envs.rca.tools.base import RcaTool
from pos_agent.envs.rca.tools.params import BASELINE_END
from pos_agent.envs.tools import ToolSpec, clip_lines, integer_param, object_schema, string_param


def query_traces(
    data: CaseTelemetry,
    service: str | None = None,
    operation: str | None = None,
    min_duration_ms: int | None = None,
    errors_only: bool = False,
    baseline_end: str | None = None,
) -> str:
    spans = data.spans()
    if not spans:
        return "This case has no traces."
    split = data.split_us(baseline_end)

    def keep(span: Span) -> bool:
        if operation and operation.lower() not in span.name.lower():
            return False
        if min_duration_ms is not None and span.duration_ms < min_duration_ms:
            return False
        return not errors_only or span.failed

    if not service:
        return _overview([s for s in spans if keep(s)], split)
    resolved = data.resolve_entity(service)
    target = data.service_of(resolved) or resolved
    return _one_service(target, spans, [s for s in spans if s.service == target and keep(s)])


def _one_service(target: str, spans: list[Span], mine: list[Span]) -> str:
    if not mine:
        return f"No spans of {target} match."
    lines = [f"Spans of {target}: {len(mine)}"]
    by_operation: dict[str, list[Span]] = defaultdict(list)
    for span in mine:
        by_operation[span.name].append(span)
    lines.append("Operations (spans, p50 ms, p90 ms, max ms, errors):")
    for name, group in sorted(by_operation.items(), key=lambda kv: -len(kv[1]))[:12]:
        durations = [s.duration_ms for s in group]
        errors = sum(s.failed for s in group)
        lines.append(
            f"  {short(name, 60)}: {len(group)}, {number(percentile(durations, 0.5))}, "
            f"{number(percentile(durations, 0.9))}, {number(max(durations))}, {errors}"
        )
    callees: dict[str, list[float]] = defaultdict(list)
    my_ids = {s.span_id for s in spans if s.service == target and s.span_id}
    for span in spans:
        if span.parent_id in my_ids and span.service != target:
            callees[span.service].append(span.duration_ms)
    if callees:
        lines.append("Calls it makes (callee: spans, p90 ms):")
        lines += [
            f"  {callee}: {len(d)}, {number(percentile(d, 0.9))}"
            for callee, d in sorted(callees.items(), key=lambda kv: -(percentile(kv[1], 0.9) or 0))
        ]
    owner = {s.span_id: s.service for s in spans}
    slowest = sorted(mine, key=lambda s: -s.duration_ns)[:5]
    lines.append("Slowest spans (start, operation, ms, status, caller):")
    for span in slowest:
        caller = owner.get(span.parent_id, "root") if span.parent_id else "root"
        lines.append(
            f"  {clock(span.start_us)} {short(span.name, 50)} "
            f"{number(span.duration_ms)} {span.status} {caller}"
        )
    failed = [s for s in mine if s.failed]
    if failed:
        lines.append(f"Error spans ({len(failed)}), first messages:")
        for message, n in Counter(short(s.message, 160) for s in failed).most_common(4):
            lines.append(f"  x{n}: {message}")
    return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="lines")


def _overview(spans: list[Span], split: int | None) -> str:
    if not spans:
        return "No spans match."
    before: dict[str, list[float]] = defaultdict(list)
    after: dict[str, list[float]] = defaultdict(list)
    errors: Counter[str] = Counter()
    for span in spans:
        bucket = before if split is not None and span.start_us < split else after
        bucket[span.service].append(span.duration_ms)
        if span.failed:
            errors[span.service] += 1
    rows = [
        (service, percentile(before[service], 0.9), percentile(after[service], 0.9))
        for service in set(before) | set(after)
    ]

    def rise(row: tuple[str, float | None, float | None]) -> float:
        _, b, a = row
        if a is None:
            return -1.0
        return a / b if b else a

    rows.sort(key=lambda r: (-errors[r[0]], -rise(r), r[0]))
    split_text = f"before/after {clock(split)}" if split is not None else "all spans"
    lines = [f"Spans per service ({split_text}): spans, p90 ms before -> after, errors"]
    for service, p90_before, p90_after in rows:
        count = len(before[service]) + len(after[service])
        lines.append(
            f"  {service}: {count}, {number(p90_before)} -> {number(p90_after)} "
            f"({ratio(p90_after, p90_before)}), {errors[service]}"
        )
    return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="services")


TRACES_TOOL = RcaTool(
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
            baseline_end=BASELINE_END,
        ),
    ),
    query_traces,
)
