"""The embedded model's first decision on real diagnosis cases is a tool call the environment
accepts: the decision schema is a union over the tools' own argument schemas, so llama.cpp's
grammar cannot produce an invented argument or an unknown tool."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels, StepStart
from pos_agent.belief import Belief, apply_patch, world_keys
from pos_agent.envs import list_tasks, make_env
from pos_agent.envs.tools import ToolEnvironment, parse_tool_calls
from pos_agent.events import DegradedEvent, ModelCallEvent
from pos_agent.llm import ModelOptions, load_model
from pos_agent.trace import TraceWriter, read_events

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CASES = {
    "rca-nezha": {},
    "clindiag": {"provider": "retrieval", "judge": "matcher"},  # offline provider and judge
}


def data_dir(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.is_dir():
        message = f"{path} is missing: this test needs ../shared/data/{name}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("env_name", sorted(CASES))
def test_first_decision_of_the_embedded_model_is_a_valid_tool_call(
    env_name: str, tmp_path: Path
) -> None:
    folder = data_dir(env_name)
    options: dict[str, Any] = {"data_dir": str(folder), **CASES[env_name]}
    task = list_tasks(env_name, None, **options)[0].task_id
    model = load_model("local", ModelOptions(context_slot="policy"))
    with make_env(env_name, task, max_steps=2, **options) as env:
        observation = env.reset()
        assert observation.tools, "a tool environment offers its tools"
        belief, _ = apply_patch(
            Belief(goal=env.goal),
            [{"op": "add_gap", "kind": "epistemic", "text": env.goal, "activate": True}],
        )
        with TraceWriter(tmp_path) as trace:
            agent = PosAgent(RoleModels.single(model), PosConfig(), trace=trace)
            state = agent.episode_state(env, observation)
            state.belief = belief
            decision = agent.decide(
                state, StepStart(0, belief, world_keys(belief), belief.active_gap)
            )
        assert state.limits.policy.profile == "compact"
        events = list(read_events(tmp_path))
        assert not any(isinstance(e, DegradedEvent) for e in events), events
        call = next(e for e in events if isinstance(e, ModelCallEvent))
        assert call.role == "policy" and call.output is not None
        assert isinstance(env, ToolEnvironment)
        specs = env.tool_specs
        calls = parse_tool_calls(decision.action, specs, max_calls=observation.max_calls)
        assert calls and all(c.tool in {s.name for s in specs} for c in calls)
        after = env.step(decision.action)
        assert "Send one tool call as JSON" not in after.text, "the environment parsed it"
