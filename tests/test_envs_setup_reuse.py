"""ALFWorld's set-up reused across cases (envs/_pddl_cache.py): the same episodes, less work."""

from __future__ import annotations

from typing import Any

import pytest

from pos_agent.envs import _pddl_cache as pddl_cache
from pos_agent.envs import make_env

pytest.importorskip("fast_downward")

TASKS = ("heat-mug", "cool-apple")


def play(task: str) -> list[Any]:
    """The expert's episode on one alfworld-mini task: what every observation showed."""
    env = make_env("alfworld-mini", task, max_steps=30, split="test", seed=0)
    try:
        observation = env.reset()
        seen: list[Any] = []
        for _ in range(30):
            seen.append(
                (observation.text, observation.admissible_actions, observation.score,
                 observation.done, observation.success)
            )  # fmt: skip
            action = observation.info.get("expert_action")
            if observation.done or not action:
                break
            observation = env.step(action)
        return seen
    finally:
        env.close()


def test_a_reused_translation_plays_the_same_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    import fast_downward
    from fast_downward.interface import pddl2sas as translate

    pddl_cache.clear()
    with_cache = {task: play(task) for task in TASKS}
    again = {task: play(task) for task in TASKS}  # every translation now from the store
    counts = pddl_cache.stats()
    assert counts["misses"] == 2 * len(TASKS), counts  # each game once, with and without optimize
    assert counts["hits"] >= 6 * len(TASKS), counts
    uncached: list[int] = []

    def fresh(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        uncached.append(1)
        return translate(domain, problem, verbose=verbose, optimize=optimize)

    monkeypatch.setattr(fast_downward, "pddl2sas", fresh)
    monkeypatch.setattr(pddl_cache, "install", lambda: True)  # keep the plain translation
    without = {task: play(task) for task in TASKS}
    assert uncached, "the plain translation ran"
    assert with_cache == again == without
    assert all(episode[-1][-1] for episode in without.values()), "the expert solved each task"
