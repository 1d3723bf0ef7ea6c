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
    return [CaseSpec(env="alfworld-mini", task=t, agent="expert") for t in tasks]


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
    assert events[0]["event"] == "episode_start" and events[-1]["event"] == "episode_end", (
        "rerun whole"
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["methods"]["expert"]["success"] == 3


def test_one_failing_case_never_stops_the_others(tmp_path: Path) -> None:
    specs = [
        *expert_specs(["heat-mug"]),
        CaseSpec(env="alfworld-mini", task="two-cds", agent="expert", max_steps=0),
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


def test_suite_method_settings_reach_the_case() -> None:
    cases = load_suite("rca-nezha").cases(["pos", "raw"], "local", limit=1)
    settings = {c.agent: c.global_audit_every for c in cases}
    assert settings == {"pos": 32, "raw": None}


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
