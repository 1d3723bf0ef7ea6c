"""Every ReAct-style method (Raw, ACON, PACE, HiAgent, the LongHorizon executor) gets the same
turn scaffolding: past turns labelled `[step N] > action`, and the line saying which step the
agent is at. Only what each method keeps of the turns differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_fixtures import KitchenEnv
from context_fixtures import RoleScript, run_baseline, user_text
from pos_agent.agents import prompts
from pos_agent.agents.raw import RawAgent
from pos_agent.llm.backend import GenerationRequest

WORK = (
    "Task state:\nCompleted: nothing\nTask contract:\n- C1: at the sink; verified by: look\n"
    "Dependencies: none\nNext: work\nSubtask: go to the sink\nBoundaries: none"
)


def act(request: GenerationRequest) -> str:
    assert request.schema is not None
    answer: dict[str, object] = {"thought": "t", "action": "go to sink 1"}
    if "new_subgoal" in request.schema["properties"]:
        answer["new_subgoal"] = "" if "Current subgoal" in user_text(request) else "reach sink"
    mine = user_text(request).split("Your actions in this subtask:")[-1].count("[step ")
    if request.role == "executor" and mine >= 3:
        answer["action"] = "finish"
    return json.dumps(answer)


def policy_prompts(method: str, tmp_path: Path) -> list[str]:
    script = RoleScript(
        {
            "policy": act,
            "executor/act": act,
            "executor/report": lambda r: "went to the sink",
            "summarizer": lambda r: "a summary",
            "compressor": lambda r: "a summary",
            "manager": lambda r: WORK,
            "auditor": lambda r: "Status: incomplete\nIntegrity: clean\nContract audit: aligned",
        }
    )
    if method == "raw":
        RawAgent(script.model()).run(KitchenEnv(max_steps=3))
        return [user_text(r) for r in script.of("policy")]
    run_baseline(method, script, KitchenEnv(max_steps=3), tmp_path)
    role = "executor" if method == "lh_harness" else "policy"
    return [user_text(r) for r in script.of(role, "act")]


@pytest.mark.parametrize("method", ["raw", "acon", "pace", "hiagent", "lh_harness"])
def test_every_react_method_says_which_step_it_is_at(method: str, tmp_path: Path) -> None:
    asked = policy_prompts(method, tmp_path)
    assert len(asked) >= 3
    for step, text in enumerate(asked[:3]):
        assert prompts.position_line(step) in text, (method, step)


@pytest.mark.parametrize("method", ["raw", "acon", "hiagent", "lh_harness"])
def test_every_kept_turn_is_labelled_with_its_step(method: str, tmp_path: Path) -> None:
    third = policy_prompts(method, tmp_path)[2]
    assert "[step 1] > go to sink 1\n" in third and "[step 2] > go to sink 1\n" in third
