"""Studies (`bench/study`, `pos paper`): the paper's defaults, tags and order, the estimate and
its calibration on Table 2, and `--max-cost` before and during a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pos_agent.bench.identity import spec_settings
from pos_agent.bench.paper import PAPER_EMBED_MODEL, PAPER_ENV_MODEL, PAPER_METHODS, published
from pos_agent.bench.spec import CaseSpec
from pos_agent.bench.study import (
    Backbone,
    Study,
    estimate_cells,
    load_study,
    paper_study,
    study_cases,
)
from pos_agent.bench.study.estimate import CellEstimate, CellKey, Usage, calibrated
from pos_agent.bench.study.spend import SpendGuard, SpendLimitReached
from pos_agent.cli.app import app
from pos_agent.cost import load_prices
from pos_agent.trace import CaseResult, RoleTokens, read_result

TOY_SUITE = "name: toy-study\nenv: toy\ntasks: [heat-mug, cool-apple, clean-cloth]\nmax_steps: 4\n"


def placeholders(study: Study) -> list[CaseSpec]:
    """The study's cases with every suite's data treated as missing (no data needed)."""
    from pos_agent.bench.suite import Suite

    real = Suite.task_ids

    def unlisted(self: Suite) -> list[str]:
        if self.tasks == "all":
            raise FileNotFoundError("not fetched")
        return real(self)

    Suite.task_ids = unlisted  # type: ignore[method-assign]
    try:
        return study_cases(study, missing=lambda suite, exc: None)
    finally:
        Suite.task_ids = real  # type: ignore[method-assign]


def test_the_paper_study_defaults_to_every_paper_setting() -> None:
    study = paper_study(["dashscope:qwen3.7-plus"])
    specs = placeholders(study)
    assert study.methods == list(PAPER_METHODS)
    by_env: dict[str, list[CaseSpec]] = {}
    for spec in specs:
        by_env.setdefault(spec.env, []).append(spec)
    assert sorted(by_env) == ["alfworld", "clindiag", "loca", "rca-nezha"]
    assert len(by_env["alfworld"]) == 134 * 8 and len(by_env["loca"]) == 525 * 8
    assert len(by_env["rca-nezha"]) == 101 * 8 and len(by_env["clindiag"]) == 604 * 8
    alf, rca, loca = by_env["alfworld"][0], by_env["rca-nezha"][0], by_env["loca"][0]
    assert (alf.generation_tokens, alf.max_steps) == (512, 50)
    assert (rca.generation_tokens, rca.max_steps) == (4096, 50)
    assert loca.max_steps == 100 and {s.seed for s in by_env["loca"]} == {42, 123, 456, 789, 2024}
    pos_loca = next(s for s in by_env["loca"] if s.agent == "pos")
    assert pos_loca.global_audit_every == 32, "paper Table 8: 32 on LOCA-Bench"
    clin = by_env["clindiag"][0]
    assert clin.env_models == {"provider": PAPER_ENV_MODEL, "judge": PAPER_ENV_MODEL}
    assert {s.embed_model for s in specs if s.agent == "pace"} == {PAPER_EMBED_MODEL}
    assert {s.embed_model for s in specs if s.agent != "pace"} == {"tfidf"}


def test_the_paper_study_runs_clindiags_common_and_rare_halves() -> None:
    """ClinDiag's suite in the paper's grid is the `paper` split: on the reference data (passed
    by conftest), the Common 302 and the Rare 302, interleaved per backbone."""
    study = paper_study(["scripted"], env_model="offline", embed_model="tfidf")
    (clindiag,) = [s.suite for s in study.suite_list() if s.suite.startswith("clindiag")]
    assert clindiag == "clindiag-paper"
    try:
        specs = study_cases(study.model_copy(update={"suites": [clindiag], "methods": ["raw"]}))
    except Exception as exc:  # the reference data is not beside the repository
        pytest.skip(f"no ClinDiag data here: {exc}")
    tasks = [s.task for s in specs]
    assert len(tasks) == len(set(tasks)) == 604
    assert sum(t.startswith("rare") for t in tasks) == 302
    assert tasks[1] == "rare0" and not tasks[0].startswith("rare")
    assert {s.split for s in specs} == {"paper"}


def test_the_offline_stand_ins_are_an_explicit_choice() -> None:
    study = paper_study(["scripted"], env_model="offline", embed_model="tfidf")
    clin = next(s for s in placeholders(study) if s.env == "clindiag")
    assert clin.env_models == {"provider": "retrieval", "judge": "matcher"}
    backbone = paper_study(["openai:x"], env_model="backbone")
    clin = next(s for s in placeholders(backbone) if s.env == "clindiag")
    assert clin.env_models == {"provider": "openai:x", "judge": "openai:x"}


def test_backbones_tag_their_cases_and_the_order_is_balanced(tmp_path: Path) -> None:
    suite = tmp_path / "toy.yaml"
    suite.write_text(TOY_SUITE)
    study = Study(
        suites=[str(suite)],
        methods=["raw", "pos"],
        backbones=["openai:m", "dashscope:m", Backbone(model="scripted", label="mine")],
    )
    specs = study_cases(study)
    assert [b.label for b in study.backbone_list()] == ["m", "m-2", "mine"]
    assert len({s.folder for s in specs}) == len(specs) == 3 * 3 * 2
    assert specs[0].folder == "raw__toy__heat-mug__m"
    # The first task of every backbone, then the second: a stopped run holds a balanced part.
    assert [s.task for s in specs[:6]] == ["heat-mug"] * 6
    assert {s.tag for s in specs[:6]} == {"m", "m-2", "mine"}


def test_an_untagged_case_keeps_its_settings_hash() -> None:
    spec = CaseSpec(env="toy", task="heat-mug")
    assert "tag" not in spec_settings(spec)
    assert spec_settings(spec.model_copy(update={"tag": "x"}))["tag"] == "x"
    with pytest.raises(ValueError, match="tag"):
        CaseSpec(env="toy", task="heat-mug", tag="a/b")


def test_a_study_file_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        "name: mine\nsuites: [rca-nezha, {suite: alfworld-mini, limit: 2}]\n"
        "methods: [raw, pos]\nbackbones: [{model: openai:gpt-4o-mini, paper: kimi-k3}]\n"
    )
    study = load_study(path)
    assert study.backbone_list()[0].compared_with == "Kimi-K3"
    assert study.suite_list()[1].limit == 2
    path.write_text("backbones: [x]\nmethods: [raw, nope]\n")
    with pytest.raises(ValueError, match="nope"):
        load_study(path)


def test_the_backbone_option_names_the_papers_backbone() -> None:
    from pos_agent.cli.paper import parse_backbone

    assert parse_backbone("openai:gpt-4o-mini=Qwen3.7-Plus").compared_with == "Qwen3.7-Plus"
    assert parse_backbone("gguf:/m/a=b.gguf").model == "gguf:/m/a=b.gguf"
    assert parse_backbone("dashscope:glm-5.3").compared_with == "GLM-5.3"


def test_the_estimate_is_calibrated_to_table_2_on_rca() -> None:
    for method, row in published().table2["Qwen3.7-Plus"].items():
        episode = calibrated("rca", method, None)
        assert episode is not None
        for column, component in (("task_agent", "policy"), ("belief", "belief")):
            ours = episode[component].tokens / 1000 if component in episode else 0.0
            assert ours == pytest.approx(row[column], rel=1e-6), (method, column)
    cells = estimate_cells(
        [CaseSpec(env="rca-nezha", task=f"t{i}", agent="pos", tag="b") for i in range(3)],
        {},
    )
    assert len(cells) == 1 and cells[0].cases == 3
    assert cells[0].tokens == pytest.approx(3 * 1000 * 1800.13, rel=1e-3)


def test_the_spend_guard_stops_once_before_the_limit() -> None:
    prices = load_prices()
    guard = SpendGuard(1.0, prices, in_flight=1, per_case=0.3)

    def result(prompt: int) -> CaseResult:
        tokens = {"policy": RoleTokens(calls=1, prompt_tokens=prompt)}
        return CaseResult(
            run="r", case="c", env="toy", task="t", agent="raw", status="success",
            success=True, models={"policy": "openai:gpt-4.1-mini"}, tokens=tokens,
        )  # fmt: skip

    guard.seen(result(1_000_000), "a")  # 0.40 spent + 0.3 in flight
    guard.seen(result(1_000_000), "a")  # the same case again: still 0.40
    assert guard.spent == pytest.approx(0.40)
    with pytest.raises(SpendLimitReached):
        guard.seen(result(1_000_000), "b")  # 0.80 + 0.3 > 1.0
    guard.seen(result(1_000_000), "c")  # interrupted ones still count, no second raise
    assert guard.tripped and guard.spent == pytest.approx(1.20)


def _toy_study(tmp_path: Path) -> list[str]:
    suite = tmp_path / "toy.yaml"
    suite.write_text(TOY_SUITE)
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "models:\n  scripted: {input: 1000, output: 1000, cached_input: 1000, cache_write: 1000}\n"
    )
    return [
        "paper", "table1", "--model", "scripted", "--suites", str(suite), "--methods", "raw",
        "--price-table", str(prices), "--out", str(tmp_path), "--run", "capped",
    ]  # fmt: skip


def test_max_cost_refuses_an_estimate_over_it_before_anything_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    estimate = CellEstimate(CellKey("scripted", "toy-study", "raw"), "toy", cases=3)
    estimate.usage["policy"] = Usage(30, 30_000, 3_000)
    estimate.models["policy"] = "scripted"
    monkeypatch.setattr("pos_agent.cli.study_run.estimate_cells", lambda *a: [estimate])
    done = CliRunner().invoke(app, [*_toy_study(tmp_path), "--max-cost", "1"])
    assert done.exit_code == 2, done.output
    assert "passes --max-cost 1.00; nothing was sent" in " ".join(done.output.split())
    assert not (tmp_path / "capped").exists()


def test_max_cost_stops_a_run_in_time_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small estimate, so the run starts; the spend of the first case passes the limit.
    estimate = CellEstimate(CellKey("scripted", "toy-study", "raw"), "toy", cases=3)
    estimate.usage["policy"] = Usage(3, 3, 0)
    estimate.models["policy"] = "scripted"
    monkeypatch.setattr("pos_agent.cli.study_run.estimate_cells", lambda *a: [estimate])
    args = _toy_study(tmp_path)
    stopped = CliRunner().invoke(app, [*args, "--max-cost", "0.5"])
    assert stopped.exit_code == 4, stopped.output
    assert "stopped at --max-cost" in stopped.output
    run = tmp_path / "capped"
    done = [read_result(p.parent) for p in run.glob("*/result.json")]
    assert len(done) == 1 and done[0] is not None and done[0].status in ("success", "failure")
    config = json.loads((run / "config.json").read_text())
    assert config["study"]["methods"] == ["raw"] and len(config["cases"]) == 3
    resumed = CliRunner().invoke(app, [*args, "--max-cost", "1000", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert len(list(run.glob("*/result.json"))) == 3
