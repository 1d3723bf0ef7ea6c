"""One run folder, one experiment (issue 23, items 2, 4, 6 and 13): the server a run calls is
part of its identity wherever it was chosen, `pos report` never pools a result made with other
settings, every model a case may call is pre-flighted, and a resume by other code is said and
recorded."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pos_agent.bench.case
import pos_agent.cli.bench
import pos_agent.cli.report
from fake_openai import Behaviour, fake_openai
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.identity import git_commit, result_options
from pos_agent.bench.preflight import SetupError, check_models
from pos_agent.bench.run_folder import RESUMES_NAME, RunFolderError, RunPlan
from pos_agent.bench.runner import BenchConfig, case_dir, run_bench
from pos_agent.cli.app import app
from pos_agent.envs import InfrastructureError
from pos_agent.llm import ModelOptions, ScriptedModel
from pos_agent.llm.backend import OPENAI_DEFAULT_BASE_URL, BackendError

REPO = Path(__file__).resolve().parents[1]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def case(task: str = "heat-mug", **fields: Any) -> CaseSpec:
    settings: dict[str, Any] = {"agent": "raw", "model": "scripted", "max_steps": 2, **fields}
    return CaseSpec(env="alfworld-mini", task=task, **settings)


# -- 23.2: the effective server is part of a run's identity ----------------------------------------


def test_a_server_chosen_by_openai_base_url_is_recorded_and_another_one_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    specs = [case(model="openai:m"), case(agent="expert")]
    with fake_openai() as (first, _), fake_openai() as (second, _):
        monkeypatch.setenv("OPENAI_BASE_URL", first)
        results = run_bench(specs, BenchConfig(run_dir=run_dir))
        raw = next(r for r in results if r.agent == "raw")
        assert raw.model_options["base_url"] == first, "the result says which server answered"
        config = json.loads((run_dir / "config.json").read_text())
        assert config["model_options"]["base_url"] == first, "never null when one is in effect"
        kept = run_bench(specs, BenchConfig(run_dir=run_dir, resume=True))
        assert [r.started_at for r in kept] == [r.started_at for r in results], "same: kept"
        monkeypatch.setenv("OPENAI_BASE_URL", second)
        with pytest.raises(RunFolderError, match=re.escape(f'base_url: "{first}" -> "{second}"')):
            run_bench(specs, BenchConfig(run_dir=run_dir, resume=True))


def test_dashscope_and_mixed_servers_are_recorded_and_local_runs_keep_their_identity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("DASHSCOPE_BASE_URL", "http://127.0.0.1:9/compatible-mode/v1")
    options = ModelOptions()
    dashscope = result_options(options, ["dashscope:qwen-plus"])
    assert dashscope["base_url"] == "http://127.0.0.1:9/compatible-mode/v1"
    mixed = result_options(options, ["dashscope:qwen-plus", "openai:gpt-4o", "local"])
    assert mixed["base_url"] == [
        "http://127.0.0.1:9/compatible-mode/v1",
        OPENAI_DEFAULT_BASE_URL,
    ]
    assert mixed["servers"] == {
        "dashscope:qwen-plus": "http://127.0.0.1:9/compatible-mode/v1",
        "openai:gpt-4o": OPENAI_DEFAULT_BASE_URL,
    }
    flag = result_options(ModelOptions(base_url="http://127.0.0.1:8/v1"), ["openai:m"])
    assert flag["base_url"] == "http://127.0.0.1:8/v1" and "servers" not in flag
    local = result_options(options, ["local", "scripted"])
    assert local == result_options(options), "a run without a server hashes as before"
    assert local["base_url"] is None


def test_paces_embeddings_server_is_part_of_its_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = case(agent="pace", embed_model="openai:text-embedding-3-small")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:7/v1")
    first = RunPlan.of([spec], ModelOptions())
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    second = RunPlan.of([spec], ModelOptions())
    assert first.model_options["base_url"] == "http://127.0.0.1:7/v1"
    assert first.identity != second.identity, "another embeddings server, another experiment"
    offline = case(agent="pace")
    assert RunPlan.of([offline], ModelOptions()).model_options["base_url"] is None


# -- 23.4: `pos report` never pools a result made with other settings than its run's --------------


def test_report_leaves_out_results_whose_settings_are_not_their_runs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    specs = [case("heat-mug"), case("cool-apple")]
    run_bench(specs, BenchConfig(run_dir=run_dir))
    # `pos run --run NAME` writing over a bench case with other settings, as the probe did.
    run_case(case("heat-mug", max_steps=3), case_dir(run_dir, specs[0]), run_name="run")
    done = invoke("report", str(run_dir), "--no-plots", "--out", str(tmp_path / "report"))
    assert done.exit_code == 0, done.output
    assert "Cases read: 1" in done.output, "the foreign result is not pooled"
    assert "Left out, settings not their run's" in done.output and specs[0].folder in done.output

    run_case(case("cool-apple", max_steps=3), case_dir(run_dir, specs[1]), run_name="run")
    refused = invoke("report", str(run_dir), "--no-plots", "--out", str(tmp_path / "report"))
    assert refused.exit_code == 1
    assert "settings hash" in refused.output and "--resume" in refused.output


# -- 23.6: every model a case may call is pre-flighted, the environment's included ------------------


def test_check_models_preflights_the_environment_models_too() -> None:
    spec = CaseSpec(
        env="clindiag", task="x", agent="pos", model="scripted", env_models={"judge": "openai:j"}
    )
    asked: list[str] = []

    def check(model: str, _options: ModelOptions) -> str | None:
        asked.append(model)
        return "HTTP 401: rejected the API key" if model == "openai:j" else None

    with pytest.raises(SetupError) as refused:
        check_models([spec], ModelOptions(), check)
    assert sorted(asked) == ["openai:j", "scripted"], "policy, belief, Sentinel and the judge"
    assert "model openai:j (judge): HTTP 401" in str(refused.value)


@pytest.mark.skipif(
    not (REPO.parent / "shared" / "data" / "clindiag").is_dir(), reason="ClinDiag data missing"
)
def test_bench_refuses_a_broken_judge_before_any_case(tmp_path: Path) -> None:
    behaviour = Behaviour(status=401, message="bad key")
    with fake_openai(behaviour) as (url, _):
        done = invoke(
            "bench", "clindiag-common", "--agents", "raw", "--model", "scripted", "--limit", "1",
            "--env-model", "judge=openai:j", "--base-url", url, "--max-retries", "0",
            "--out", str(tmp_path / "runs"), "--run", "r",
        )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert "openai:j (judge)" in done.output and "wants an API key" in done.output
    assert not (tmp_path / "runs" / "r" / "config.json").exists(), "no case started"
    assert len(behaviour.request_times) == 1, "one pre-flight call, then nothing"


# -- 23.13: a model server's failure is not called the environment's; resumes by other code -------


def test_an_unreachable_model_is_not_called_an_environment_backend_failure(tmp_path: Path) -> None:
    down = BackendError("transport", "cannot reach http://127.0.0.1:1/v1", retryable=False)
    result = run_case(
        case(), tmp_path / "c", run_name="r", load=lambda _s, _r: ScriptedModel([down] * 9)
    )
    assert result.status == "infra_error"
    assert "model is unavailable" in (result.error or "")
    assert "environment backend failed" not in (result.error or "")


def test_an_environment_backend_failure_keeps_its_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_make_env = pos_agent.bench.case.make_env

    def make_env(*args: Any, **kwargs: Any) -> Any:
        env = real_make_env(*args, **kwargs)

        def step(_action: str) -> Any:
            raise InfrastructureError("the Java process died")

        env.step = step  # type: ignore[method-assign,assignment]
        return env

    monkeypatch.setattr(pos_agent.bench.case, "make_env", make_env)
    result = run_case(case(), tmp_path / "c", run_name="r")
    assert result.status == "infra_error"
    assert result.error == "environment backend failed: the Java process died"


def test_a_resume_by_other_code_warns_and_records_both_commits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = tmp_path / "run"
    specs = [case("heat-mug"), case("cool-apple")]
    run_bench(specs, BenchConfig(run_dir=run_dir))
    config_path = run_dir / "config.json"
    config = json.loads(config_path.read_text())
    config["git_commit"] = "0" * 40  # the run was started by an older commit
    config_path.write_text(json.dumps(config))
    with caplog.at_level(logging.WARNING):
        run_bench(specs, BenchConfig(run_dir=run_dir, resume=True))
    warned = [r.getMessage() for r in caplog.records if "started by other code" in r.getMessage()]
    assert warned and "0" * 40 in warned[0]
    lines = (run_dir / RESUMES_NAME).read_text().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["started_with"]["git_commit"] == "0" * 40
    assert entry["git_commit"] == git_commit()
