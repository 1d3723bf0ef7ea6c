"""The belief updater as public API (`pos_agent.updater`): the PoS agent's own prompts and
schema, and `apply_update` (patch, then the sentinel rules) for an agent of one's own."""

from __future__ import annotations

import json

import pytest

from pos_agent import updater
from pos_agent.agents.pos import prompts as agent_prompts
from pos_agent.agents.pos import schemas as agent_schemas
from pos_agent.belief import PATCH_OPS, Belief
from pos_agent.roles.limits import COMPACT

OBS = {
    0: "You are in the kitchen. You see a microwave 1 and a countertop 1.",
    1: "You open the microwave 1. The microwave 1 is open. In it, you see a mug 1.",
}


def test_the_agent_uses_the_same_prompts_and_schemas() -> None:
    assert agent_prompts.belief_update is updater.belief_update
    assert agent_prompts.BELIEF_SYSTEM is updater.BELIEF_SYSTEM
    assert agent_schemas.patch_schema is updater.patch_schema
    assert agent_schemas.BeliefPatch is updater.BeliefPatch


def test_the_prompts_show_every_patch_op_and_the_belief() -> None:
    init = updater.init_messages("heat the mug", OBS[0])
    assert [m.role for m in init] == ["system", "user"]
    # The ops are in the belief model's instructions, after the task (cache-aware layout).
    assert all(op in init[1].content for op in PATCH_OPS)
    assert "microwave 1" in init[1].content
    belief = updater.apply_update(
        Belief(goal="heat the mug"),
        {"ops": [{"op": "upsert_entity", "name": "microwave 1", "type": "appliance"}]},
        step=0,
        observations=OBS,
    ).belief
    update = updater.update_messages(belief, 1, "open microwave 1", OBS[1])
    assert "microwave 1" in update[1].content and "Action at step 0: open microwave 1" in (
        update[1].content
    )
    assert "Observation at step 1:" in update[1].content


def test_the_json_schema_names_every_op_and_takes_bounds() -> None:
    schema = updater.patch_json_schema()
    text = json.dumps(schema)
    assert all(f'"{op}"' in text for op in PATCH_OPS)
    assert "maxItems" not in text  # unbounded for real models
    bounded = json.dumps(updater.patch_json_schema(COMPACT.bounds))
    assert "maxItems" in bounded


def test_apply_update_applies_the_patch_and_runs_the_sentinel_rules() -> None:
    answer = json.dumps(
        {
            "ops": [
                {"op": "upsert_entity", "name": "microwave 1"},
                {
                    "op": "upsert_state",
                    "entity": "microwave 1",
                    "attribute": "door",
                    "value": "closed",
                    "evidence": [1],
                    "quote": "The microwave 1 is open.",
                },
                {"op": "add_gap", "kind": "achievement", "text": "heat the mug", "activate": True},
            ]
        }
    )
    update = updater.apply_update(Belief(goal="heat the mug"), answer, step=1, observations=OBS)
    assert update.rejected == []
    assert update.belief.step == 1 and len(update.belief.states) == 1
    assert "contradicts_observation" in {f.rule for f in update.findings}
    assert update.changed


@pytest.mark.parametrize("answer", ["not json", '{"ops": [{"op": "fly"}]}', {"ops": 3}])
def test_a_bad_answer_leaves_the_belief_and_says_why(answer: object) -> None:
    belief = Belief(goal="heat the mug", step=0)
    update = updater.apply_update(belief, answer, step=1, observations=OBS)  # type: ignore[arg-type]
    assert update.belief.entities == belief.entities
    assert len(update.rejected) == 1 and update.rejected[0].index == -1
    assert "not a belief patch" in update.rejected[0].reason
