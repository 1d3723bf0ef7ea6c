"""The public surface of pos_agent.agents, as its docstring shows it."""

from __future__ import annotations

import pos_agent.agents as agents
from extras import needs_alfworld
from pos_agent.agents import Episode, PosAgent, PosConfig, RawAgent, RoleModels
from pos_agent.envs import make_env
from pos_agent.llm import ScriptedModel


def test_every_exported_name_exists() -> None:
    missing = [name for name in agents.__all__ if not hasattr(agents, name)]
    assert missing == []


@needs_alfworld
def test_the_docstring_example_plays_an_episode() -> None:
    model = ScriptedModel()  # answers every schema with its smallest valid object
    with make_env("alfworld-mini", "heat-mug", max_steps=2) as env:
        episode = PosAgent(RoleModels.single(model), PosConfig(recovery="soft")).run(env)
    assert isinstance(episode, Episode) and episode.steps == 2 and not episode.success
    with make_env("alfworld-mini", "heat-mug", max_steps=2) as env:
        assert RawAgent(model).run(env).steps == 2
