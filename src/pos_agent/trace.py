"""Run records (docs/trace.md): typed, versioned events in `events.jsonl` and an atomic `result.json`.

One schema (`pos_agent.events`), written by the runner and read by the viewer and the reports.
Events are appended and flushed one line at a time, so an interrupted or killed run leaves a
readable prefix; the result file is written to a temporary file and renamed into place, so it is
either absent or whole. Nothing here ever writes an API key: payloads pass through `redact_record` first.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, Literal, get_args

from pydantic import BaseModel, Field

from pos_agent.events import EVENT_KINDS, TRACE_VERSION, Event, TraceLines, parse_lines
from pos_agent.redaction import redact_record

__all__ = [
    "EVENT_KINDS",
    "KNOWN_RESULT_VERSIONS",
    "RESULT_VERSION",
    "SCORED_STATUSES",
    "STATUSES",
    "STATUS_MEANINGS",
    "TRACE_VERSION",
    "CaseResult",
    "RoleTokens",
    "Status",
    "TraceWriter",
    "encodable",
    "is_scored",
    "read_events",
    "read_result",
    "read_trace",
    "record_line",
    "record_problems",
    "redact_record",
    "result_problems",
    "trace_problems",
    "write_json_atomic",
    "write_result",
    "write_text_atomic",
]

RESULT_VERSION = 2  # 2: statuses config_error/harness_error, settings and provenance fields
KNOWN_RESULT_VERSIONS = frozenset({1, 2})  # a resume reruns results of any other version

# -- case statuses: the one list that runner, summary, report and CLI share ----------------------
Status = Literal[
    "success",
    "failure",
    "config_error",
    "harness_error",
    "infra_error",
    "interrupted",
    "error",
]
STATUSES: tuple[Status, ...] = get_args(Status)
# Only these outcomes measure the method: a scored case counts in the success denominator and a
# resume keeps it. Every other status says the set-up, the harness, the infrastructure or the
# user stopped the case before it could be measured; it is listed, never scored, and rerun.
SCORED_STATUSES: frozenset[str] = frozenset({"success", "failure"})
STATUS_MEANINGS: dict[Status, str] = {
    "success": "the environment reported success (scored)",
    "failure": "the episode ended without success, budget exhaustion included (scored)",
    "config_error": "the set-up is broken: model spec, key, endpoint, task or environment data",
    "harness_error": "an exception in PoS's own code; please report it",
    "infra_error": "a backend or model server failed or ran out of time; retried, not scored",
    "interrupted": "stopped by the user (Ctrl-C)",
    "error": "written by PoS before results version 2; not scored, rerun by --resume",
}


# Code points that UTF-8 cannot encode: lone surrogates (an observation decoded with
# `surrogateescape`, a `\\ud800` escape in JSON): a Python string may hold them, no file can.
_UNENCODABLE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> tuple[str, int]:
    """`text` with every code point UTF-8 cannot encode replaced by U+FFFD, and how many were.

    The one encoding boundary of the run records: every trace line and result goes through it
    (`record_line`), in `pos bench` and in `pos serve` alike, so that a stray surrogate in an
    observation costs one replacement character, never the case or the session's trace."""
    return _UNENCODABLE.subn("\ufffd", text)


def record_line(record: Any, *, indent: int | None = None) -> tuple[str, int]:
    """`record` as JSON text that any UTF-8 file takes (key-like strings masked, non-finite
    floats named, unencodable code points replaced), and how many code points were replaced."""
    return encodable(json.dumps(redact_record(record), indent=indent, ensure_ascii=False))


def is_scored(status: str) -> bool:
    """True when a case with this status is a measurement of its method."""
    return status in SCORED_STATUSES


