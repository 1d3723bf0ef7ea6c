"""The belief engine: every patch op, id assignment, keys, projection, rendering, JSON."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pos_agent.belief import (
    PATCH_OPS,
    Belief,
    apply_patch,
    apply_patch_detailed,
    focus_keys,
    project,
    render_belief,
    select_active_gap,
    world_keys,
)

GOAL = "heat some mug and put it in cabinet"


def kitchen(step: int = 1) -> Belief:
    """mug on countertop, microwave closed, cabinet; heat gap active, find-cabinet gap open."""
    belief, rejected = apply_patch(
        Belief(goal=GOAL, step=step),
        [
            {"op": "upsert_entity", "name": "mug 1", "type": "object"},
            {"op": "upsert_entity", "name": "microwave 1", "type": "appliance"},
            {"op": "upsert_entity", "name": "countertop 1", "type": "receptacle"},
            {"op": "upsert_entity", "name": "cabinet 1", "type": "receptacle"},
            {"op": "upsert_entity", "name": "sink 1", "type": "receptacle"},
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "temperature",
                "value": "cold",
                "evidence": [1],
            },
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "closed",
                "evidence": [1],
            },
            {
                "op": "upsert_relation",
                "src": "mug 1",
                "type": "on",
                "dst": "countertop 1",
                "evidence": [1],
            },
            {
                "op": "add_gap",
                "kind": "achievement",
                "text": "heat the mug",
                "refs": ["mug 1"],
                "activate": True,
            },
            {
                "op": "add_gap",
                "kind": "epistemic",
                "text": "is the cabinet empty",
                "refs": ["cabinet 1"],
            },
        ],
    )
    assert rejected == []
    return belief


def test_engine_assigns_fresh_ids_and_names_resolve() -> None:
    belief = kitchen()
    assert sorted(belief.entities) == ["e1", "e2", "e3", "e4", "e5"]
    assert belief.states["s1"].entity == "e1"
    assert belief.relations["r1"].src == "e1" and belief.relations["r1"].dst == "e3"
    assert belief.active_gap_id == "g1"
    assert belief.gaps["g1"].refs == ("e1",) and belief.gaps["g1"].opened_at == 1


def test_model_cannot_choose_ids_for_new_records() -> None:
    belief, rejected = apply_patch(
        kitchen(), [{"op": "upsert_entity", "id": "e99", "name": "spoon"}]
    )
    assert "e99" not in belief.entities
    assert rejected and "not a known id" in rejected[0].reason


def test_upsert_entity_updates_by_id_or_name_without_duplicates() -> None:
    belief, rejected = apply_patch(
        kitchen(),
        [
            {"op": "upsert_entity", "name": "Mug 1", "type": "cup"},
            {"op": "upsert_entity", "id": "e2", "attrs": {"brand": "acme", "watts": 800}},
        ],
    )
    assert rejected == []
    assert len(belief.entities) == 5
    assert belief.entities["e1"].type == "cup"
    assert dict(belief.entities["e2"].attrs) == {"brand": "acme", "watts": 800}
    assert belief.entities["e2"].name == "microwave 1"


def test_state_upsert_on_existing_slot_replaces_value_and_keeps_id() -> None:
    belief = kitchen(step=2)
    new, rejected = apply_patch(
        belief,
        [
            {
                "op": "upsert_state",
                "entity": "e2",
                "attribute": "Door",
                "value": "open",
                "evidence": [2],
            }
        ],
    )
    assert rejected == []
    assert new.states["s2"].value == "open"
    assert len(new.states) == len(belief.states)
    assert belief.states["s2"].value == "closed", "apply_patch must not mutate its input"


def test_two_values_for_one_slot_in_one_patch_is_a_conflict() -> None:
    new, rejected = apply_patch(
        kitchen(),
        [
            {
                "op": "upsert_state",
                "entity": "e2",
                "attribute": "door",
                "value": "open",
                "confidence": 0.9,
            },
            {"op": "upsert_state", "entity": "microwave 1", "attribute": "door", "value": "closed"},
        ],
    )
    assert [r.index for r in rejected] == [1]
    assert "conflict" in rejected[0].reason
    assert new.states["s2"].value == "open"


def test_same_value_twice_in_one_patch_is_not_a_conflict() -> None:
    _, rejected = apply_patch(
        kitchen(),
        [
            {"op": "upsert_state", "entity": "e2", "attribute": "door", "value": "open"},
            {"op": "upsert_state", "entity": "e2", "attribute": "door", "value": "Open."},
        ],
    )
    assert rejected == []


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        (
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "x",
                "value": "y",
                "confidence": 1.5,
            },
            "outside [0, 1]",
        ),
        (
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "x",
                "value": "y",
                "confidence": -0.1,
            },
            "outside [0, 1]",
        ),
        (
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "x",
                "value": "y",
                "confidence": math.nan,
            },
            "outside [0, 1]",
        ),
        (
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "x",
                "value": "y",
                "confidence": "high",
            },
            "must be a number",
        ),
        (
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "x",
                "value": "y",
                "confidence": True,
            },
            "must be a number",
        ),
        ({"op": "upsert_state", "entity": "e42", "attribute": "x", "value": "y"}, "not a known id"),
        ({"op": "upsert_state", "entity": "e1", "value": "y"}, "missing field 'attribute'"),
        (
            {"op": "upsert_state", "entity": "e1", "attribute": "x", "value": "y", "evidence": [9]},
            "does not exist",
        ),
        (
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "x",
                "value": "y",
                "evidence": ["a"],
            },
            "step numbers",
        ),
        (
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "x",
                "value": "y",
                "source": "dreamt",
            },
            "source must be",
        ),
        ({"op": "upsert_relation", "src": "e1", "type": "in", "dst": "e77"}, "not a known id"),
        (
            {"op": "upsert_relation", "src": "e1", "type": "in", "dst": "mug 1"},
            "two different ends",
        ),
        ({"op": "remove_state", "id": "s99"}, "not a known id"),
        ({"op": "remove_state", "entity": "e1", "attribute": "colour"}, "no state"),
        ({"op": "remove_relation", "id": "r9"}, "not a known id"),
        ({"op": "add_gap", "kind": "curiosity", "text": "why"}, "kind must be"),
        ({"op": "add_gap", "kind": "epistemic", "text": ""}, "must not be empty"),
        (
            {"op": "add_gap", "kind": "epistemic", "text": "x", "refs": ["nothing here"]},
            "not a known id",
        ),
        ({"op": "resolve_gap", "id": "g9"}, "not a known id"),
        ({"op": "set_active_gap", "id": "g7"}, "not a known id"),
        ({"op": "teleport", "to": "moon"}, "unknown op"),
        ({"no_op": True}, "unknown op"),
        (["upsert_entity"], "must be a JSON object"),
    ],
)
def test_invalid_ops_are_rejected_with_reasons(op: Any, reason: str) -> None:
    before = kitchen()
    after, rejected = apply_patch(before, [op])
    assert len(rejected) == 1 and reason in rejected[0].reason, rejected
    assert after == before


def test_remove_state_cascades_to_relations_and_gap_refs() -> None:
    belief, rejected = apply_patch(
        kitchen(),
        [
            {"op": "upsert_relation", "src": "s2", "type": "blocks", "dst": "e1"},
            {"op": "add_gap", "kind": "epistemic", "text": "can the door open", "refs": ["s2"]},
        ],
    )
    assert rejected == []
    after, rejected = apply_patch(
        belief, [{"op": "remove_state", "entity": "microwave 1", "attribute": "door"}]
    )
    assert rejected == []
    assert "s2" not in after.states
    assert all("s2" not in (r.src, r.dst) for r in after.relations.values())
    assert all("s2" not in g.refs for g in after.gaps.values())


def test_relation_upsert_dedupes_by_triple_and_remove_by_triple() -> None:
    belief, rejected = apply_patch(
        kitchen(),
        [{"op": "upsert_relation", "src": "e1", "type": "ON", "dst": "e3", "confidence": 0.4}],
    )
    assert rejected == [] and len(belief.relations) == 1
    assert belief.relations["r1"].confidence == 0.4
    after, rejected = apply_patch(
        belief, [{"op": "remove_relation", "src": "mug 1", "type": "on", "dst": "e3"}]
    )
    assert rejected == [] and after.relations == {}


def test_gap_lifecycle_resolve_and_active_selection() -> None:
    belief = kitchen(step=3)
    after, rejected = apply_patch(belief, [{"op": "resolve_gap", "id": "g1"}])
    assert rejected == []
    assert after.gaps["g1"].resolved_at == 3 and after.active_gap_id is None
    assert select_active_gap(after) == "g2"
    _, rejected = apply_patch(after, [{"op": "resolve_gap", "id": "g1"}])
    assert "already resolved" in rejected[0].reason
    _, rejected = apply_patch(after, [{"op": "set_active_gap", "id": "g1"}])
    assert "already resolved" in rejected[0].reason
    switched, rejected = apply_patch(belief, [{"op": "set_active_gap", "id": "g2"}])
    assert rejected == [] and switched.active_gap_id == "g2"
    assert select_active_gap(switched) == "g2", "an open active gap is kept"


def test_duplicate_open_gap_is_not_added_twice() -> None:
    after, rejected = apply_patch(
        kitchen(), [{"op": "add_gap", "kind": "achievement", "text": "Heat the mug."}]
    )
    assert rejected == [] and len(after.gaps) == 2


def test_ids_are_never_reused_after_removal() -> None:
    belief, _ = apply_patch(kitchen(), [{"op": "remove_state", "id": "s2"}])
    after, _ = apply_patch(
        belief, [{"op": "upsert_state", "entity": "e2", "attribute": "power", "value": "off"}]
    )
    assert "s3" in after.states and "s2" not in after.states


def test_patch_wrappers_and_unusable_patches() -> None:
    belief = kitchen()
    wrapped, rejected = apply_patch(belief, {"ops": [{"op": "upsert_entity", "name": "spoon 1"}]})
    assert rejected == [] and "e6" in wrapped.entities
    for junk in (None, 3, "add a spoon", {"thoughts": "none"}):
        after, rejected = apply_patch(belief, junk)
        assert after == belief and len(rejected) == 1 and rejected[0].index == -1


def test_detailed_outcome_lists_changed_ids_and_normalized_ops() -> None:
    outcome = apply_patch_detailed(
        kitchen(step=2),
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "open",
                "evidence": 2,
            }
        ],
    )
    assert outcome.changed == {"s2"}
    assert outcome.applied == [
        {
            "op": "upsert_state",
            "id": "s2",
            "entity": "e2",
            "attribute": "door",
            "value": "open",
            "confidence": 1.0,
            "source": "observed",
            "evidence": [2],
            "quote": None,
        }
    ]


def test_record_keys_include_normalized_value_and_rounded_confidence() -> None:
    belief = kitchen()
    keys = world_keys(belief)
    assert keys.entities == {"e1", "e2", "e3", "e4", "e5"}
    assert "e1|temperature|cold|1.00" in keys.states
    assert "e1|on|e3|1.00" in keys.relations
    nudged, _ = apply_patch(
        belief,
        [
            {
                "op": "upsert_state",
                "entity": "e1",
                "attribute": "temperature",
                "value": " Cold ",
                "confidence": 0.93,
            }
        ],
    )
    assert "e1|temperature|cold|0.95" in world_keys(nudged).states


def test_projection_takes_refs_one_hop_neighbours_their_states_and_relations() -> None:
    belief, _ = apply_patch(
        kitchen(),
        [
            {"op": "upsert_relation", "src": "countertop 1", "type": "next to", "dst": "sink 1"},
            {"op": "add_gap", "kind": "achievement", "text": "use the door", "refs": ["s2"]},
        ],
    )
    heat = project(belief, "g1")
    assert heat.entities == {"e1", "e3"}, (
        "mug and its one-hop neighbour, not the sink two hops away"
    )
    assert heat.states == {"s1"} and heat.relations == {"r1"}
    door = project(belief, "g3")
    assert door.entities == {"e2"} and door.states == {"s2"}
    assert project(belief, None).ids == frozenset()
    focus = focus_keys(belief, "g1")
    assert focus.entities == {"e1", "e3"} and focus.relations == {"e1|on|e3|1.00"}


def test_projection_falls_back_to_word_overlap_for_gaps_without_refs() -> None:
    belief, _ = apply_patch(
        kitchen(), [{"op": "add_gap", "kind": "epistemic", "text": "where is the microwave"}]
    )
    assert project(belief, "g3").entities == {"e2"}


def test_a_past_world_is_projected_with_the_current_gap_record() -> None:
    past = kitchen()
    now, _ = apply_patch(
        past.at_step(5),
        [{"op": "add_gap", "kind": "epistemic", "text": "is the counter clear", "refs": ["e3"]}],
    )
    gap = now.gaps["g3"]
    assert "g3" not in past.gaps
    assert focus_keys(past, "g3").entities == frozenset(), "looked up by id: nothing there"
    assert focus_keys(past, gap).entities == {"e1", "e3"}, "the current gap's refs apply"
    assert project(past, gap) == project(now, "g3")
    unknown = replace(gap, refs=("e99",))
    assert focus_keys(past, unknown).empty, "refs the past world lacks select nothing"


def test_rendering_is_compact_stable_and_id_bearing() -> None:
    belief = kitchen()
    text = render_belief(belief)
    assert text == render_belief(Belief.from_dict(json.loads(json.dumps(belief.to_dict()))))
    assert "- e1 mug 1 (object): s1 temperature=cold (obs@1 1.00)" in text
    assert "- r1 e1 on e3 (obs@1 1.00)" in text
    assert "* g1 achievement: heat the mug [refs e1]" in text
    assert "- g2 epistemic: is the cabinet empty [refs e4]" in text


def test_rendering_size_depends_on_the_belief_not_the_step() -> None:
    belief = kitchen()
    later = belief.at_step(500)
    assert len(render_belief(later)) == len(render_belief(belief))


def test_rendering_with_entity_budget_keeps_the_active_gap_entities() -> None:
    belief = kitchen()
    text = render_belief(belief, max_entities=2)
    assert "mug 1" in text and "countertop 1" in text and "sink 1" not in text
    assert "(+3 more entities not shown)" in text


def test_json_round_trip() -> None:
    belief, _ = apply_patch(
        kitchen(step=4),
        [
            {"op": "resolve_gap", "id": "g2"},
            {"op": "upsert_entity", "id": "e1", "attrs": {"fragile": True}},
        ],
    )
    data = json.loads(json.dumps(belief.to_dict()))
    assert Belief.from_dict(data) == belief
    with pytest.raises(ValueError, match="not a serialized belief"):
        Belief.from_dict({"goal": "x"})


# -- totality: nothing a model writes can make apply_patch raise ---------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 50)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.sampled_from(
    ["e1", "e2", "e3", "s1", "s2", "r1", "g1", "g2", "g9", "mug 1", "microwave 1", "", "x"]
)
ops = st.fixed_dictionaries(
    {"op": st.sampled_from([*PATCH_OPS, "bogus"])},
    optional={
        "id": ids | json_values,
        "name": st.text(max_size=10) | json_values,
        "type": st.text(max_size=10) | json_values,
        "entity": ids | json_values,
        "attribute": st.sampled_from(["door", "location", "temperature"]) | json_values,
        "value": st.sampled_from(["open", "closed", "hot"]) | json_values,
        "confidence": st.floats(-1, 2) | json_values,
        "source": st.sampled_from(["observed", "inferred", "guess"]) | json_values,
        "evidence": st.lists(st.integers(-2, 5), max_size=3) | json_values,
        "quote": st.text(max_size=20) | json_values,
        "src": ids | json_values,
        "dst": ids | json_values,
        "kind": st.sampled_from(["epistemic", "achievement", "other"]) | json_values,
        "text": st.text(max_size=20) | json_values,
        "refs": st.lists(ids, max_size=3) | json_values,
        "activate": st.booleans() | json_values,
        "attrs": st.dictionaries(st.text(max_size=5), json_scalars, max_size=3) | json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(patch=st.lists(ops | json_values, max_size=12) | json_values)
def test_apply_patch_is_total(patch: Any) -> None:
    before = kitchen(step=3)
    snapshot = before.to_dict()
    after, rejected = apply_patch(before, patch)
    assert before.to_dict() == snapshot, "the input belief must not change"
    assert isinstance(after, Belief)
    assert all(not r.reason.startswith("internal error") for r in rejected), rejected
    for state in after.states.values():
        assert 0.0 <= state.confidence <= 1.0 and state.entity in after.entities
    for relation in after.relations.values():
        for end in (relation.src, relation.dst):
            assert end in after.entities or end in after.states
    assert after.active_gap_id is None or after.gaps[after.active_gap_id].is_open
    json.dumps([r.to_dict() for r in rejected])  # rejects are traceable as JSON
    assert Belief.from_dict(json.loads(json.dumps(after.to_dict()))) == after


@settings(max_examples=100, deadline=None)
@given(patch=st.lists(ops, max_size=12))
def test_apply_patch_is_deterministic(patch: list[dict[str, Any]]) -> None:
    first = apply_patch(kitchen(), patch)
    second = apply_patch(kitchen(), patch)
    assert first[0] == second[0]
    assert [r.reason for r in first[1]] == [r.reason for r in second[1]]


def test_the_models_patch_schema_offers_exactly_the_patch_ops() -> None:
    # The op names are spelled once (PATCH_OPS); the schema's literals must be those names, in
    # the standard schema and in a bounded one, so no op the engine knows is hidden from the
    # model and no op the model may write is unknown to the engine.
    from typing import get_args

    from pos_agent.agents.pos.schemas import BeliefPatch, PatchOp, patch_schema
    from pos_agent.belief import PATCH_OPS
    from pos_agent.roles.limits import COMPACT

    literals = {
        value for op in get_args(PatchOp) for value in get_args(op.model_fields["op"].annotation)
    }
    assert literals == set(PATCH_OPS)
    bounded = patch_schema(COMPACT.bounds)
    schema = bounded.model_json_schema()
    written = {
        value
        for definition in schema["$defs"].values()
        if "op" in definition.get("properties", {})
        for value in (
            definition["properties"]["op"].get("enum")
            or [definition["properties"]["op"].get("const")]
        )
    }
    assert written == set(PATCH_OPS)
    assert issubclass(bounded, BeliefPatch)


def test_an_unchecked_patch_skips_only_the_consistency_checks() -> None:
    # no_consistency: in-patch slot conflicts, unknown entity names and evidence steps beyond
    # the episode are taken as given; what cannot be applied at all is still reported.
    from pos_agent.belief import apply_patch_detailed

    base = Belief(goal="g", step=2)
    patch = [
        {"op": "upsert_state", "entity": "mug 1", "attribute": "at", "value": "sink 1"},
        {"op": "upsert_state", "entity": "mug 1", "attribute": "at", "value": "table 1"},
        {"op": "upsert_relation", "src": "mug 1", "type": "on", "dst": "table 1", "evidence": [7]},
        {"op": "add_gap", "kind": "epistemic", "text": "where?", "refs": ["lamp 1"]},
        {"op": "remove_state", "id": "s9"},
    ]
    checked = apply_patch_detailed(base, patch)
    assert len(checked.rejected) == 5
    loose = apply_patch_detailed(base, patch, checked=False)
    assert [r.index for r in loose.rejected] == [4], "s9 does not exist: nothing to remove"
    belief = loose.belief
    assert sorted(e.name for e in belief.entities.values()) == ["lamp 1", "mug 1", "table 1"]
    assert [s.value for s in belief.states.values()] == ["table 1"], "the last value stands"
    assert [r.evidence for r in belief.relations.values()] == [(7,)]
