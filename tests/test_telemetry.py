"""OpenTelemetry spans for the monitor's verdicts, read back with the real SDK's in-memory
exporter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from extras import skip_module_without

skip_module_without("opentelemetry.sdk", "otel")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from pos_agent import telemetry  # noqa: E402
from pos_agent.adapters import Guard  # noqa: E402
from pos_agent.monitor import AlarmPolicy, ToolCall, TrapMonitor  # noqa: E402

PROVIDER = TracerProvider()
SPANS = InMemorySpanExporter()
PROVIDER.add_span_processor(SimpleSpanProcessor(SPANS))


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.delenv(telemetry.ENV_FLAG, raising=False)
    monkeypatch.setattr(telemetry, "_state", telemetry._State())  # undecided, as at start-up
    SPANS.clear()
    telemetry.configure(PROVIDER)
    yield SPANS
    telemetry.disable()


def _loop(guard: Guard, steps: int) -> None:
    for _ in range(steps):
        guard.observe(ToolCall("read_file", {"path": "a.py"}), "error: a.py not found")


def _attributes(spans: InMemorySpanExporter) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in spans.get_finished_spans()]


def test_off_by_default(exporter: InMemorySpanExporter) -> None:
    assert not telemetry.enabled()
    _loop(Guard(goal="read a.py"), 6)
    assert exporter.get_finished_spans() == ()


def test_one_span_per_verdict_with_genai_and_pos_attributes(
    exporter: InMemorySpanExporter,
) -> None:
    assert telemetry.enable(PROVIDER)
    guard = Guard(
        goal="read a.py",
        agent_name="fixer",
        session="s-1",
        policy=AlarmPolicy(block_after=3, stop_after=None),
    )
    _loop(guard, 9)
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [telemetry.SPAN_NAME] * 9
    attributes = _attributes(exporter)
    first, onset = attributes[0], attributes[[r.onset for r in guard.reports].index(True)]
    assert first["gen_ai.operation.name"] == "pos.verdict"
    assert first["gen_ai.agent.name"] == "fixer"
    assert first["gen_ai.conversation.id"] == "s-1"
    assert first["gen_ai.tool.name"] == "read_file"
    assert first["pos.step"] == 1 and first["pos.trapped"] is False
    assert "pos.pattern" not in first  # OpenTelemetry has no None: unset fields are left out
    assert onset["pos.trapped"] is True and onset["pos.onset"] is True
    assert onset["pos.pattern"] == "static" and onset["pos.advice"] == "inject"
    assert (
        onset["pos.health.persistence_a"]
        == guard.reports[onset["pos.step"] - 1].health.persistence_a
    )
    assert {"pos.health.stagnation", "pos.health.health", "pos.health.recurrence"} <= set(onset)
    blocking = [a for a in attributes if a.get("pos.advice") == "block"]
    assert blocking and blocking[0]["pos.forbidden_actions"] == ('read_file {"path":"a.py"}',)


def test_the_env_flag_turns_it_on(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(telemetry.ENV_FLAG, "1")
    assert telemetry.enabled()
    _loop(Guard(goal="read a.py"), 3)
    assert len(exporter.get_finished_spans()) == 3


def test_a_guard_can_opt_in_or_out_alone(exporter: InMemorySpanExporter) -> None:
    _loop(Guard(goal="read a.py", telemetry=True), 2)
    assert len(exporter.get_finished_spans()) == 2
    telemetry.enable(PROVIDER)
    _loop(Guard(goal="read a.py", telemetry=False), 2)
    assert len(exporter.get_finished_spans()) == 2


def test_record_verdict_takes_a_report_or_its_dict(exporter: InMemorySpanExporter) -> None:
    # The entry point for callers without a Guard (the `pos serve` proxy).
    telemetry.enable(PROVIDER)
    monitor = TrapMonitor(goal="read a.py")
    report = monitor.observe({"name": "read_file", "arguments": "{}"}, "nothing")
    telemetry.record_verdict(report, session="abc", tools=["read_file"])
    telemetry.record_verdict(report.to_dict(), agent_name="proxy")
    first, second = _attributes(exporter)
    assert first["gen_ai.conversation.id"] == "abc" and first["gen_ai.tool.name"] == "read_file"
    assert second["gen_ai.agent.name"] == "proxy" and second["pos.step"] == 1
    assert {k: v for k, v in first.items() if k.startswith("pos.")} == {
        k: v for k, v in second.items() if k.startswith("pos.")
    }


def test_a_telemetry_failure_never_reaches_the_agent(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    telemetry.enable(PROVIDER)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter down")

    monkeypatch.setattr(telemetry, "record_verdict", broken)
    guard = Guard(goal="read a.py")
    _loop(guard, 3)
    assert len(guard.reports) == 3