class TraceWriter:
    """Appends events to `<case_dir>/events.jsonl`, one flushed JSON line each; `listener`, when
    given, sees each event once it is written (`pos run` shows progress from them)."""

    def __init__(self, case_dir: Path, listener: Callable[[Event], None] | None = None) -> None:
        self.case_dir = case_dir
        self.listener = listener
        case_dir.mkdir(parents=True, exist_ok=True)
        self.path = case_dir / "events.jsonl"
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")
        self._started = time.monotonic()
        self.replaced = 0
        """Code points UTF-8 cannot encode, replaced by U+FFFD in the lines written so far."""

    def emit(self, event: Event) -> None:
        """Write one event, stamped with the trace version and its time; never raises on odd
        payload values (they are made JSON-safe)."""
        if self._file is None:
            return
        record = event.model_dump(mode="json")
        record["v"] = TRACE_VERSION
        record["t"] = round(time.monotonic() - self._started, 4)
        line, replaced = record_line(record)
        self.replaced += replaced
        self._file.write(line + "\n")
        self._file.flush()
        if self.listener is not None:
            self.listener(event)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(path: Path, found: TraceLines | None = None) -> Iterator[Event]:
    """Typed events of a trace (a case folder or its events.jsonl), version 1 upgraded.

    A torn last line (a killed writer), an unknown kind or invalid fields skip that line, never
    the trace; pass `found` to learn what was skipped and which versions were seen.
    """
    if path.is_dir():
        path = path / "events.jsonl"
    with path.open(encoding="utf-8") as handle:
        yield from parse_lines(handle, found)


def read_trace(path: Path) -> tuple[list[Event], TraceLines]:
    """Every typed event of a trace, and what reading it skipped."""
    found = TraceLines()
    return list(read_events(path, found)), found


