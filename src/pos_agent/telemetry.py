"""Optional OpenTelemetry spans for the monitor's verdicts. Off by default.

Turn it on with `POS_OTEL=1` in the environment or `enable()` in code; it then needs the `otel`
extra (`pip install "pos-agent[otel]"`: opentelemetry-api and -sdk). Without the package an
enabled telemetry logs one warning and stays off: it never breaks the agent.

Each verdict is one short span, `pos.verdict`, a child of whatever span is current (so it nests
under a framework's agent or tool span when the framework traces with OpenTelemetry). Its
attributes follow the GenAI semantic conventions where one applies and are `pos.*` otherwise:

| attribute | value |
|---|---|
| `gen_ai.operation.name` | `pos.verdict` (no predefined GenAI operation is a verdict) |
| `gen_ai.agent.name`, `gen_ai.conversation.id` | the agent and the session, when given |
| `gen_ai.tool.name` | the tool(s) the step called, comma-separated, when it called any |
| `pos.step`, `pos.trapped`, `pos.onset`, `pos.released` | the report's fields |
| `pos.pattern`, `pos.blocked`, `pos.trapped_since` | when set |
| `pos.escalation`, `pos.advice`, `pos.reading` | the alarm level, `advice.kind`, the reading |
| `pos.diagnosis`, `pos.belief_source`, `pos.progress_source`, `pos.novel` | as in the report |
| `pos.health.persistence_e`, `.persistence_a`, `.stagnation`, `.recurrence`, `.lag`, `.health` | the window's health (when ready) |
| `pos.forbidden_actions` | while blocking: the refused calls |

`record_verdict(report, ...)` is the one entry point: the adapters' `Guard` calls it, and so can
any other caller that has a `MonitorReport` (or its `to_dict()`), e.g. the `pos serve` proxy.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ENV_FLAG",
    "SPAN_NAME",
    "configure",
    "disable",
    "enable",
    "enabled",
    "record_verdict",
    "verdict_attributes",
]

log = logging.getLogger(__name__)

ENV_FLAG = "POS_OTEL"
"""Set to 1 / true / yes / on to enable the spans without code."""
SPAN_NAME = "pos.verdict"
HEALTH_FIELDS = ("persistence_e", "persistence_a", "stagnation", "recurrence", "lag", "health")


class _State:
    enabled: bool | None = None  # None: not decided yet (read ENV_FLAG on first use)
    tracer: Any = None
    provider: Any = None
    warned = False


_state = _State()


def enable(tracer_provider: Any = None) -> bool:
    """Emit a span per verdict, through `tracer_provider` (default: the global one). Returns
    whether spans will be emitted (False when opentelemetry is not installed)."""
    configure(tracer_provider)
    _state.enabled = True
    return _tracer() is not None


def configure(tracer_provider: Any = None) -> None:
    """Use `tracer_provider` (None: the global one) for the spans, without turning them on (a
    `Guard(telemetry=True)` emits through it while telemetry is off for everyone else)."""
    _state.provider = tracer_provider
    _state.tracer = None


def disable() -> None:
    """Stop emitting spans (and forget the tracer provider)."""
    _state.enabled = False
    _state.tracer = None
    _state.provider = None


def enabled() -> bool:
    """Whether verdicts are emitted: `enable()` was called, or `POS_OTEL` is set."""
    if _state.enabled is None:
        _state.enabled = os.environ.get(ENV_FLAG, "").strip().lower() in ("1", "true", "yes", "on")
    return _state.enabled


def record_verdict(
    report: Any,
    *,
    agent_name: str | None = None,
    session: str | None = None,
    action: object = None,
    tools: tuple[str, ...] | list[str] | None = None,
    force: bool = False,
) -> None:
    """Emit one `pos.verdict` span for `report` (a `MonitorReport` or its `to_dict()`), when
    telemetry is enabled (or `force`). `action` (the step's action) or `tools` name the tools
    called. A no-op, cheap, when telemetry is off."""
    if not (force or enabled()):
        return
    tracer = _tracer()
    if tracer is None:
        return
    attributes = verdict_attributes(
        report, agent_name=agent_name, session=session, action=action, tools=tools
    )
    with tracer.start_as_current_span(SPAN_NAME, attributes=attributes):
        pass


def verdict_attributes(
    report: Any,
    *,
    agent_name: str | None = None,
    session: str | None = None,
    action: object = None,
    tools: tuple[str, ...] | list[str] | None = None,
) -> dict[str, Any]:
    """The span attributes of one verdict (see the module doc); None values are left out, as
    OpenTelemetry attributes cannot be None."""
    data: Mapping[str, Any] = report if isinstance(report, Mapping) else report.to_dict()
    advice = data.get("advice")
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": SPAN_NAME,
        "gen_ai.agent.name": agent_name,
        "gen_ai.conversation.id": session,
        "pos.step": data.get("step"),
        "pos.trapped": bool(data.get("trapped")),
        "pos.onset": bool(data.get("onset")),
        "pos.released": bool(data.get("released")),
        "pos.pattern": data.get("pattern"),
        "pos.blocked": data.get("blocked"),
        "pos.trapped_since": data.get("trapped_since"),
        "pos.escalation": data.get("escalation"),
        "pos.advice": advice.get("kind") if isinstance(advice, Mapping) else None,
        "pos.reading": data.get("reading"),
        "pos.diagnosis": data.get("diagnosis"),
        "pos.belief_source": data.get("belief_source"),
        "pos.progress_source": data.get("progress_source"),
        "pos.novel": data.get("novel"),
    }
    for name in HEALTH_FIELDS:
        value = data.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[f"pos.health.{name}"] = float(value)
    if isinstance(advice, Mapping) and advice.get("kind") in ("block", "stop"):
        forbidden = [str(a) for a in advice.get("forbidden_actions") or ()]
        if forbidden:
            attributes["pos.forbidden_actions"] = forbidden
    names = list(tools) if tools is not None else _tool_names(action)
    if names:
        attributes["gen_ai.tool.name"] = ",".join(names)
    return {k: v for k, v in attributes.items() if v is not None}


def _tool_names(action: object) -> list[str]:
    if action is None:
        return []
    from pos_agent.monitor.actions import tool_name

    actions = action if isinstance(action, list | tuple) else [action]
    return [n for n in (tool_name(a) for a in actions) if n]


def _tracer() -> Any:
    if _state.tracer is not None:
        return _state.tracer
    try:
        from opentelemetry import trace
    except ImportError:
        if not _state.warned:
            _state.warned = True
            log.warning(
                "PoS telemetry is enabled but opentelemetry is not installed: "
                'pip install "pos-agent[otel]"; no spans are emitted'
            )
        return None
    from pos_agent import __version__

    _state.tracer = trace.get_tracer("pos_agent", __version__, tracer_provider=_state.provider)
    return _state.tracer
