"""A broken set-up is never a score: statuses, checks before the first case, one experiment per
run folder, text that is never markup, bounded time, and the small things around a run."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pos_agent.cli.bench
import pos_agent.cli.report
import pos_agent.cli.run  # noqa: F401
from fake_openai import Behaviour, fake_openai
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.bench.executors.local import worker_options
from pos_agent.bench.preflight import SetupError, preflight, validate_cases
from pos_agent.bench.run_folder import RunFolder, RunFolderError, RunPlan, check_run_name
from pos_agent.bench.runner import BenchConfig, case_dir, run_bench
from pos_agent.bench.suite import load_suite
from pos_agent.cli.app import app
from pos_agent.llm import ModelOptions, ScriptedModel
from pos_agent.llm.backend import BackendError
from pos_agent.trace import SCORED_STATUSES, STATUSES, CaseResult, read_result, write_result

MARKUP = "[/] rejected [/api/cart] [bold]key[/bold]"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def scripted_specs(tasks: list[str], agent: str = "raw", max_steps: int = 3) -> list[CaseSpec]:
    return [
        CaseSpec(env="toy", task=t, agent=agent, model="scripted", max_steps=max_steps)
        for t in tasks
    ]


def suite_file(tmp_path: Path, tasks: str, **fields: Any) -> str:
    extra = "".join(f"{k}: {json.dumps(v)}\n" for k, v in fields.items())
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: tiny\nenv: toy\ntasks: {tasks}\nmax_steps: 3\n{extra}")
    return str(path)


# -- 1. a broken set-up is never a score ----------------------------------------------------------


def test_a_rejected_key_ends_the_case_unscored_not_as_a_failure(tmp_path: Path) -> None:
    rejected = BackendError("config", "HTTP 401: the key was rejected", retryable=False)
    spec = scripted_specs(["heat-mug"])[0]
    result = run_case(
        spec, tmp_path / "c", run_name="r", load=lambda _s, _r: ScriptedModel([rejected] * 9)
    )
    assert result.status == "config_error", "a rejected key used to become a scored failure"
    assert result.status not in SCORED_STATUSES
    assert "401" in (result.error or "")


def test_bench_refuses_a_server_that_rejects_the_key_before_any_case(tmp_path: Path) -> None:
    behaviour = Behaviour(status=401, message=MARKUP)
    with fake_openai(behaviour) as (url, _):
        done = invoke(
            "bench", suite_file(tmp_path, "[heat-mug, cool-apple]"), "--agents", "raw",
            "--model", "openai:m", "--base-url", url, "--out", str(tmp_path / "runs"),
            "--run", "r", "--max-retries", "0",
        )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert "model openai:m" in done.output and "wants an API key" in done.output
    assert "[/api/cart]" in done.output, "server text is shown as it is, never as markup"
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert not (tmp_path / "runs" / "r" / "config.json").exists(), "nothing started"
    assert len(behaviour.request_times) == 1, "one pre-flight call, then nothing"


def test_without_preflight_config_errors_are_unscored_and_resume_reruns_them(
    tmp_path: Path,
) -> None:
    behaviour = Behaviour(status=401, message="bad key")
    out = str(tmp_path / "runs")
    with fake_openai(behaviour) as (url, _):
        args = ["bench", suite_file(tmp_path, "[heat-mug]"), "--agents", "raw",
                "--model", "openai:m", "--base-url", url, "--out", out, "--run", "r",
                "--max-retries", "0"]  # fmt: skip
        broken = invoke(*args, "--no-preflight")
        assert broken.exit_code == 1, broken.output
        assert "no case produced a scored result" in broken.output
        assert "1 config_error: the set-up is broken" in broken.output
        first = read_result(tmp_path / "runs" / "r" / "raw__toy__heat-mug")
        assert first is not None and first.status == "config_error"
        behaviour.status = 200  # the user fixed the key
        fixed = invoke(*args, "--resume")
    assert fixed.exit_code == 0, fixed.output
    again = read_result(tmp_path / "runs" / "r" / "raw__toy__heat-mug")
    assert again is not None and again.status in ("success", "failure"), "rerun and scored"


def test_preflight_says_what_is_wrong_and_passes_a_working_model() -> None:
    assert preflight("scripted", ModelOptions()) is None
    with fake_openai(Behaviour(status=404, message="no such model")) as (url, _):
        advice = preflight("openai:nope", ModelOptions(base_url=url, max_retries=0))
    assert advice is not None and "not found" in advice and "docs/models.md" in advice


# -- 2. set-up errors are caught before the first case, and never scored ----------------------------


def test_a_typo_in_the_task_list_or_model_spec_is_refused_before_any_case(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match=r"no task.*heat-mugg"):
        validate_cases(scripted_specs(["heat-mug", "heat-mugg"]))
    with pytest.raises(SetupError, match="unknown model spec 'bogus:x'"):
        validate_cases([CaseSpec(env="toy", task="heat-mug", agent="raw", model="bogus:x")])
    with pytest.raises(SetupError, match="more than once"):
        validate_cases(scripted_specs(["heat-mug", "heat-mug"]))
    done = invoke(
        "bench", suite_file(tmp_path, "[heat-mug, heat-mugg]"), "--agents", "raw",
        "--model", "scripted", "--out", str(tmp_path / "runs"), "--run", "r",
    )  # fmt: skip
    assert done.exit_code == 2 and "heat-mugg" in done.output, done.output
    assert not (tmp_path / "runs" / "r").exists()


def test_a_task_listed_twice_in_a_suite_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="more than once: heat-mug"):
        load_suite(suite_file(tmp_path, "[heat-mug, cool-apple, heat-mug]"))


def test_harness_exceptions_are_unscored_and_rerun_by_resume(tmp_path: Path) -> None:
    def broken(_spec: str, _role: str) -> Any:
        raise RuntimeError("a bug in the harness")

    spec = scripted_specs(["heat-mug"])[0]
    result = run_case(spec, tmp_path / "alone", run_name="alone", load=broken)
    assert result.status == "harness_error" and "a bug in the harness" in (result.error or "")
    # In a run, such a result is not kept: a resume plays the case again.
    run_dir = tmp_path / "run"
    first = run_bench([spec], BenchConfig(run_dir=run_dir))[0]
    write_result(case_dir(run_dir, spec), first.model_copy(update={"status": "harness_error"}))
    resumed = run_bench([spec], BenchConfig(run_dir=run_dir, resume=True))[0]
    assert resumed.status in SCORED_STATUSES and resumed.started_at != first.started_at


def test_every_status_is_either_scored_or_listed_and_the_summary_agrees(tmp_path: Path) -> None:
    assert set(SCORED_STATUSES) == {"success", "failure"} and set(SCORED_STATUSES) < set(STATUSES)
    specs = [
        *scripted_specs(["heat-mug"]),
        CaseSpec(env="toy", task="cool-apple", agent="raw", model="scripted", max_steps=0),
    ]
    results = run_bench(specs, BenchConfig(run_dir=tmp_path / "run"))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["methods"]["raw"]["cases"] == 2
    assert summary["methods"]["raw"]["scored"] == 1, "config_error is not scored"
    assert summary["scored"] == sum(r.status in SCORED_STATUSES for r in results) == 1


# -- 4./5. one run at a time, one experiment per run folder ---------------------------------------


def test_a_second_bench_on_a_run_in_progress_is_refused(tmp_path: Path) -> None:
    specs = scripted_specs(["heat-mug"])
    run_dir = tmp_path / "runs" / "r"
    folder = RunFolder(run_dir)
    folder.open(RunPlan.of(specs, ModelOptions()), resume=False)  # a run in progress
    config_before = (run_dir / "config.json").read_bytes()
    try:
        done = invoke(
            "bench", suite_file(tmp_path, "[heat-mug]"), "--agents", "raw", "--model", "scripted",
            "--out", str(tmp_path / "runs"), "--run", "r", "--resume",
        )  # fmt: skip
    finally:
        folder.close()
    assert done.exit_code == 2, done.output
    assert f"in use by process {os.getpid()}" in done.output
    assert (run_dir / "config.json").read_bytes() == config_before
    assert not (run_dir / specs[0].folder).exists(), "no case ran"


def test_resume_with_other_settings_is_refused_and_says_what_differs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    specs = scripted_specs(["heat-mug", "cool-apple"])
    run_bench(specs, BenchConfig(run_dir=run_dir))
    config_before = (run_dir / "config.json").read_bytes()
    longer = scripted_specs(["heat-mug", "cool-apple"], max_steps=5)
    with pytest.raises(RunFolderError, match=r"max_steps: 3 -> 5") as refused:
        run_bench(longer, BenchConfig(run_dir=run_dir, resume=True))
    assert "--run NEW" in str(refused.value)
    with pytest.raises(RunFolderError, match=r"base_url: null -> \"http://127.0.0.1:1/v1\""):
        run_bench(
            specs,
            BenchConfig(
                run_dir=run_dir, resume=True, model_options={"base_url": "http://127.0.0.1:1/v1"}
            ),
            check=lambda _m, _o: None,
        )
    other_method = scripted_specs(["heat-mug", "cool-apple"], agent="pos")
    with pytest.raises(RunFolderError, match="already holds a run"):
        run_bench(other_method, BenchConfig(run_dir=run_dir))
    with pytest.raises(RunFolderError, match=r"2 case\(s\) not in the run: pos__"):
        run_bench(other_method, BenchConfig(run_dir=run_dir, resume=True))
    assert (run_dir / "config.json").read_bytes() == config_before, "refusals never rewrite it"
    same = run_bench(
        specs, BenchConfig(run_dir=run_dir, resume=True, model_options={"timeout_s": 5})
    )
    assert len(same) == 2, "a request deadline does not change the experiment"


def test_each_result_records_its_settings_version_and_commit(tmp_path: Path) -> None:
    spec = scripted_specs(["heat-mug"])[0]
    options = ModelOptions(base_url="http://user:secret@127.0.0.1:9/v1", seed=7)
    result = run_case(spec, tmp_path / "c", run_name="r", options=options)
    assert result.spec["max_steps"] == 3 and result.spec["models"] == {"policy": "scripted"}
    assert result.model_options["seed"] == 7
    assert result.model_options["base_url"] == "http://127.0.0.1:9/v1", "credentials dropped"
    assert "api_key" not in result.model_options and "timeout_s" not in result.model_options
    assert len(result.settings_hash) == 16 and result.pos_version
    assert result.git_commit is not None and len(result.git_commit.split("+")[0]) == 40
    assert "secret" not in (tmp_path / "c" / "result.json").read_text()


def test_resume_reruns_truncated_traces_and_unknown_result_versions(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    specs = scripted_specs(["heat-mug", "cool-apple", "clean-cloth"])
    first = {r.case: r.started_at for r in run_bench(specs, BenchConfig(run_dir=run_dir))}
    truncated, future = case_dir(run_dir, specs[0]), case_dir(run_dir, specs[1])
    lines = (truncated / "events.jsonl").read_text().splitlines()
    (truncated / "events.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    newer = read_result(future)
    assert newer is not None
    write_result(future, newer.model_copy(update={"version": 99}))
    time.sleep(0.01)
    run_bench(specs, BenchConfig(run_dir=run_dir, resume=True))
    after = {s.case_id: read_result(case_dir(run_dir, s)) for s in specs}
    assert after[specs[0].case_id].started_at != first[specs[0].case_id], "truncated: rerun"  # type: ignore[union-attr]
    assert after[specs[1].case_id].version != 99, "unknown version: rerun"  # type: ignore[union-attr]
    assert after[specs[2].case_id].started_at == first[specs[2].case_id], "whole: kept"  # type: ignore[union-attr]


def test_report_lists_cases_the_run_never_recorded(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    specs = scripted_specs(["heat-mug", "cool-apple", "clean-cloth"])
    run_bench(specs, BenchConfig(run_dir=run_dir))
    for name in ("events.jsonl", "result.json", ".lock"):
        (case_dir(run_dir, specs[1]) / name).unlink()
    done = invoke("report", str(run_dir), "--no-plots")
    assert done.exit_code == 0, done.output
    assert "Missing" in done.output and specs[1].folder in done.output
    assert f"| missing | raw | run | {specs[1].folder} |" in done.output


# -- run names and --out ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["..", "../x", "/tmp/abs", "a/b", "."])
def test_run_names_may_not_escape_out(tmp_path: Path, name: str) -> None:
    with pytest.raises(RunFolderError, match="one folder name inside --out"):
        check_run_name(name)
    done = invoke("run", "toy", "heat-mug", "--agent", "expert",
                  "--out", str(tmp_path / "runs"), "--run", name)  # fmt: skip
    assert done.exit_code == 2 and "one folder name" in done.output, done.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "runs").exists()


def test_out_that_is_a_file_or_cannot_be_created_gets_a_clear_message(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [(a_file, "is a file"), (a_file / "runs", "cannot create --out")]
    if Path("/sys/kernel").is_dir():  # sysfs takes no new files, not even from root
        cases.append((Path("/sys"), "cannot write in --out"))
    for out, message in cases:
        done = invoke(
            "bench", suite_file(tmp_path, "[heat-mug]"), "--agents", "expert",
            "--out", str(out), "--run", "r",
        )  # fmt: skip
        assert done.exit_code == 2 and message in done.output, done.output
        assert done.exception is None or isinstance(done.exception, SystemExit)


def test_record_files_are_created_0644_like_traces(tmp_path: Path) -> None:
    run_bench(scripted_specs(["heat-mug"]), BenchConfig(run_dir=tmp_path / "run"))
    umask = os.umask(0)
    os.umask(umask)
    expected = 0o666 & ~umask
    case = case_dir(tmp_path / "run", scripted_specs(["heat-mug"])[0])
    for path in (case / "result.json", case / "events.jsonl", tmp_path / "run" / "summary.json",
                 tmp_path / "run" / "config.json"):  # fmt: skip
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_view_of_a_trace_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    spec = CaseSpec(env="toy", task="heat-mug", agent="expert")
    run_case(spec, tmp_path / "c", run_name="r")
    (tmp_path / "c" / "events.jsonl").write_bytes(b'{"v": 1, "event": "episode_start"}\n\xff\xfe\n')
    done = invoke("view", str(tmp_path / "c"))
    assert done.exit_code == 1
    assert "not UTF-8" in done.output and "Traceback" not in done.output


# -- 6. text from models and servers is data --------------------------------------------------------


def test_server_text_with_markup_neither_crashes_nor_loses_text(tmp_path: Path) -> None:
    with fake_openai(Behaviour(status=401, message=MARKUP)) as (url, _):
        done = invoke(
            "run", "toy", "heat-mug", "--agent", "raw", "--model", "openai:m",
            "--base-url", url, "--max-retries", "0", "--out", str(tmp_path), "--run", "r",
            "--max-steps", "2",
        )  # fmt: skip
    # `pos run` checks the model before it writes anything: a rejected key is a set-up error.
    assert done.exit_code == 2, done.output
    assert isinstance(done.exception, SystemExit), done.exception
    assert "wants an API key" in done.output and not (tmp_path / "r").exists()
    assert "[/api/cart]" in done.output and "[bold]key[/bold]" in done.output


def test_step_lines_show_actions_with_brackets_literally() -> None:
    from pos_agent.agents.base import StepInfo
    from pos_agent.cli.common import console
    from pos_agent.cli.run import show_step

    with console.capture() as captured:
        show_step(
            StepInfo(3, 'call {"pattern": "[/api/cart]"} [/]', False, trapped=True, pattern="[x]")
        )
    text = captured.get()
    assert "[/api/cart]" in text and "[/]" in text and "TRAPPED [x]" in text


# -- 7. time is bounded ----------------------------------------------------------------------------


def test_timeout_and_retries_reach_the_model_from_cli_and_suite(tmp_path: Path) -> None:
    behaviour = Behaviour(latency_s=3.0)
    with fake_openai(behaviour) as (url, _):
        started = time.monotonic()
        done = invoke(
            "bench", suite_file(tmp_path, "[heat-mug]", timeout_s=0.3, max_retries=0),
            "--agents", "raw", "--model", "openai:m", "--base-url", url,
            "--out", str(tmp_path / "runs"), "--run", "r",
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert done.exit_code == 2 and "model openai:m" in done.output, done.output
    assert elapsed < 2.5, "the suite's 0.3 s deadline and 0 retries applied"
    assert len(behaviour.request_times) == 1


def test_a_case_time_limit_ends_it_unscored_and_says_where_the_time_went(tmp_path: Path) -> None:
    # The server holds each request for a minute; the request deadline (30 s) would let it.
    with fake_openai(Behaviour(latency_s=60.0)) as (url, behaviour):
        spec = CaseSpec(env="toy", task="heat-mug", agent="raw", model="openai:m")
        started = time.monotonic()
        result = run_case(
            spec,
            tmp_path / "c",
            run_name="r",
            options=ModelOptions(base_url=url, timeout_s=30),
            time_limit_s=5.0,
        )
        elapsed = time.monotonic() - started
    assert behaviour.request_times, "the case reached its first model call"
    assert elapsed < 15.0
    assert result.status == "infra_error"
    assert "time limit of 5s reached during a model call" in (result.error or "")


def test_workers_split_the_cores_for_the_local_model() -> None:
    from pos_agent.bench.executors.local import available_cores

    cores = available_cores()
    assert worker_options(BenchConfig(run_dir=Path("x"), workers=2))["n_threads"] == max(
        1, cores // 2
    )
    assert "n_threads" not in worker_options(BenchConfig(run_dir=Path("x"), workers=1))
    pinned = BenchConfig(run_dir=Path("x"), workers=2, model_options={"n_threads": 3})
    assert worker_options(pinned)["n_threads"] == 3


def test_interrupted_result_records_the_steps_played(tmp_path: Path) -> None:
    from pos_agent.agents.base import StepInfo
    from pos_agent.bench.case import CaseInterrupted

    def stop_at_step_5(info: StepInfo) -> None:
        if info.step == 5:
            raise KeyboardInterrupt

    spec = scripted_specs(["heat-mug"], max_steps=20)[0]
    with pytest.raises(CaseInterrupted) as interrupted:
        run_case(spec, tmp_path / "c", run_name="r", on_step=stop_at_step_5)
    result: CaseResult = interrupted.value.result
    assert result.status == "interrupted" and result.steps == 5, "used to say 0"
    written = read_result(tmp_path / "c")
    assert written is not None and written.steps == 5


def test_task_descriptions_from_data_files_are_listed_as_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pos_agent.cli.envs as envs_cli
    from pos_agent.envs import TaskSpec

    odd = TaskSpec("toy", "t1", "Pick", "test", "call GET [/api/cart] then [/]")
    monkeypatch.setattr(envs_cli, "list_tasks", lambda _env, _split: [odd])
    done = CliRunner().invoke(app, ["envs", "toy"], terminal_width=200)
    assert done.exit_code == 0, done.output
    assert "[/api/cart] then [/]" in done.output
