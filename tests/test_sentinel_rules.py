"""Belief Sentinel rules: each rule fires on its case and stays quiet on the clean belief."""

from __future__ import annotations

from typing import Any

import pytest

from pos_agent.belief import Belief, Gap, Relation, State, apply_patch, apply_patch_detailed
from pos_agent.sentinel import RULES, Finding, check_rules

OBS = {
    0: "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a countertop 1 and a microwave 1.",
    1: 'You arrive at countertop 1. On the countertop 1, you see a mug 1.\nThe microwave 1 is closed.\nA note says "Handle with care"\nand nothing else.',
}


def base(ops: list[dict[str, Any]] | None = None) -> Belief:
    belief, rejected = apply_patch(
        Belief(goal="heat some mug and put it in cabinet", step=1),
        [
            {"op": "upsert_entity", "name": "mug 1"},
            {"op": "upsert_entity", "name": "microwave 1", "type": "appliance"},
            {"op": "upsert_entity", "name": "countertop 1", "type": "receptacle"},
            {
                "op": "upsert_relation",
                "src": "mug 1",
                "type": "on",
                "dst": "countertop 1",
                "evidence": [1],
                "quote": "On the countertop 1, you see a mug 1.",
            },
            {
                "op": "add_gap",
                "kind": "achievement",
                "text": "heat the mug",
                "refs": ["mug 1"],
                "activate": True,
            },
            *(ops or []),
        ],
    )
    assert rejected == []
    return belief


def rules_of(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def test_clean_belief_has_no_findings() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "closed",
                "evidence": [1],
                "quote": "the microwave 1 is CLOSED",
            }
        ]
    )
    assert check_rules(belief, OBS) == []


def test_microwave_both_open_and_closed_is_flagged() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "open",
                "confidence": 0.9,
            },
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "status",
                "value": "closed",
                "confidence": 0.9,
            },
        ]
    )
    findings = [f for f in check_rules(belief, OBS) if f.rule == "internal_conflict"]
    assert len(findings) == 1
    assert findings[0].records[0] == "e2" and {"s1", "s2"} <= set(findings[0].records)


def test_negated_and_location_values_are_not_conflicts() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "not open",
            },
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "status",
                "value": "closed",
            },
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "location",
                "value": "on countertop 1",
            },
            {"op": "upsert_state", "entity": "mug 1", "attribute": "power", "value": "off"},
        ]
    )
    assert "internal_conflict" not in rules_of(check_rules(belief, OBS))


def test_two_values_for_one_slot_in_one_patch() -> None:
    patch = [
        {"op": "upsert_state", "entity": "microwave 1", "attribute": "door", "value": "open"},
        {"op": "upsert_state", "entity": "e2", "attribute": "Door", "value": "closed"},
    ]
    outcome = apply_patch_detailed(base(), patch)
    findings = check_rules(outcome.belief, OBS, patch=patch, changed=outcome.changed)
    conflict = [f for f in findings if f.rule == "slot_conflict"]
    assert len(conflict) == 1 and conflict[0].records == ("e2",)
    assert "open / closed" in conflict[0].reason


def test_value_contradicting_the_cited_observation() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "open",
                "evidence": [1],
            }
        ]
    )
    findings = [f for f in check_rules(belief, OBS) if f.rule == "contradicts_observation"]
    assert len(findings) == 1 and findings[0].records == ("s1",) and findings[0].step == 1


def test_observation_that_does_not_mention_the_entity_cannot_contradict() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "open",
                "evidence": [0],
            }
        ]
    )
    assert "contradicts_observation" not in rules_of(check_rules(belief, OBS))


def test_observed_record_without_evidence() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "colour",
                "value": "red",
                "source": "observed",
            }
        ]
    )
    findings = [f for f in check_rules(belief, OBS) if f.rule == "missing_evidence"]
    assert [f.records for f in findings] == [("s1",)]


def test_evidence_step_without_observation() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "colour",
                "value": "red",
                "evidence": [1],
            }
        ]
    )
    findings = check_rules(belief, {0: OBS[0]})
    assert "evidence_unavailable" in rules_of(findings)


def test_quote_not_found_in_cited_observation() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "temperature",
                "value": "hot",
                "evidence": [1],
                "quote": "the mug 1 is hot",
            }
        ]
    )
    findings = [f for f in check_rules(belief, OBS) if f.rule == "quote_not_found"]
    assert [f.records for f in findings] == [("s1",)]


