"""search_logs: matching log lines, or line and error counts per pod."""

from __future__ import annotations

from collections import Counter

from pos_agent.envs.rca.telemetry import CaseTelemetry, in_window
from pos_agent.envs.rca.text import MAX_OUTPUT_CHARS, clock, short
from pos_agent.envs.rca.tools.base import RcaTool
from pos_agent.envs.rca.tools.params import END, ENTITY, START
from pos_agent.envs.tools import ToolSpec, clip_lines, integer_param, object_schema, string_param

# Words that make a log line count as an error line in the per-pod counts.
ERROR_WORDS = ("error", "exception", "warn")
MAX_LIMIT = 50


def search_logs(
    data: CaseTelemetry,
    pattern: str | None = None,
    entity: str | None = None,
    start: str | None = None,
    end: str | None = None,
    limit: int = 20,
) -> str:
    logs = data.table("logs")
    if not logs.rows:
        return "This case has no logs."
    low, high = data.window(start, end)
    members: set[str] | None = None
    if entity:
        members = data.members(data.resolve_entity(entity))
    needles = [p.strip().lower() for p in (pattern or "").split("|") if p.strip()]
    hits: list[tuple[int, str, str]] = []
    for pod, time, content in logs.rows_of("_pod_name_", "_time_", "content"):
        if members is not None and pod not in members:
            continue
        if not in_window(time, low, high):
            continue
        text = str(content or "")
        if needles and not any(n in text.lower() for n in needles):
            continue
        hits.append((int(time or 0), str(pod), text))
    if not needles:
        return _log_counts(hits)
    if not hits:
        return f"No log line matches {short(pattern or '')!r} there."
    hits.sort()
    by_pod = Counter(pod for _, pod, _ in hits)
    counts = ", ".join(f"{pod} {n}" for pod, n in by_pod.most_common(10))
    lines = [f"{len(hits)} matching lines (per pod: {counts}). First {min(limit, len(hits))}:"]
    lines += [
        f"  {clock(time)} {pod}: {short(' '.join(text.split()), 240)}"
        for time, pod, text in hits[:limit]
    ]
    return clip_lines(lines, max_lines=limit + 2, max_chars=MAX_OUTPUT_CHARS, what="lines")


def _log_counts(hits: list[tuple[int, str, str]]) -> str:
    total: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for _, pod, text in hits:
        total[pod] += 1
        lowered = text.lower()
        if any(word in lowered for word in ERROR_WORDS):
            errors[pod] += 1
    if not total:
        return "No log lines there."
    lines = ["Log lines per pod (lines, of which error/warn/exception):"]
    lines += [
        f"  {pod}: {n}, {errors[pod]}"
        for pod, n in sorted(total.items(), key=lambda kv: (-errors[kv[0]], -kv[1], kv[0]))
    ]
    return clip_lines(lines, max_lines=60, max_chars=MAX_OUTPUT_CHARS, what="pods")


LOGS_TOOL = RcaTool(
    ToolSpec(
        "search_logs",
        "Search log lines (case-insensitive text; 'a|b' matches either). Without a pattern: "
        "line and error counts per pod.",
        object_schema(
            pattern=string_param("Text to find, e.g. 'error|exception'."),
            entity=ENTITY,
            start=START,
            end=END,
            limit=integer_param(
                f"Lines to show (1-{MAX_LIMIT}, default 20).", minimum=1, maximum=MAX_LIMIT
            ),
        ),
    ),
    search_logs,
)
