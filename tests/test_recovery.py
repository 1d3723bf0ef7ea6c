"""Recovery composition (Eq. 7) from real windows over real beliefs, and the release rule."""

from __future__ import annotations

from pos_agent.belief import Belief, apply_patch, focus_keys, world_keys
from pos_agent.health import HealthConfig, WindowStep, assess_window
from pos_agent.health.recovery import (
    GENERIC_LINE,
    Transition,
    allowed_actions,
    compose_recovery,
    generic_recovery,
    should_release,
    world_fingerprint,
)

CONFIG = HealthConfig()


def kitchen() -> Belief:
    belief, rejected = apply_patch(
        Belief(goal="heat some mug and put it in cabinet", step=0),
        [
            {"op": "upsert_entity", "name": "mug 1"},
            {"op": "upsert_entity", "name": "microwave 1"},
            {"op": "upsert_entity", "name": "cabinet 1"},
            {"op": "upsert_state", "entity": "microwave 1", "attribute": "door", "value": "closed"},
            {"op": "upsert_relation", "src": "mug 1", "type": "near", "dst": "microwave 1"},
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
                "text": "does the microwave work",
                "refs": ["microwave 1"],
            },
        ],
    )
    assert rejected == []
    return belief


def window_step(belief: Belief, progress: int) -> WindowStep:
    return WindowStep(
        world=world_keys(belief),
        focus=focus_keys(belief, belief.active_gap_id),
        epistemic=belief.open_gap_ids("epistemic"),
        achievement=belief.open_gap_ids("achievement"),
        progress=progress,
    )


def test_static_trap_forbids_the_repeated_action_and_asks_for_a_state_change() -> None:
    belief = kitchen()
    state = world_fingerprint(world_keys(belief))
    steps = [window_step(belief, 0) for _ in range(CONFIG.window)]
    transitions = [
        Transition(t, "examine microwave 1", "Nothing happens.", 0, state) for t in range(1, 9)
    ]
    report = assess_window(steps, CONFIG)
    assert report.trapped and report.pattern == "static" and report.blocked == "achievement"
    constraint = compose_recovery(report, transitions, belief, current_state=state)
    assert constraint.forbidden_actions == ("examine microwave 1",)
    assert constraint.active_gap_id == "g1"
    assert constraint.relevant_entities == ("e1", "e2")
    assert [t.step for t in constraint.recent_transitions] == [5, 6, 7, 8]
    text = constraint.render()
    assert 'Do not repeat "examine microwave 1"' in text
    assert 'goal-relevant state change for g1 "heat the mug"' in text
    assert "e1 mug 1" in text and "step 8: examine microwave 1 -> Nothing happens." in text
    assert allowed_actions(["examine microwave 1", "open microwave 1"], constraint) == [
        "open microwave 1"
    ]
    assert allowed_actions(["Examine  Microwave 1"], constraint) == ["Examine  Microwave 1"], (
        "never empty"
    )


def test_static_only_forbids_actions_taken_in_this_state() -> None:
    belief = kitchen()
    state = world_fingerprint(world_keys(belief))
    transitions = [
        Transition(1, "go to cabinet 1", "You arrive.", 0, state + 1),
        Transition(2, "look", "You see a microwave.", 0, state),
        Transition(3, "inventory", "You carry nothing.", 0, state),
    ]
    report = assess_window([window_step(belief, 0)] * 8, CONFIG)
    constraint = compose_recovery(report, transitions, belief, current_state=state)
    assert constraint.forbidden_actions == ("inventory", "look")


def test_cycle_forbids_the_action_that_closes_the_loop() -> None:
    base = kitchen()
    at_a, _ = apply_patch(
        base,
        [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "location",
                "value": "countertop 1",
            }
        ],
    )
    at_b, _ = apply_patch(
        base,
        [{"op": "upsert_state", "entity": "mug 1", "attribute": "location", "value": "sink 1"}],
    )
    beliefs = [at_a, at_b] * 4
    steps = [window_step(b, 0) for b in beliefs]
    transitions = [
        Transition(t, "go to countertop 1" if t % 2 else "go to sink 1", "...", 0)
        for t in range(1, 9)
    ]
    report = assess_window(steps, CONFIG)
    assert report.trapped and report.pattern == "cycle" and report.lag == 2
    constraint = compose_recovery(report, transitions, at_b)
    # a_7 = go to countertop 1, a_8 = go to sink 1; with period 2 the next would be a_7 again.
    assert constraint.forbidden_actions == ("go to countertop 1",)
    assert "loop of period 2" in constraint.render()


def test_drift_re_anchors_to_the_active_gap_without_forbidding() -> None:
    belief = kitchen()
    beliefs = []
    for t in range(8):
        # Each step the world away from the mug is a different one; the mug's part never moves.
        ops = [{"op": "upsert_entity", "name": f"drawer {t}.{i}"} for i in range(4)]
        ops += [
            {
                "op": "upsert_state",
                "entity": f"drawer {t}.{i}",
                "attribute": "contents",
                "value": f"item {t}",
            }
            for i in range(4)
        ]
        ops += [
            {
                "op": "upsert_relation",
                "src": f"drawer {t}.{i}",
                "type": f"left of {t}",
                "dst": "cabinet 1",
            }
            for i in range(2)
        ]
        moved, _ = apply_patch(kitchen(), ops)
        beliefs.append(moved)
        belief = moved
    report = assess_window([window_step(b, 0) for b in beliefs], CONFIG)
    assert report.trapped and report.pattern == "drift"
    constraint = compose_recovery(report, [], belief)
    assert constraint.forbidden_actions == ()
    assert 'unrelated to the active gap g1 "heat the mug"' in constraint.render()


def test_epistemic_block_asks_for_discriminating_evidence() -> None:
    belief = kitchen()
    after, _ = apply_patch(
        belief, [{"op": "resolve_gap", "id": "g1"}, {"op": "set_active_gap", "id": "g2"}]
    )
    report = assess_window([window_step(after, 0)] * 8, HealthConfig(task="diagnostic"))
    assert report.blocked == "epistemic"
    text = compose_recovery(report, [], after).render()
    assert "discriminates between the open hypotheses (does the microwave work)" in text


def test_generic_recovery_is_one_line_and_release_follows_health() -> None:
    belief = kitchen()
    trapped = assess_window([window_step(belief, 0)] * 8, CONFIG)
    generic = generic_recovery(trapped, belief)
    assert generic.instructions == (GENERIC_LINE,) and generic.forbidden_actions == ()
    assert not should_release(trapped, CONFIG)
    # Progress resumes: the microwave question is answered and the mug gets heated.
    solved, _ = apply_patch(
        belief, [{"op": "resolve_gap", "id": "g2"}, {"op": "resolve_gap", "id": "g1"}]
    )
    recovering = assess_window([window_step(belief, 0)] * 6 + [window_step(solved, 1)] * 2, CONFIG)
    assert recovering.health > CONFIG.theta_h and should_release(recovering, CONFIG)
    short = assess_window([window_step(belief, 1)] * 3, CONFIG)
    assert not should_release(short, CONFIG), "no decision before the window is full"