@pytest.mark.parametrize(
    "quote",
    [
        'A note says "Handle with care"',
        'a note says\n"handle   with care"\nand nothing else',
        "A note says \u201cHandle with care\u201d",
        "  on the countertop 1, you see a mug 1.  ",
    ],
)
def test_quote_with_quotation_marks_or_newlines_is_found(quote: str) -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "label",
                "value": "handle with care",
                "evidence": [1],
                "quote": quote,
            }
        ]
    )
    assert "quote_not_found" not in rules_of(check_rules(belief, OBS))


def test_json_escaped_quote_is_not_matched_through_escaping() -> None:
    # The model must quote the text, not its JSON encoding.
    escaped = 'A note says \\"Handle with care\\"'
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "label",
                "value": "x",
                "evidence": [1],
                "quote": escaped,
            }
        ]
    )
    assert "quote_not_found" in rules_of(check_rules(belief, OBS))


def test_dangling_ids_confidence_range_and_inactive_gap() -> None:
    belief = base()
    broken = Belief(
        goal=belief.goal,
        entities=belief.entities,
        states={"s7": State("s7", "e9", "door", "open", 1.4)},
        relations={"r7": Relation("r7", "e1", "in", "s99", 0.5)},
        gaps={
            **belief.gaps,
            "g5": Gap("g5", "epistemic", "why", refs=("e42",)),
            "g6": Gap("g6", "epistemic", "done", resolved_at=1),
        },
        active_gap_id="g6",
        step=1,
    )
    findings = check_rules(broken, OBS)
    assert rules_of(findings) >= {"dangling_id", "confidence_range", "active_gap_not_open"}
    dangling = {f.records for f in findings if f.rule == "dangling_id"}
    assert dangling == {("s7",), ("r7",), ("g5",)}
    missing_gap = Belief(goal="g", active_gap_id="g3")
    assert [f.rule for f in check_rules(missing_gap, {})] == ["active_gap_not_open"]


def test_changed_scope_limits_record_rules() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "colour",
                "value": "red",
                "source": "observed",
            }
        ]
    )
    assert "missing_evidence" in rules_of(check_rules(belief, OBS))
    assert "missing_evidence" not in rules_of(check_rules(belief, OBS, changed={"r1"}))
    assert "missing_evidence" in rules_of(check_rules(belief, OBS, changed={"s1"}))


def test_every_rule_is_named_and_findings_serialize() -> None:
    belief = base(
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "colour",
                "value": "red",
                "source": "observed",
            }
        ]
    )
    for finding in check_rules(belief, OBS):
        assert finding.rule in RULES
        assert finding.to_dict()["records"] == list(finding.records)


# -- evidential support (DESIGN §3.2) and plans that are not states -----------------------------

MICROWAVE_OBS = {
    **OBS,
    2: "You put the mug 1 in/on the microwave 1.",
    3: "You heat the mug 1 using the microwave 1.",
}


def mug_state(value: str, evidence: int, attribute: str = "temperature") -> Belief:
    belief, rejected = apply_patch(
        base().at_step(3),
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": attribute,
                "value": value,
                "evidence": [evidence],
                "source": "observed",
            }
        ],
    )
    assert rejected == []
    return belief


def test_the_papers_unsupported_inference_gets_a_finding() -> None:
    # "mug temperature=hot" after "You put the mug 1 in/on the microwave 1." (paper's example)
    findings = check_rules(mug_state("hot", 2), MICROWAVE_OBS)
    unsupported = [f for f in findings if f.rule == "unsupported_observation"]
    assert len(unsupported) == 1 and unsupported[0].records == ("s1",)
    assert unsupported[0].step == 2 and "temperature" in unsupported[0].reason


def test_an_observation_that_shows_the_property_supports_it() -> None:
    assert check_rules(mug_state("hot", 3), MICROWAVE_OBS) == []
    assert check_rules(mug_state("is now hot", 3), MICROWAVE_OBS) == []


def test_inferred_and_non_polar_values_are_never_called_unsupported() -> None:
    inferred, _ = apply_patch(
        base().at_step(3),
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "temperature",
                "value": "hot",
                "source": "inferred",
            }
        ],
    )
    assert check_rules(inferred, MICROWAVE_OBS) == []
    # A value the rule cannot read is left to the audit.
    assert check_rules(mug_state("inside the microwave", 2, "location"), MICROWAVE_OBS) == []


