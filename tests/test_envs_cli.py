"""`pos envs` and `pos play` through the real Typer app."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import pos_agent.cli.envs  # noqa: F401  (registers the commands on the app)
from extras import needs_scienceworld, needs_twx
from pos_agent.cli.app import app
from pos_agent.cli.envs import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_SETUP_ERROR, EXIT_SUCCESS

runner = CliRunner()

# The toy heat-mug task's shortest plan (the expert's), from the first observation on.
HEAT_MUG_PLAN = [
    "go to countertop 1",
    "take mug 1 from countertop 1",
    "go to microwave 1",
    "open microwave 1",
    "heat mug 1 with microwave 1",
    "go to cabinet 1",
    "open cabinet 1",
    "put mug 1 in/on cabinet 1",
]


def test_play_expert_exits_zero_on_success() -> None:
    result = runner.invoke(app, ["play", "toy", "heat-mug", "--expert"])
    assert result.exit_code == EXIT_SUCCESS, result.output
    assert "heat mug 1 with microwave 1" in result.output
    assert "SUCCESS after 8 steps" in result.output


def test_play_expert_exits_nonzero_when_the_budget_runs_out() -> None:
    result = runner.invoke(app, ["play", "toy", "heat-mug", "--expert", "--max-steps", "3"])
    assert result.exit_code == EXIT_FAILURE, result.output
    assert "FAILURE after 3 steps" in result.output
    assert "budget of 3" in result.output


def test_play_reports_setup_errors_without_a_traceback() -> None:
    result = runner.invoke(app, ["play", "no-such-env", "x", "--expert"])
    assert result.exit_code == EXIT_SETUP_ERROR
    assert "Unknown environment" in result.output
    bad_option = runner.invoke(app, ["play", "alfworld-mini", "heat-mug", "-o", "colour"])
    assert bad_option.exit_code == EXIT_SETUP_ERROR
    assert "KEY=VALUE" in bad_option.output


def test_a_person_can_win_with_typed_actions() -> None:
    # A number picks from the shown list, text is sent as is, mistakes cost a step.
    lines = ["2", "take the mug please", *HEAT_MUG_PLAN[1:]]
    result = runner.invoke(app, ["play", "toy", "heat-mug"], input="\n".join(lines) + "\n")
    assert result.exit_code == EXIT_SUCCESS, result.output
    assert "2. go to countertop 1" in result.output
    assert "Invalid action 'take the mug please'" in result.output
    assert "SUCCESS after 9 steps" in result.output


def test_quit_and_end_of_input_stop_cleanly() -> None:
    quit_result = runner.invoke(app, ["play", "toy", "two-cds"], input="99\nactions\nquit\n")
    assert quit_result.exit_code == EXIT_FAILURE, quit_result.output
    assert "No action numbered 99" in quit_result.output
    assert "Stopped." in quit_result.output
    eof_result = runner.invoke(app, ["play", "toy", "two-cds"], input="")
    assert eof_result.exit_code == EXIT_INTERRUPTED
    assert "Traceback" not in eof_result.output


@needs_scienceworld
@needs_twx
def test_envs_lists_tasks_and_explains_missing_alfworld_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    result = runner.invoke(app, ["envs"])
    assert result.exit_code == 0, result.output
    for expected in ("heat-mug", "boil", "cookingworld", "twc", "coin", "alfworld-download"):
        assert expected in result.output
    only_mini = runner.invoke(app, ["envs", "alfworld-mini"])
    assert "two-pillows" in only_mini.output
    assert "boil" not in only_mini.output


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env", "task"), [("scienceworld", "boil"), ("textworld-express", "cookingworld")]
)
def test_play_expert_on_the_java_environments(env: str, task: str) -> None:
    result = runner.invoke(app, ["play", env, task, "--expert"])
    assert result.exit_code == EXIT_SUCCESS, result.output[-2000:]
    assert "SUCCESS" in result.output
