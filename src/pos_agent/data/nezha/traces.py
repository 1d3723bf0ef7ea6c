"""Spans of a case: the trace files' spans in the window, with a status derived from the logs.

Nezha's traces carry no span status. A span gets `statusCode` "2" (error) when an error-level
or exception log line of the window names its TraceID and SpanID, and `statusMessage` quotes
that line; every other span is "0" (unset). At most `cap` spans per minute (of the trace's
root span), by whole trace: traces with an error span are always kept, the others are taken in
a seeded random order while they fit.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pos_agent.data.nezha.logs import content_of
from pos_agent.data.nezha.upstream import DateFolder, service_of

SPAN_CAP = 3000
ERROR_LOG = re.compile(r"ERROR|[Ee]xception")
STATUS_PREFIX = "derived from ERROR log on this span: "
QUOTE_CHARS = 300
MINUTE_NS = 60_000_000_000

Span = tuple[str, str, str, str, str, int, int, str, str]
"""(traceId, spanId, parentSpanId, serviceName, spanName, startTime ns, duration ns,
statusCode, statusMessage) -- the columns of traces.parquet."""
COLUMNS = (
    "traceId",
    "spanId",
    "parentSpanId",
    "serviceName",
    "spanName",
    "startTime",
    "duration",
    "statusCode",
    "statusMessage",
)


@dataclass
class CaseSpans:
    rows: list[Span] = field(default_factory=list)
    errors_before_sampling: int = 0


def error_logs(
    folder: DateFolder, files: list[str], start: int, end: int
) -> dict[tuple[str, str], str]:
    """(TraceID, SpanID) -> the first error-level log line of the window that names them."""
    low, high = start * 1_000_000_000, end * 1_000_000_000
    found: dict[tuple[str, str], tuple[int, str]] = {}
    for name in files:
        for record in folder.csv_rows(f"log/{name}") or []:
            nanos = int(record["TimeUnixNano"])
            trace, span = record.get("TraceID") or "", record.get("SpanID") or ""
            if not (low <= nanos <= high and trace and span):
                continue
            text = content_of(record.get("Log") or "")
            if text is None or not ERROR_LOG.search(text):
                continue
            key = (trace, span)
            if key not in found or nanos < found[key][0]:
                found[key] = (nanos, text)
    return {key: text for key, (_nanos, text) in found.items()}


def window_spans(
    folder: DateFolder, files: list[str], start: int, end: int, errors: dict[tuple[str, str], str]
) -> list[Span]:
    """The distinct spans of `files` that start in [start, end], with their derived status."""
    low, high = start * 1_000_000_000, end * 1_000_000_000
    seen: set[tuple[str, ...]] = set()
    spans: list[Span] = []
    for name in files:
        for record in folder.csv_rows(f"trace/{name}") or []:
            begin = int(record["StartTimeUnixNano"])
            key = tuple(record.values())
            if not low <= begin <= high or key in seen:
                continue
            seen.add(key)
            trace, span = record["TraceID"], record["SpanID"]
            message = errors.get((trace, span))
            parent = record["ParentID"]
            spans.append(
                (
                    trace,
                    span,
                    "" if parent == "root" else parent,
                    service_of(record["PodName"]),
                    record["OperationName"],
                    begin,
                    int(record["EndTimeUnixNano"]) - begin,
                    "0" if message is None else "2",
                    "" if message is None else STATUS_PREFIX + message[:QUOTE_CHARS],
                )
            )
    return spans


def cap_spans(spans: list[Span], rng: Any, cap: int = SPAN_CAP) -> list[Span]:
    """At most `cap` spans per minute of trace start (the root span's), by whole trace: traces
    with an error span first, then the others in a seeded random order while they fit. Every
    minute draws its order, in minute order, so that one minute's size never changes another
    minute's sample. Sorted by start time, trace and span id."""
    roots = {span[0]: span[5] for span in spans if span[2] == ""}
    minutes: dict[int, list[int]] = {}
    for at, span in enumerate(spans):
        minutes.setdefault(roots.get(span[0], span[5]) // MINUTE_NS, []).append(at)
    kept: list[int] = []
    for minute in sorted(minutes):
        members = minutes[minute]
        sizes = Counter(spans[at][0] for at in members)
        failing = {spans[at][0] for at in members if spans[at][7] == "2"}
        chosen = set(failing)
        total = sum(sizes[trace] for trace in failing)
        others = sorted(set(sizes) - failing)
        for index in rng.permutation(len(others)):
            trace = others[int(index)]
            if total + sizes[trace] <= cap:
                chosen.add(trace)
                total += sizes[trace]
        kept.extend(at for at in members if spans[at][0] in chosen)
    return sorted((spans[at] for at in sorted(kept)), key=lambda span: (span[5], span[0], span[1]))


def case_spans(
    folder: DateFolder,
    trace_files: list[str],
    log_files: list[str],
    start: int,
    end: int,
    rng: Any,
    cap: int = SPAN_CAP,
) -> CaseSpans:
    errors = error_logs(folder, log_files, start, end)
    spans = window_spans(folder, trace_files, start, end, errors)
    failing = sum(1 for span in spans if span[7] == "2")
    return CaseSpans(rows=cap_spans(spans, rng, cap), errors_before_sampling=failing)