class RoleTokens(BaseModel):
    """Tokens and time one role spent in an episode."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached_prompt_tokens: int = Field(
        default=0, description="Prompt tokens the servers said they served from their cache."
    )
    cache_write_tokens: int = Field(
        default=0, description="Prompt tokens the servers said they wrote to their cache."
    )
    cache_reported_calls: int = Field(default=0, description="Calls whose server sent them.")
    estimated_cached_tokens: int = Field(
        default=0,
        description="The other calls' cached prompt tokens, estimated under a provider rule.",
    )
    estimated_write_tokens: int = 0


class CaseResult(BaseModel):
    """`result.json`: the outcome of one case, written once, atomically, at its end."""

    version: int = Field(default=RESULT_VERSION, description="Schema version of this file.")
    run: str = Field(description="Run name (the folder under runs/).")
    case: str = Field(description="Case id, unique within the run.")
    env: str = Field(description="Environment name, e.g. alfworld-mini.")
    task: str = Field(description="Task id within the environment.")
    category: str | None = Field(default=None, description="Task category for per-category tables.")
    agent: str = Field(description="Method: pos, raw, an ablation, or expert.")
    models: dict[str, str] = Field(default_factory=dict, description="Model spec per role.")
    status: Status = Field(description="Outcome; only success and failure are scored.")
    success: bool = Field(description="The environment reported success.")
    failure_reason: str | None = Field(
        default=None,
        description="Why a scored failure failed when it did not just run out of steps: "
        "`context_overflow` (a prompt did not fit the model's context window).",
    )
    score: float = Field(default=0.0, description="Environment score (0-1 or 0-100 as it reports).")
    steps: int = Field(default=0, description="Environment steps taken.")
    max_steps: int = Field(default=0, description="Step budget.")
    tokens: dict[str, RoleTokens] = Field(default_factory=dict, description="Tokens per role.")
    trapped_steps: int = Field(default=0, description="Steps at which the window was trapped.")
    patterns: dict[str, int] = Field(default_factory=dict, description="Diagnosed pattern counts.")
    recoveries: int = Field(default=0, description="Recovery constraints applied.")
    degraded_steps: int = Field(default=0, description="Steps where a role fell back.")
    context_cuts: int = Field(
        default=0, description="Steps whose prompt left out old history to fit the context window."
    )
    settings: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent ran with: per-role profile, generation tokens and schema "
        "bounds, temperature, context window, global-audit interval, clips.",
    )
    final_belief: dict[str, Any] | None = Field(default=None, description="Belief at the end.")
    error: str | None = Field(default=None, description="What went wrong, when something did.")
    started_at: float = Field(default=0.0, description="Unix time the case started.")
    duration_s: float = Field(default=0.0, description="Wall time of the case.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Benchmark-specific fields.")
    spec: dict[str, Any] = Field(
        default_factory=dict, description="The case as run: every CaseSpec field."
    )
    model_options: dict[str, Any] = Field(
        default_factory=dict, description="Model options that change results (no key)."
    )
    settings_hash: str = Field(
        default="", description="Hash of spec and model_options: the case's identity in its run."
    )
    pos_version: str = Field(default="", description="Version of pos-agent that ran the case.")
    git_commit: str | None = Field(
        default=None, description="Commit of the PoS checkout that ran it (+dirty if modified)."
    )


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to `path` so that readers see either the old file or the whole new one."""
    write_text_atomic(path, record_line(data, indent=2)[0] + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see either the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; record files get the mode `open` gives traces (0644 by default).
        os.fchmod(fd, _new_file_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(encodable(text)[0])
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@lru_cache(maxsize=1)
def _new_file_mode() -> int:
    """0666 minus the process umask: what `open(path, "w")` would create."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_result(case_dir: Path, result: CaseResult) -> Path:
    """Atomically write `result.json` in `case_dir`."""
    path = case_dir / "result.json"
    write_json_atomic(path, result.model_dump(mode="json"))
    return path


def read_result(case_dir: Path) -> CaseResult | None:
    """The case's result, or None when it has none (never finished) or it is unreadable."""
    path = case_dir / "result.json"
    try:
        return CaseResult.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# -- validity of a finished case's records (`pos report` and `--resume` read them the same way) --

_COUNTS = ("steps", "max_steps", "trapped_steps", "recoveries", "degraded_steps", "context_cuts")


def result_problems(result: CaseResult) -> list[str]:
    """What makes a result impossible to have been written by PoS as it stands: an unknown
    version, a negative count, a success flag its status contradicts. Empty when it is sound."""
    problems = []
    if result.version not in KNOWN_RESULT_VERSIONS:
        known = ", ".join(str(v) for v in sorted(KNOWN_RESULT_VERSIONS))
        problems.append(f"unknown result version {result.version} (this PoS reads {known})")
    negative = [f"{name} {getattr(result, name)}" for name in _COUNTS if getattr(result, name) < 0]
    for role, tokens in result.tokens.items():
        fields = tokens.model_dump()
        negative += [f"{role} {k} {v}" for k, v in fields.items() if v < 0]
    if negative:
        problems.append("negative counts: " + ", ".join(negative))
    if not math.isfinite(result.score):
        problems.append(f"score {result.score}")
    if result.success != (result.status == "success"):
        problems.append(f"success {result.success} with status {result.status}")
    return problems


def trace_problems(case_dir: Path) -> list[str]:
    """What is wrong with a finished case's trace: lines that are not JSON records (a torn or
    garbage line anywhere; a finished case's trace was closed before its result was written).
    A case without a trace has none to check."""
    path = case_dir / "events.jsonl"
    bad: list[int] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip() and not _is_record(line):
                    bad.append(number)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"events.jsonl cannot be read ({exc.strerror or exc})"]
    if not bad:
        return []
    shown = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
    return [f"events.jsonl has {len(bad)} line(s) that are not JSON records (line {shown})"]


def record_problems(case_dir: Path, result: CaseResult) -> list[str]:
    """`result_problems` and `trace_problems` of a finished case."""
    return result_problems(result) + trace_problems(case_dir)


def _is_record(line: str) -> bool:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and isinstance(value.get("event"), str)
