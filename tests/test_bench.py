"""`pos bench`: suites, resume, failure isolation, and a real kill of a real run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from extras import needs_alfworld
from pos_agent.bench.case import CaseSpec
from pos_agent.bench.runner import BenchConfig, case_dir, run_bench
from pos_agent.bench.suite import builtin_suites, load_suite
from pos_agent.trace import read_events, read_result

POS = str(Path(sys.executable).parent / "pos")


def test_builtin_suites_load_and_expand() -> None:
    assert {
        "alfworld",
        "alfworld-mini",
        "scienceworld",
        "textworld-express",
        "rca-nezha",
        "clindiag-common",
    } <= set(builtin_suites())
    mini = load_suite("alfworld-mini")
    cases = mini.cases(["pos", "raw"], "local")
    assert len(cases) == 24 and {c.agent for c in cases} == {"pos", "raw"}
    assert cases[0].task == cases[1].task, "methods interleave per task"
    twx = load_suite("textworld-express").cases(["raw"], "local")
    assert len(twx) == 10 and twx[0].case_id == "textworld-express__cookingworld__s20000"


def test_user_suite_file_and_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\nenv: alfworld-mini\ntasks: [heat-mug, cool-apple]\nmax_steps: 9\nmethods: {pos: {recovery: hard}}\n"
    )
    suite = load_suite(str(path))
    cases = suite.cases(["pos"], "local")
    assert [(c.task, c.max_steps, c.recovery) for c in cases] == [
        ("heat-mug", 9, "hard"),
        ("cool-apple", 9, "hard"),
    ]
    with pytest.raises(ValueError, match="unknown suite"):
        load_suite("no-such-suite")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nenv: alfworld-mini\nmax_step: 3\n")
    with pytest.raises(ValueError, match="not a valid suite"):
        load_suite(str(bad))


def expert_specs(tasks: list[str]) -> list[CaseSpec]:
    return [CaseSpec(env="toy", task=t, agent="expert") for t in tasks]


def test_resume_skips_finished_and_reruns_half_finished(tmp_path: Path) -> None:
    specs = expert_specs(["heat-mug", "cool-apple", "clean-cloth"])
    run_dir = tmp_path / "run"
    first = run_bench(specs, BenchConfig(run_dir=run_dir))
    assert [r.status for r in first] == ["success"] * 3
    started = {r.case: r.started_at for r in first}
    # The third case becomes half-finished: a torn trace and no result.
    half = case_dir(run_dir, specs[2])
    (half / "result.json").unlink()
    (half / "events.jsonl").write_text(
        '{"v": 1, "event": "episode_start", "step": 0}\n{"v": 1, "ev'
    )
    with pytest.raises(ValueError, match="--resume"):
        run_bench(specs, BenchConfig(run_dir=run_dir))
    results = run_bench(specs, BenchConfig(run_dir=run_dir, resume=True))
    assert sorted(r.case for r in results) == sorted(s.case_id for s in specs)
    for spec in specs[:2]:
        kept = read_result(case_dir(run_dir, spec))
        assert kept is not None and kept.started_at == started[spec.case_id], "not rerun"
    events = list(read_events(half))
    assert events[0].event == "episode_start" and events[-1].event == "episode_end", "rerun whole"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["methods"]["expert"]["success"] == 3


def test_one_failing_case_never_stops_the_others(tmp_path: Path) -> None:
    specs = [
        *expert_specs(["heat-mug"]),
        CaseSpec(env="toy", task="two-cds", agent="expert", max_steps=0),
        *expert_specs(["cool-apple"]),
    ]
    results = run_bench(specs, BenchConfig(run_dir=tmp_path / "run"))
    statuses = {r.task: r.status for r in results}
    assert statuses == {"heat-mug": "success", "two-cds": "config_error", "cool-apple": "success"}
    failed = read_result(case_dir(tmp_path / "run", specs[1]))
    assert failed is not None and "max_steps" in (failed.error or "")


def test_workers_run_cases_in_parallel_processes(tmp_path: Path) -> None:
    specs = expert_specs(["heat-mug", "cool-apple", "clean-cloth", "examine-book"])
    results = run_bench(specs, BenchConfig(run_dir=tmp_path / "run", workers=2))
    assert sorted(r.status for r in results) == ["success"] * 4


@needs_alfworld
def test_killing_a_real_run_loses_no_finished_result(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    command = [
        POS,
        "bench",
        "alfworld-mini",
        "--agents",
        "expert",
        "--workers",
        "2",
        "--out",
        str(out),
        "--run",
        "k",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    run_dir = out / "k"
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and len(list(run_dir.glob("*/result.json"))) < 3:
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the runner and its workers, mid-case
        process.wait()
    finished = {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("*/result.json")}
    assert len(finished) >= 3, "the run was killed before it finished three cases"
    assert len(finished) < 12, "the run finished before the kill; nothing was tested"
    assert all(r["status"] == "success" for r in finished.values())
    before = {name: r["started_at"] for name, r in finished.items()}
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("*/result.json")}
    assert len(after) == 12 and all(r["status"] == "success" for r in after.values())
    assert all(after[name]["started_at"] == started for name, started in before.items()), (
        "finished cases rerun"
    )


def test_suite_method_settings_reach_the_case(tmp_path: Path) -> None:
    path = tmp_path / "audit.yaml"
    path.write_text(
        "name: a\nenv: alfworld-mini\ntasks: [heat-mug]\nmethods: {pos: {global_audit_every: 32}}\n"
    )
    cases = load_suite(str(path)).cases(["pos", "raw"], "local")
    assert {c.agent: c.global_audit_every for c in cases} == {"pos": 32, "raw": None}


def test_paper_suites_carry_the_paper_budgets_and_rca_audits_every_8_steps() -> None:
    budgets = {name: load_suite(name).generation_tokens for name in builtin_suites()}
    assert budgets["alfworld"] == budgets["alfworld-mini"] == 512  # paper App. D.1
    assert budgets["rca-nezha"] == budgets["clindiag-common"] == budgets["clindiag-all"] == 4096
    clindiag = [load_suite(n) for n in ("clindiag-common", "clindiag-rare", "clindiag-paper")]
    assert [s.split for s in clindiag] == ["common", "rare", "paper"]
    assert {s.generation_tokens for s in clindiag} == {4096} and {
        s.max_steps for s in clindiag
    } == {30}
    assert all(s.methods == clindiag[0].methods for s in clindiag), "the same baseline settings"
    rca = load_suite("rca-nezha").cases(["pos", "no_consistency"], "local", limit=1)
    assert {c.global_audit_every for c in rca} == {None}, "PoS's 8 (paper Table 8); 32 is LOCA's"
    assert {c.generation_tokens for c in rca} == {4096}


def test_suite_budget_fields_and_their_errors(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(
        "name: b\nenv: alfworld-mini\ntasks: [heat-mug]\ngeneration_tokens: 1024\n"
        "profile: compact\nbounds: {patch_ops: 20, text_chars: null}\ncontext_window: 4096\n"
    )
    (case,) = load_suite(str(path)).cases(["raw"], "openai:gpt-4o-mini")
    assert (case.generation_tokens, case.profile, case.context_window) == (1024, "compact", 4096)
    assert case.bounds == {"patch_ops": 20, "text_chars": None}
    path.write_text("name: b\nenv: alfworld-mini\nbounds: {patch_opz: 3}\n")
    with pytest.raises(ValueError, match="unknown schema bound"):
        load_suite(str(path))


def test_each_result_records_the_budgets_bounds_and_profile_it_ran_with(tmp_path: Path) -> None:
    from agent_fixtures import Script
    from pos_agent.bench.case import run_case

    scripts: dict[str, Script] = {}

    def load(spec: str, role: str) -> object:
        scripts[role] = Script()
        model = scripts[role].model()
        model.spec = spec  # the scripted backend stands in for these specs
        return model

    spec = CaseSpec(
        env="toy",
        task="heat-mug",
        agent="pos",
        model="openai:gpt-4o-mini",
        role_models={"belief": "local"},
        max_steps=1,
        bounds={"patch_ops": 9},
    )
    result = run_case(spec, tmp_path / "pos", run_name="s", load=load)  # type: ignore[arg-type]
    settings = result.settings
    assert settings["generation_tokens"] == 512 and settings["temperature"] == 0.0
    assert settings["policy"]["profile"] == "standard" and settings["policy"]["max_tokens"] == 512
    assert settings["policy"]["bounds"]["thought_chars"] is None
    assert settings["belief"]["profile"] == "compact" and settings["belief"]["max_tokens"] == 768
    assert settings["belief"]["bounds"]["patch_ops"] == 9, "the override on top of the profile"
    assert settings["global_audit_every"] == 8
    assert {c.max_tokens for c in scripts["policy"].calls} == {512}
    start = next(e for e in read_events(tmp_path / "pos") if e.event == "episode_start")
    assert start.settings == settings  # type: ignore[attr-defined]

    raw = CaseSpec(env="toy", task="heat-mug", agent="raw", model="local", max_steps=1)
    result = run_case(raw, tmp_path / "raw", run_name="s", load=load)  # type: ignore[arg-type]
    assert result.settings["policy"]["profile"] == "compact"
    assert result.settings["context_window"] is None, "never cut unless asked (paper policy)"


def test_cli_budget_options_reach_the_case(tmp_path: Path) -> None:
    done = subprocess.run(
        [POS, "run", "toy", "heat-mug", "--agent", "raw", "--model", "scripted",
         "--max-steps", "1", "--out", str(tmp_path), "--run", "cli", "--profile", "compact",
         "--generation-tokens", "1024", "--bound", "thought_chars=30", "--context-window", "4096"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = read_result(tmp_path / "cli" / "raw__toy__heat-mug")
    assert result is not None
    assert result.settings["policy"] == {
        "profile": "compact",
        "max_tokens": 128,
        "bounds": {**result.settings["policy"]["bounds"], "thought_chars": 30},
        "render_entities": 40,
        "clips": {
            "transitions": 4,
            "audit_observation_chars": 400,
            "global_observation_chars": 120,
            "evidence_chars": 600,
        },
        "action_list": 60,
        "patch_note": "Return few ops.",
    }
    assert (
        result.settings["generation_tokens"] == 1024 and result.settings["context_window"] == 4096
    )
    bad = subprocess.run(
        [POS, "run", "toy", "heat-mug", "--bound", "nope=3"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "unknown schema bound" in bad.stdout + bad.stderr


def test_bench_has_a_documented_public_surface() -> None:
    import pos_agent.bench as bench

    assert bench.__doc__ and "run_bench" in bench.__doc__
    missing = [name for name in bench.__all__ if not hasattr(bench, name)]
    assert not missing, missing
    assert {
        "CaseSpec",
        "run_case",
        "run_bench",
        "BenchConfig",
        "load_suite",
        "write_report",
    } <= set(bench.__all__)


def test_a_failure_that_repeats_on_resume_is_reported_not_retried_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pos_agent.bench.executors.local as local
    from pos_agent.bench.run_folder import RunPlan
    from pos_agent.llm import ModelOptions
    from pos_agent.trace import CaseResult, write_result

    calls: list[str] = []

    def failing_case(spec: CaseSpec, folder: Path, **kwargs: object) -> CaseResult:
        calls.append(spec.folder)
        options = kwargs["options"]
        assert isinstance(options, ModelOptions)
        result = CaseResult(
            run=str(kwargs["run_name"]), case=spec.case_id, env=spec.env, task=spec.task,
            agent=spec.agent, status="infra_error", success=False,
            error="the data generator did not produce a complete workspace\ndetails",
            settings_hash=RunPlan.of([spec], options).hashes[spec.folder],
        )  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        write_result(folder, result)
        return result

    monkeypatch.setattr(local, "run_case", failing_case)
    specs = expert_specs(["heat-mug"])
    run_dir = tmp_path / "run"
    config = BenchConfig(run_dir=run_dir, infra_retries=0)
    run_bench(specs, config)
    again = BenchConfig(run_dir=run_dir, infra_retries=0, resume=True)
    (second,) = run_bench(specs, again)
    assert second.extra["repeated_failures"] == 2
    assert (second.error or "").startswith("2 runs ended with the same failure on resume:")
    stored = read_result(case_dir(run_dir, specs[0]))
    assert stored is not None and stored.extra["repeated_failures"] == 2
    (third,) = run_bench(specs, again)
    assert len(calls) == 2, "the third run keeps the repeated failure instead of rerunning it"
    assert third.status == "infra_error" and third.extra["repeated_failures"] == 2
