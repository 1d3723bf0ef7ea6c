"""TextWorldExpress through its Java simulator: cookingworld, twc and coin with their
documented parameters, seeds per split, gold-path expert, invalid actions, budget, crashes."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from pos_agent.agents.expert import run_expert
from pos_agent.envs import EnvError, InfrastructureError, list_tasks, make_env
from pos_agent.envs.textworld_express import (
    DEFAULT_GAME_PARAMS,
    TextWorldExpressEnvironment,
    parse_game_params,
)

pytestmark = pytest.mark.slow


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def coin() -> Iterator[TextWorldExpressEnvironment]:
    environment = make_env("textworld-express", "coin", max_steps=60)
    assert isinstance(environment, TextWorldExpressEnvironment)
    yield environment
    environment.close()


@pytest.mark.parametrize("game", ["cookingworld", "twc", "coin"])
def test_gold_path_expert_wins_each_game(game: str) -> None:
    with make_env("textworld-express", game) as env:
        assert isinstance(env, TextWorldExpressEnvironment)
        outcome = run_expert(env)
        assert outcome.success, outcome
        assert outcome.score == 1.0
        assert env.seed == 20000  # the test split's first seed
        assert env.game_params == DEFAULT_GAME_PARAMS[game]
        assert list(outcome.actions) == env.gold_path[: outcome.steps]


def test_first_observation_carries_goal_actions_and_expert(
    coin: TextWorldExpressEnvironment,
) -> None:
    first = coin.reset()
    assert "find the coin" in coin.goal
    assert first.text.startswith(coin.goal)
    assert first.admissible_actions and "look around" in first.admissible_actions
    assert first.info["expert_action"] == coin.gold_path[0]
    assert first.info["seed"] == coin.seed


def test_invalid_action_is_an_error_observation_that_costs_budget(
    coin: TextWorldExpressEnvironment,
) -> None:
    first = coin.reset()
    observation = coin.step("fly to the moon")
    assert observation.info["invalid_action"] is True
    assert "not sure what you mean" in observation.text
    assert observation.info["steps_used"] == 1
    assert observation.admissible_actions == first.admissible_actions


def test_budget_exhaustion_is_a_failure(coin: TextWorldExpressEnvironment) -> None:
    budget = coin.max_steps
    coin.max_steps = 2
    try:
        coin.reset()
        coin.step("look around")
        last = coin.step("inventory")
    finally:
        coin.max_steps = budget
    assert last.done and not last.success
    assert last.info["budget_exhausted"] is True


def test_seeds_belong_to_their_split() -> None:
    with pytest.raises(EnvError, match=r"not in the TextWorldExpress dev split.*10000-10999"):
        make_env("textworld-express", "twc", split="dev", seed=5)
    with make_env("textworld-express", "twc", split="train", seed=7) as env:
        assert env.reset().info["seed"] == 7


def test_game_params_override_the_defaults_and_are_validated() -> None:
    assert parse_game_params("numLocations=3, includeDoors=0") == {
        "numLocations": 3,
        "includeDoors": 0,
    }
    with pytest.raises(EnvError, match="key=value"):
        parse_game_params("numLocations")
    with make_env(
        "twx", "cookingworld", game_params={"numLocations": 1, "numDistractorItems": 0}
    ) as env:
        first = env.reset()
        assert first.info["game_params"]["numLocations"] == 1
        assert first.info["game_params"]["numIngredients"] == 3
        assert run_expert(env).success
    with pytest.raises(EnvError, match="rejected the parameters"):
        make_env("textworld-express", "coin", game_params="numLocations=99")
    with pytest.raises(EnvError, match="Unknown option"):
        make_env("textworld-express", "coin", gameParams="numLocations=2")


def test_listing_and_unknown_games() -> None:
    specs = list_tasks("textworld-express", split="train")
    assert [spec.task_id for spec in specs] == ["cookingworld", "twc", "coin"]
    assert {spec.split for spec in specs} == {"train"}
    with pytest.raises(EnvError, match="cookingworld"):
        make_env("textworld-express", "zork")


def test_dead_jvm_is_restarted_and_reported_as_infrastructure_error() -> None:
    with make_env("textworld-express", "coin") as env:
        assert isinstance(env, TextWorldExpressEnvironment)
        env.reset()
        old_pid = env.backend_pid
        assert old_pid is not None
        os.kill(old_pid, signal.SIGKILL)
        with pytest.raises(InfrastructureError, match="restarted"):
            env.step(env.gold_path[0])
        assert env.backend_pid not in (None, old_pid)
        assert run_expert(env).success


def test_close_stops_the_jvm() -> None:
    env = make_env("textworld-express", "twc")
    assert isinstance(env, TextWorldExpressEnvironment)
    pid = env.backend_pid
    assert pid is not None and _process_exists(pid)
    with env:
        pass
    env.close()
    assert not _process_exists(pid)
