"""ALFWorld in its own TextWorld PDDL engine: the alfworld-mini suite, and the official-data
loader exercised on a fake data folder built from the mini files (same format)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from extras import needs_alfworld
from pos_agent.agents.expert import run_expert
from pos_agent.envs import EnvError, InfrastructureError, list_tasks, make_env
from pos_agent.envs.alfworld import (
    OFFICIAL_DATA_FOLDER,
    TASK_CATEGORIES,
    AlfWorldEnvironment,
    build_game_data,
    mini_data_dir,
)

MINI_TASKS = [spec.task_id for spec in list_tasks("alfworld-mini")]


def _task_types() -> Counter[str]:
    return Counter(
        json.loads((mini_data_dir() / task / "traj_data.json").read_text())["task_type"]
        for task in MINI_TASKS
    )


def test_mini_suite_has_two_tasks_of_every_alfworld_type() -> None:
    assert len(MINI_TASKS) >= 12
    counts = _task_types()
    assert set(counts) == set(TASK_CATEGORIES)
    assert min(counts.values()) >= 2
    assert "heat-mug" in MINI_TASKS
    categories = Counter(spec.category for spec in list_tasks("alfworld-mini"))
    assert set(categories) == {"Place", "Transform", "Inspect"}


def test_mini_tasks_are_shipped_in_alfworld_layout() -> None:
    for task in MINI_TASKS:
        folder = mini_data_dir() / task
        problem = (folder / "initial_state.pddl").read_text()
        assert "(:domain alfred)" in problem
        traj = json.loads((folder / "traj_data.json").read_text())
        assert traj["pddl_params"]["object_target"]
        assert traj["task_desc"]


@needs_alfworld
@pytest.mark.parametrize("task", MINI_TASKS)
def test_alfworld_planner_expert_solves_every_mini_task(task: str) -> None:
    with make_env("alfworld-mini", task) as env:
        outcome = run_expert(env)
        assert outcome.success, outcome
        assert outcome.score == 1.0
        # Hand-authored scenes are small: a plan this long would mean a broken problem file.
        assert 3 <= outcome.steps <= 15
        assert env.goal.startswith("Your task is to: ")


@needs_alfworld
def test_heat_mug_is_the_papers_figure_1_case() -> None:
    with make_env("alfworld-mini", "heat-mug") as env:
        first = env.reset()
    assert env.goal == "Your task is to: heat some mug and put it in cabinet."
    assert first.text.startswith("You are in the middle of a room.")
    assert "Welcome to TextWorld" not in first.text
    assert first.admissible_actions is not None
    assert "go to microwave 1" in first.admissible_actions
    assert first.info["task_category"] == "Transform"
    assert first.info["task_type"] == "pick_heat_then_place_in_recep"
    assert first.info["expert_action"] in first.admissible_actions


@needs_alfworld
def test_invalid_action_is_an_error_observation_that_costs_budget() -> None:
    with make_env("alfworld-mini", "put-keychain") as env:
        first = env.reset()
        observation = env.step("dance with the keychain")
        assert observation.info["invalid_action"] is True
        assert observation.text.startswith("Nothing happens.")
        assert "dance with the keychain" in observation.info["error"]
        assert observation.info["steps_used"] == 1
        assert observation.admissible_actions == first.admissible_actions
        # Case and spacing do not make an admissible command invalid.
        moved = env.step("  GO TO   drawer 2 ")
        assert moved.info["invalid_action"] is False
        assert "drawer 2" in moved.text


@needs_alfworld
def test_exhausting_the_budget_fails_the_episode() -> None:
    with make_env("alfworld-mini", "two-pillows", max_steps=3) as env:
        env.reset()
        env.step("look")
        env.step("not an action")
        last = env.step("inventory")
        assert last.done and not last.success
        assert last.info["budget_exhausted"] is True
        with pytest.raises(EnvError):
            env.step("look")
        # A new episode gets a fresh budget.
        assert env.reset().info["steps_used"] == 0


@needs_alfworld
def test_engine_crash_is_an_infrastructure_error_and_the_engine_is_rebuilt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with make_env("alfworld-mini", "examine-book") as env:
        assert isinstance(env, AlfWorldEnvironment)
        env.reset()
        backend = env._backend

        def broken_step(command: str) -> None:
            raise RuntimeError("planner exploded")

        monkeypatch.setattr(backend, "step", broken_step)
        with pytest.raises(InfrastructureError, match="planner exploded"):
            env.step("go to bed 1")
        assert env._backend is not backend
        assert run_expert(env).success


def test_mini_suite_has_only_a_test_split() -> None:
    with pytest.raises(EnvError, match="single split"):
        list_tasks("alfworld-mini", split="train")


@needs_alfworld
def test_unknown_mini_task_lists_the_known_ones() -> None:
    with pytest.raises(EnvError, match="heat-mug"):
        make_env("alfworld-mini", "heat-the-fridge")


@needs_alfworld
def test_missing_official_data_names_alfworld_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    with pytest.raises(EnvError, match="alfworld-download") as listing:
        list_tasks("alfworld")
    assert str(tmp_path) in str(listing.value)
    assert "alfworld-mini" in str(listing.value)
    with pytest.raises(EnvError, match="alfworld-download"):
        make_env("alfworld", "0", split="valid_seen")
    # An empty split folder (e.g. an interrupted download) is missing data too.
    (tmp_path / OFFICIAL_DATA_FOLDER / "valid_unseen").mkdir(parents=True)
    with pytest.raises(EnvError, match="alfworld-download"):
        list_tasks("alfworld", split="valid_unseen")


def _fake_trial(split_dir: Path, task_folder: str, source: str, *, solvable: bool) -> Path:
    """A trial folder as `alfworld-download` leaves it, built from a mini task."""
    trial = split_dir / task_folder / "trial_T20190000_000000_000000"
    trial.mkdir(parents=True)
    mini = mini_data_dir() / source
    (trial / "traj_data.json").write_text((mini / "traj_data.json").read_text())
    (trial / "initial_state.pddl").write_text((mini / "initial_state.pddl").read_text())
    game = build_game_data(mini)
    game["solvable"] = solvable
    (trial / "game.tw-pddl").write_text(json.dumps(game))
    return trial


@needs_alfworld
def test_official_loader_reads_alfworld_data_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    split_dir = tmp_path / OFFICIAL_DATA_FOLDER / "valid_unseen"
    heat = "pick_heat_then_place_in_recep-Mug-None-Cabinet-10"
    _fake_trial(split_dir, heat, "heat-mug", solvable=True)
    _fake_trial(
        split_dir, "look_at_obj_in_light-Book-None-DeskLamp-301", "examine-book", solvable=True
    )
    # Skipped exactly as ALFWorld's AlfredTWEnv skips them.
    _fake_trial(
        split_dir,
        "pick_cool_then_place_in_recep-Apple-None-CounterTop-1",
        "cool-apple",
        solvable=False,
    )
    _fake_trial(
        split_dir, "pick_and_place_with_movable_recep-Pen-Mug-Desk-1", "put-keychain", solvable=True
    )
    (split_dir / "pick_two_obj_and_place-CD-None-Shelf-1" / "trial_x").mkdir(parents=True)

    specs = list_tasks("alfworld")
    assert [spec.split for spec in specs] == ["valid_unseen", "valid_unseen"]
    assert {spec.category for spec in specs} == {"Transform", "Inspect"}
    heat_spec = next(spec for spec in specs if spec.task_id.startswith(heat))

    with make_env("alfworld", heat_spec.task_id) as by_id:
        assert by_id.name == "alfworld"
        outcome = run_expert(by_id)
        assert outcome.success
        assert by_id.goal == "Your task is to: heat some mug and put it in cabinet."
    # The task folder alone, or an index into the split, find the same game.
    with make_env("alfworld", heat) as by_folder:
        assert by_folder.task_id == heat_spec.task_id
    with make_env("alfworld", str(specs.index(heat_spec))) as by_index:
        assert by_index.task_id == heat_spec.task_id
    with pytest.raises(EnvError, match="index"):
        make_env("alfworld", "no-such-task")


def test_alfworld_split_names_are_checked() -> None:
    with pytest.raises(EnvError, match="valid_unseen"):
        list_tasks("alfworld", split="test")
