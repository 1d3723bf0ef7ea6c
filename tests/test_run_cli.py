"""`pos run` as a newcomer meets it: what it prints while it plays, the cores it gives the
embedded model, the set-up it refuses before writing anything, and help that fits a terminal."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

# Importing the command modules registers their commands.
import pos_agent.cli.bench
import pos_agent.cli.envs
import pos_agent.cli.run
from agent_fixtures import Script
from pos_agent.bench import case as case_module
from pos_agent.bench.executors import local as local_executor
from pos_agent.bench.executors.local import threads_each
from pos_agent.cli.app import app
from pos_agent.llm import ModelOptions


def pos(*args: str, width: int = 200, **env: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(width), **env})


def scripted_loader(seen: list[ModelOptions]) -> Any:
    """A `default_loader` stand-in: notes the options, plays the toy's scripted PoS model."""

    def loader(options: ModelOptions) -> Any:
        seen.append(options)
        return lambda _spec, _role: Script().model()

    return loader


# -- 1. what it prints while it plays --------------------------------------------------------------


def test_run_prints_its_start_each_step_and_the_view_command(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    done = pos(
        "run", "toy", "heat-mug", "--agent", "raw", "--model", "scripted", "--max-steps", "3",
        "--out", str(out), "--run", "r",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    case_dir = out / "r" / "raw__toy__heat-mug"
    assert lines[0].startswith("pos run toy heat-mug") and "3 steps" in lines[0]
    assert f"run folder: {case_dir}" in done.output
    assert "setting up the environment" in done.output
    assert "ready; the episode starts" in done.output
    for step in (1, 2, 3):
        assert re.search(rf"step +{step} started", done.output), done.output
        assert re.search(rf"step +{step}  \S.*\(\d+\.\ds\)", done.output), done.output
    assert not re.search(r"step +4 started", done.output), "no start line past the budget"
    starts = [i for i, line in enumerate(lines) if re.search(r"step +2 started", line)]
    ends = [i for i, line in enumerate(lines) if re.search(r"step +1  \S", line)]
    assert ends and starts and ends[0] < starts[0], "step 1 ends before step 2 starts"
    assert lines[-1] == f"See it step by step: pos view {case_dir}"


def test_slow_model_calls_get_a_line_of_their_own() -> None:
    from pos_agent.cli.common import console
    from pos_agent.cli.run_progress import RunProgress
    from pos_agent.events import ModelCallEvent

    progress = RunProgress(console, budget=2)
    with console.capture() as captured:
        progress.on_event(ModelCallEvent(step=1, role="belief", purpose="init", latency_s=41.2))
        progress.on_event(ModelCallEvent(step=1, role="policy", purpose="act", latency_s=0.4))
    text = captured.get()
    assert "belief call (init) took 41s" in text
    assert "policy" not in text, "a fast call adds no line"


# -- 2. the embedded model's threads ---------------------------------------------------------------


def test_threads_are_the_cores_other_work_leaves_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_executor, "available_cores", lambda: 2)
    assert threads_each(1) == 2
    assert threads_each(1, busy=0.3) == 2, "a nearly idle machine keeps every core"
    assert threads_each(1, busy=1.0) == 1
    assert threads_each(1, busy=11.5) == 1, "never fewer than one"
    assert threads_each(2) == 1, "pos bench's split between workers"
    monkeypatch.setattr(local_executor, "available_cores", lambda: 8)
    assert threads_each(1, busy=2.4) == 6
    assert threads_each(2, busy=2.4) == 3


def test_run_gives_the_embedded_model_the_free_cores_or_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[ModelOptions] = []
    monkeypatch.setattr(case_module, "default_loader", scripted_loader(seen))
    monkeypatch.setattr(local_executor, "available_cores", lambda: 2)
    monkeypatch.setattr(pos_agent.cli.run, "busy_cores", lambda: 9.0)
    args = ["run", "toy", "heat-mug", "--model", "local", "--max-steps", "1"]
    loaded = pos(*args, "--out", str(tmp_path), "--run", "a")
    assert loaded.exit_code == 0, loaded.output
    assert seen[-1].n_threads == 1, "a busy machine: one thread, not every core"
    assert "embedded model: 1 llama.cpp thread(s) of 2 core(s), load 9.0" in loaded.output
    chosen = pos(*args, "--threads", "2", "--out", str(tmp_path), "--run", "b")
    assert chosen.exit_code == 0, chosen.output
    assert seen[-1].n_threads == 2
    served = pos(
        "run", "toy", "heat-mug", "--agent", "raw", "--model", "scripted", "--max-steps", "1",
        "--threads", "2", "--out", str(tmp_path), "--run", "c",
    )  # fmt: skip
    assert served.exit_code == 0 and "llama.cpp" not in served.output, "no embedded model"


# -- 3. set-up checked before anything is written --------------------------------------------------


def test_an_unknown_environment_is_blamed_on_the_environment(tmp_path: Path) -> None:
    done = pos("run", "alfwrld-mini", "heat-mug", "--out", str(tmp_path / "runs"))
    assert done.exit_code == 2, done.output
    assert "did you mean alfworld-mini" in done.output and "ENV" in done.output
    assert "--env-model" not in done.output
    assert not (tmp_path / "runs").exists()


def test_a_task_typo_or_missing_key_exits_2_before_the_environment_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real_make_env = case_module.make_env

    def make_env(*args: Any, **kwargs: Any) -> Any:
        made.append(args[0])
        return real_make_env(*args, **kwargs)

    monkeypatch.setattr(case_module, "make_env", make_env)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "runs"
    typo = pos("run", "toy", "heat-mugg", "--model", "scripted", "--out", str(out), "--run", "t")
    assert typo.exit_code == 2, typo.output
    assert "toy has no task(s) heat-mugg" in typo.output and "pos envs toy" in typo.output
    no_key = pos(
        "run", "toy", "heat-mug", "--model", "openai:gpt-4o-mini", "--out", str(out), "--run", "k"
    )
    assert no_key.exit_code == 2, no_key.output
    assert "OPENAI_API_KEY" in no_key.output and "nothing was run" in no_key.output
    assert made == [], "refused before any environment set-up"
    assert not (out / "t").exists() and not (out / "k").exists(), "no run folder"


# -- 5. help and listings that fit 80 columns ------------------------------------------------------


@pytest.mark.parametrize(("command", "most"), [("run", 110), ("bench", 130)])
def test_help_fits_and_groups_its_options(command: str, most: int) -> None:
    done = pos(command, "--help", width=80)
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert len(lines) <= most, f"{len(lines)} lines at 80 columns"
    for panel in ("Model", "Budget", "Output", "Advanced"):
        assert re.search(rf"╭─ {panel}\b", done.output), panel
    assert max(len(line) for line in lines) <= 80


def test_envs_keeps_every_column_readable_at_80_columns() -> None:
    done = pos("envs", "toy", width=80)
    assert done.exit_code == 0, done.output
    assert max(len(line) for line in done.output.splitlines()) <= 80
    text = " ".join(done.output.split())
    for cell in ("toy", "heat-mug", "Description"):
        assert cell in text
    # The description column has room for words, not a letter per line.
    description_cells = [
        line.split("│")[-2].strip() for line in done.output.splitlines() if line.count("│") >= 4
    ]
    assert max(len(cell) for cell in description_cells) >= 20, done.output
