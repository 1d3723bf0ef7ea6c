"""One overflow policy for every method (issues 22.3 and 23.1): a prompt that does not fit the
model's window ends the case as a scored failure with reason `context_overflow` — never a
config_error that leaves the denominator, never rerun by --resume — and the report counts it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from extras import needs_alfworld
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.report.load import load_runs
from pos_agent.bench.report.stats import aggregate
from pos_agent.bench.report.tables import build_tables
from pos_agent.bench.run_folder import RunPlan
from pos_agent.bench.runner import pending
from pos_agent.llm import Completion, Message, ModelFailure, ModelOptions, ScriptedModel
from pos_agent.trace import SCORED_STATUSES, read_result

pytestmark = needs_alfworld  # every case here plays alfworld-mini

HISTORY_METHODS = ("raw", "acon", "pace", "hiagent", "lh_harness", "pos")


class OverflowingModel:
    """Answers like the scripted model until its `fits`-th call, then every prompt is too long
    for its window (as a server's context_length_exceeded or llama.cpp's too-long prompt)."""

    def __init__(self, fits: int) -> None:
        self.inner = ScriptedModel()
        self.spec = self.inner.spec
        self.fits = fits
        self.calls = 0

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.calls += 1
        if self.calls > self.fits:
            raise ModelFailure(
                "context_overflow",
                "HTTP 400: This model's maximum context length is 8192 tokens (context_length_exceeded)",
                model=self.spec,
            )
        return self.inner.complete(messages, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def spec_for(agent: str) -> CaseSpec:
    return CaseSpec(
        env="alfworld-mini", task="heat-mug", agent=agent, model="scripted", max_steps=8
    )


@pytest.mark.parametrize("agent", HISTORY_METHODS)
def test_an_overflow_is_a_scored_failure_for_every_method(tmp_path: Path, agent: str) -> None:
    model = OverflowingModel(fits=3)
    spec = spec_for(agent)
    result = run_case(spec, tmp_path / spec.folder, run_name="r", load=lambda _s, _r: model)
    assert model.calls > 3, "the overflow was reached"
    assert result.status == "failure", f"{agent}: {result.status} {result.error}"
    assert result.status in SCORED_STATUSES and not result.success
    assert result.failure_reason == "context_overflow"
    assert "--context-window" in (result.error or "")
    written = read_result(tmp_path / spec.folder)
    assert written is not None and written.failure_reason == "context_overflow"


def test_resume_keeps_an_overflow_and_the_report_counts_it(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    specs = [spec_for("raw"), spec_for("pos")]
    for spec in specs:
        fits = 2 if spec.agent == "raw" else 10_000
        model = OverflowingModel(fits=fits)

        def load(_spec: str, _role: str, model: OverflowingModel = model) -> Any:
            return model

        run_case(spec, run_dir / spec.folder, run_name="r", load=load)
    plan = RunPlan.of(specs, ModelOptions())
    todo, kept = pending(specs, run_dir, plan, resume=True)
    assert not todo, "a scored overflow is never rerun"
    assert {r.agent: r.failure_reason for r in kept}["raw"] == "context_overflow"
    data = aggregate(load_runs([run_dir]).cases)
    assert data.method("raw").overflows == 1 and data.method("pos").overflows == 0
    assert data.method("raw").success.n == 1, "the overflow stays in the denominator"
    outcomes = next(t for t in build_tables(data) if t.name == "outcomes")
    column = outcomes.columns.index("context overflow")
    by_method = {row[0]: row[column] for row in outcomes.rows}
    assert by_method == {"raw": 1, "pos": 0}


def test_the_history_is_never_cut_unless_asked(tmp_path: Path) -> None:
    spec = CaseSpec(env="alfworld-mini", task="heat-mug", agent="raw", model="local", max_steps=1)
    result = run_case(spec, tmp_path / "c", run_name="r", load=lambda _s, _r: ScriptedModel())
    assert result.settings["context_window"] is None, "used to be the local model's n_ctx"
