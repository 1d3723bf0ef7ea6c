"""Run integrity, second pass (issue 23), in process: a short outage does not spend every
retry at once, full disks on summary.json or config.json give the clean message, the lock is
checked before any model call, a dead worker costs its own case only, and `pos run` never
overwrites a finished case of a bench run."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fake_openai import Behaviour, fake_openai
from pos_agent.bench import runner, workers
from pos_agent.bench.case import CaseSpec
from pos_agent.bench.executors.local import death, outcome
from pos_agent.bench.locks import FileLock
from pos_agent.bench.run_folder import RunFolder
from pos_agent.bench.runner import BenchConfig, run_bench
from pos_agent.cli.app import app
from pos_agent.llm.backend import forget_breakers
from pos_agent.trace import SCORED_STATUSES, read_result

TASKS = ["heat-mug", "cool-apple", "clean-cloth", "examine-book", "two-cds", "put-keychain"]


def invoke(*args: str) -> Any:
    from pos_agent.cli import bench as _bench  # noqa: F401
    from pos_agent.cli import run as _run  # noqa: F401

    return CliRunner().invoke(app, list(args))


def suite_file(tmp_path: Path, tasks: list[str], max_steps: int = 2) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(
        f"name: rel\nenv: alfworld-mini\ntasks: [{', '.join(tasks)}]\nmax_steps: {max_steps}\n"
    )
    return str(path)


def server_specs(tasks: list[str]) -> list[CaseSpec]:
    return [
        CaseSpec(env="alfworld-mini", task=t, agent="raw", model="openai:m", max_steps=2)
        for t in tasks
    ]


# -- 23.7 infra retries wait out an open circuit breaker ------------------------------------------


def test_a_short_outage_does_not_turn_the_cases_into_infra_errors(tmp_path: Path) -> None:
    forget_breakers()
    with fake_openai(Behaviour(fail_first=1)) as (url, behaviour):
        config = BenchConfig(
            run_dir=tmp_path / "r",
            preflight=False,
            infra_retries=2,
            model_options={
                "base_url": url,
                "max_retries": 0,
                "breaker_failures": 1,  # the one failed request opens the breaker ...
                "breaker_cooldown_s": 20.0,  # ... for longer than every attempt takes to start
            },
        )
        results = run_bench(server_specs(TASKS[:2]), config)
    forget_breakers()
    statuses = [r.status for r in results]
    assert all(s in SCORED_STATUSES for s in statuses), statuses  # used to be all infra_error
    failed_at = behaviour.request_times[0]
    assert behaviour.request_times[1] - failed_at >= 20.0, "the retries waited out the breaker"


def test_a_run_with_cases_unscored_by_infra_exits_3(tmp_path: Path) -> None:
    with fake_openai(Behaviour(fail_first=1)) as (url, _):  # the first case's call fails
        done = invoke(
            "bench", suite_file(tmp_path, TASKS[:3]), "--agents", "raw", "--model", "openai:m",
            "--base-url", url, "--out", str(tmp_path / "runs"), "--run", "r",
            "--max-retries", "0", "--infra-retries", "0", "--no-preflight",
        )  # fmt: skip
    assert done.exit_code == 3, done.output  # used to be 0, as if the run were complete
    assert "1 infra_error" in done.output and "--resume" in done.output


# -- 23.9 a full disk while writing summary.json or config.json -----------------------------------


def _no_space(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_on_summary_json_gives_the_clean_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_write_summary", _no_space)
    done = invoke(
        "bench", suite_file(tmp_path, TASKS[:1]), "--agents", "raw", "--model", "scripted",
        "--out", str(tmp_path / "runs"), "--run", "r",
    )  # fmt: skip
    assert done.exit_code == 1, done.output
    assert "No space left on device" in done.output and "summary.json" in done.output
    assert "Traceback" not in done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert read_result(tmp_path / "runs" / "r" / "raw__alfworld-mini__heat-mug") is not None


def test_a_full_disk_on_config_json_gives_the_clean_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RunFolder, "_write_config", _no_space)
    done = invoke(
        "bench", suite_file(tmp_path, TASKS[:1]), "--agents", "raw", "--model", "scripted",
        "--out", str(tmp_path / "runs"), "--run", "r",
    )  # fmt: skip
    assert done.exit_code == 1, done.output
    assert "No space left on device" in done.output and "config.json" in done.output
    assert "--resume" not in done.output, "there is no run to continue"
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception


# -- 23.13 the lock is checked before the pre-flight's model call ---------------------------------


def test_a_run_in_use_is_refused_before_any_model_call(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    with FileLock(run_dir / ".lock"), fake_openai() as (url, behaviour):
        done = invoke(
            "bench", suite_file(tmp_path, TASKS[:1]), "--agents", "raw", "--model", "openai:m",
            "--base-url", url, "--out", str(tmp_path / "runs"), "--run", "r",
        )  # fmt: skip
    assert done.exit_code == 2 and "in use" in done.output, done.output
    assert behaviour.request_times == [], "the pre-flight used to call the model first"


# -- 23.3 a dead worker costs its own case, and never writes into a folder never made -------------


def test_a_dead_workers_case_is_an_infra_error_without_a_folder_made(tmp_path: Path) -> None:
    spec = server_specs(["heat-mug"])[0]
    died = workers.Reply("died", message=death(-9))
    result = outcome(died, spec, tmp_path)
    assert result is not None and result.status == "infra_error"
    assert "killed by SIGKILL" in (result.error or "") and "out-of-memory" in (result.error or "")
    assert not (tmp_path / spec.folder).exists(), "no stand-in in a folder that was never made"
    (tmp_path / spec.folder).mkdir()  # a case that had started: its record says what happened
    outcome(died, spec, tmp_path)
    written = read_result(tmp_path / spec.folder)
    assert written is not None and written.status == "infra_error"


# -- 23.4 `pos run --run NAME` inside a bench run -----------------------------------------------


def test_pos_run_never_overwrites_a_finished_case_of_a_bench_run(tmp_path: Path) -> None:
    out = str(tmp_path / "runs")
    made = invoke(
        "bench", suite_file(tmp_path, TASKS[:1]), "--agents", "raw", "--model", "scripted",
        "--out", out, "--run", "r",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    case = tmp_path / "runs" / "r" / "raw__alfworld-mini__heat-mug"
    before = (case / "result.json").read_text()
    args = ["run", "alfworld-mini", "heat-mug", "--agent", "raw", "--model", "scripted",
            "--out", out, "--run", "r"]  # fmt: skip
    same = invoke(*args, "--max-steps", "2")
    assert same.exit_code == 2 and "finished case" in same.output, same.output
    other = invoke(*args, "--max-steps", "5")
    assert other.exit_code == 2 and "max_steps: 2 -> 5" in other.output, other.output
    with FileLock(tmp_path / "runs" / "r" / ".lock"):
        busy = invoke(*args, "--max-steps", "2")
    assert busy.exit_code == 2 and "in use" in busy.output, busy.output
    assert (case / "result.json").read_text() == before, "the finished result is untouched"
    assert json.loads(before)["status"] in SCORED_STATUSES