def test_an_observed_relation_needs_an_observation_naming_an_end() -> None:
    belief, rejected = apply_patch(
        base().at_step(3),
        [
            {"op": "upsert_entity", "name": "cabinet 1"},
            {
                "op": "upsert_relation",
                "src": "mug 1",
                "type": "in",
                "dst": "cabinet 1",
                "evidence": [0],
                "source": "observed",
            },
        ],
    )
    assert rejected == []
    # Step 0 names the cabinet: supported. Cited at step 2 instead (mug and microwave only).
    assert "unsupported_observation" not in rules_of(check_rules(belief, MICROWAVE_OBS))
    moved = {**MICROWAVE_OBS, 0: "You are in the middle of a room."}
    findings = [f for f in check_rules(belief, moved) if f.rule == "unsupported_observation"]
    assert [f.records for f in findings] == [("r2",)]


@pytest.mark.parametrize(
    ("attribute", "plan", "state"),
    [
        ("plan", "needs to be heated", "cold"),
        ("next", "plan: open it", "closed"),
        ("status", "needs to be heated", "cold"),
        ("door", "plan: open it", "closed"),
        ("cleanliness", "wash until clean", "dirty"),
    ],
)
def test_plan_like_values_are_not_states_and_never_conflict(
    attribute: str, plan: str, state: str
) -> None:
    belief, rejected = apply_patch(
        base().at_step(3),
        [
            {"op": "upsert_state", "entity": "mug 1", "attribute": "now", "value": state},
            {"op": "upsert_state", "entity": "mug 1", "attribute": attribute, "value": plan},
        ],
    )
    assert rejected == []
    assert "internal_conflict" not in rules_of(check_rules(belief, OBS))


def test_a_plan_recorded_as_observed_is_not_checked_against_the_observation() -> None:
    # "closed" observed, "plan: open it" recorded with the same evidence: neither contradicts it.
    belief, rejected = apply_patch(
        base().at_step(3),
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "next",
                "value": "open it",
                "evidence": [1],
            }
        ],
    )
    assert rejected == []
    assert check_rules(belief, OBS) == []


def test_real_opposite_states_still_conflict_with_fillers() -> None:
    belief, _ = apply_patch(
        base().at_step(3),
        [
            {"op": "upsert_state", "entity": "mug 1", "attribute": "temperature", "value": "cold"},
            {"op": "upsert_state", "entity": "mug 1", "attribute": "state", "value": "is now hot"},
        ],
    )
    assert "internal_conflict" in rules_of(check_rules(belief, OBS))


# -- history attributes record a past value, not the current one --------------------------------


@pytest.mark.parametrize("history", ["initial door", "previous status", "original door state"])
def test_a_history_attribute_is_no_conflict_with_the_current_value(history: str) -> None:
    belief, rejected = apply_patch(
        base().at_step(3),
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": history,
                "value": "closed",
            },
            {"op": "upsert_state", "entity": "microwave 1", "attribute": "door", "value": "open"},
        ],
    )
    assert rejected == []
    assert "internal_conflict" not in rules_of(check_rules(belief, OBS))


def test_current_values_still_conflict_beside_a_history_attribute() -> None:
    belief, _ = apply_patch(
        base().at_step(3),
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "initial door",
                "value": "closed",
            },
            {"op": "upsert_state", "entity": "microwave 1", "attribute": "door", "value": "open"},
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "status",
                "value": "closed",
            },
        ],
    )
    findings = [f for f in check_rules(belief, OBS) if f.rule == "internal_conflict"]
    assert len(findings) == 1 and "initial door" not in findings[0].reason
    assert "door=open" in findings[0].reason and "status=closed" in findings[0].reason


def test_a_history_value_is_not_contradicted_by_the_step_that_changed_it() -> None:
    observations = {**OBS, 2: "You open the microwave 1. The microwave 1 is open."}
    belief, rejected = apply_patch(
        base().at_step(3),
        [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "initial door",
                "value": "closed",
                "evidence": [2],
            }
        ],
    )
    assert rejected == []
    assert "contradicts_observation" not in rules_of(check_rules(belief, observations))
