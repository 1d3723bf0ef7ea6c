"""ScienceWorld through its Java simulator: expert gold path, invalid and ambiguous actions,
budget, variations per split, crash recovery and JVM shutdown.

JVM start-up is slow, so one environment is shared by the tests that only reset it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from pos_agent.agents.expert import run_expert
from pos_agent.envs import EnvError, InfrastructureError, list_tasks, make_env
from pos_agent.envs.scienceworld import ScienceWorldEnvironment, resolve_task

pytestmark = pytest.mark.slow

# A short task (gold path of 16 actions in its first test variation), where focusing on a
# non-living thing fails the task.
TASK = "find-living-thing"


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def env() -> Iterator[ScienceWorldEnvironment]:
    environment = make_env("scienceworld", TASK, max_steps=40)
    assert isinstance(environment, ScienceWorldEnvironment)
    yield environment
    environment.close()


def test_gold_path_expert_reaches_success(env: ScienceWorldEnvironment) -> None:
    outcome = run_expert(env)
    assert outcome.success, outcome
    assert outcome.score == 100.0
    assert list(outcome.actions) == env.gold_path[: outcome.steps]


def test_first_observation_carries_goal_valid_actions_and_expert(
    env: ScienceWorldEnvironment,
) -> None:
    first = env.reset()
    assert env.goal.startswith("Your task is to find a(n) living thing.")
    assert first.text.startswith(env.goal)
    assert first.admissible_actions and "look around" in first.admissible_actions
    assert first.info["expert_action"] == env.gold_path[0]
    assert first.info["max_score"] == 100.0
    assert first.info["task_category"] == "Classification"
    assert first.info["variation"] == env.variation


def test_unparseable_action_is_invalid_and_costs_budget(env: ScienceWorldEnvironment) -> None:
    env.reset()
    observation = env.step("xyzzy the thermometer")
    assert observation.info["invalid_action"] is True
    assert "No known action matches" in observation.text
    assert observation.info["steps_used"] == 1
    assert not observation.done
    assert env.step("reset task").info["invalid_action"] is True


def test_ambiguous_action_takes_the_first_reading_and_leaves_the_gold_path(
    env: ScienceWorldEnvironment,
) -> None:
    env.reset()
    env.step("open door to hallway")
    env.step("go to hallway")
    observation = env.step("open door")  # the hallway has several doors
    assert observation.info["invalid_action"] is False
    assert "ambiguous" in observation.text
    assert "Ambiguous request" not in observation.text
    # The agent left the gold path, so the expert no longer knows the way.
    assert observation.info["expert_on_gold_path"] is False
    assert observation.info["expert_action"] is None


def test_a_failed_task_ends_the_episode_with_score_zero(env: ScienceWorldEnvironment) -> None:
    env.reset()
    observation = env.step("focus on air")
    assert observation.done and not observation.success
    assert observation.score == 0.0
    assert observation.info["raw_score"] == -100.0
    assert "budget_exhausted" not in observation.info


def test_budget_exhaustion_is_a_failure(env: ScienceWorldEnvironment) -> None:
    budget = env.max_steps
    env.max_steps = 2
    try:
        env.reset()
        env.step("look around")
        last = env.step("look around")
    finally:
        env.max_steps = budget
    assert last.done and not last.success
    assert last.info["budget_exhausted"] is True


def test_seed_selects_a_variation_of_the_requested_split() -> None:
    with pytest.raises(EnvError, match=r"not in the test split.*21-29"):
        make_env("scienceworld", "boil", split="test", seed=0)
    with pytest.raises(EnvError, match="Unknown ScienceWorld split"):
        make_env("scienceworld", "boil", split="valid")


def test_task_names_ids_and_listing() -> None:
    assert resolve_task("1-1") == "boil"
    assert resolve_task("boil") == "boil"
    with pytest.raises(EnvError, match="Known tasks"):
        resolve_task("bake-a-cake")
    specs = list_tasks("scienceworld")
    assert len(specs) == 30
    assert {spec.split for spec in specs} == {"test"}
    assert {spec.split for spec in list_tasks("scienceworld", "dev")} == {"dev"}


def test_dead_jvm_is_restarted_and_reported_as_infrastructure_error() -> None:
    with make_env("scienceworld", TASK, max_steps=30) as env:
        assert isinstance(env, ScienceWorldEnvironment)
        env.reset()
        old_pid = env.backend_pid
        assert old_pid is not None
        os.kill(old_pid, signal.SIGKILL)
        with pytest.raises(InfrastructureError, match="restarted"):
            env.step("look around")
        assert env.backend_pid not in (None, old_pid)
        assert run_expert(env).success


def test_close_stops_the_jvm() -> None:
    env = make_env("scienceworld", TASK)
    assert isinstance(env, ScienceWorldEnvironment)
    pid = env.backend_pid
    assert pid is not None and _process_exists(pid)
    env.close()
    env.close()
    assert not _process_exists(pid)
    assert env.backend_pid is None
