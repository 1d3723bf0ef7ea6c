"""Recovery composition (Eq. 7) from real windows over real beliefs, and the release rule."""

from __future__ import annotations

from pos_agent.belief import Belief, apply_patch, focus_keys, world_keys
from pos_agent.health import HealthConfig, WindowStep, assess_window
from pos_agent.recovery.constraint import (
    GENERIC_LINE,
    allowed_actions,
    compose_recovery,
    generic_recovery,
    should_release,
)
from pos_agent.transition import Transition

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
    state = world_keys(belief)
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
    state = world_keys(belief)
    elsewhere, _ = apply_patch(belief, [{"op": "upsert_entity", "name": "cabinet 2"}] * 1 + [
        {"op": "upsert_state", "entity": "mug 1", "attribute": "location", "value": "cabinet 2"},
        {"op": "upsert_relation", "src": "mug 1", "type": "in", "dst": "cabinet 2"},
    ])  # fmt: skip
    transitions = [
        Transition(1, "go to cabinet 1", "You arrive.", 0, world_keys(elsewhere)),
        Transition(2, "look", "You see a microwave.", 0, state),
        Transition(3, "inventory", "You carry nothing.", 0, state),
    ]
    report = assess_window([window_step(belief, 0)] * 8, CONFIG)
    constraint = compose_recovery(report, transitions, belief, current_state=state)
    assert constraint.forbidden_actions == ("inventory", "look")


def test_static_names_the_actions_taken_in_a_state_within_eps_w_not_only_an_identical_one() -> None:
    # Each examination nudges a confidence (a new state key) but the world stays within eps_W:
    # static detection calls it unchanged, so recovery must name the action, not print
    # 'Do not repeat  in this unchanged state.' as an exact fingerprint did.
    beliefs = []
    belief, _ = apply_patch(
        kitchen(),
        [{"op": "upsert_state", "entity": "cabinet 1", "attribute": f"shelf {i}", "value": "empty"}
         for i in range(6)],
    )  # fmt: skip
    for step in range(1, 10):
        belief, _ = apply_patch(
            belief.at_step(step),
            [{"op": "upsert_state", "entity": "mug 1", "attribute": "seen", "value": "yes",
              "confidence": 0.5 + step / 20}],
        )  # fmt: skip
        beliefs.append(belief)
    transitions = [
        Transition(t, "examine microwave 1", "Nothing happens.", 0, world_keys(beliefs[t - 1]))
        for t in range(1, 9)
    ]
    report = assess_window([window_step(b, 0) for b in beliefs[1:]], CONFIG)
    assert report.trapped and report.pattern == "static"
    constraint = compose_recovery(
        report, transitions, beliefs[-1], current_state=world_keys(beliefs[-1])
    )
    assert constraint.forbidden_actions == ("examine microwave 1",)
    assert 'Do not repeat "examine microwave 1" in this unchanged state.' in constraint.render()


def test_generic_recovery_renders_no_pattern_nor_blocked_gap() -> None:
    belief = kitchen()
    report = assess_window([window_step(belief, 0)] * 8, CONFIG)
    assert report.pattern == "static" and report.blocked == "achievement"
    text = generic_recovery(report, belief).render()
    assert text.splitlines()[0] == f"RECOVERY (belief health {report.health:.2f})"
    assert "static" not in text and "blocked" not in text and "trapped" not in text


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
    report = assess_window([window_step(after, 0)] * 8, HealthConfig(task="diagnosis"))
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


# -- text that says nothing is never quoted back ---------------------------------------------------

JUNK = "1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"


def test_unreadable_text_is_told_from_words() -> None:
    from pos_agent.belief import unreadable

    for junk in (JUNK, "", "  ", "42", "- - - - -", "abababab", "......"):
        assert unreadable(junk), junk
    for words in ("mug 1", "microwave 1", "e1", "ok", "heat the mug", "abab", "1st floor"):
        assert not unreadable(words), words


def test_a_degenerate_belief_is_neither_quoted_nor_called_usable() -> None:
    from pos_agent.belief import unreadable_ids, unusable

    junk, rejected = apply_patch(
        Belief(goal="heat some mug and put it in cabinet", step=0),
        [
            {"op": "upsert_entity", "name": JUNK},
            {
                "op": "add_gap",
                "kind": "achievement",
                "text": JUNK,
                "refs": [JUNK],
                "activate": True,
            },
        ],
    )
    assert rejected == [], "the schema lets such text through: that is what is handled here"
    assert unreadable_ids(junk) == ["e1", "g1"]
    why = unusable(junk)
    assert why is not None and "named in words" in why
    assert unusable(kitchen()) is None
    assert unusable(Belief(goal="x", step=0)) == "it holds no entity and no gap"
    state = world_keys(junk)
    steps = [window_step(junk, 0) for _ in range(CONFIG.window)]
    transitions = [Transition(t, "look", "Nothing happens.", 0, state) for t in range(1, 9)]
    report = assess_window(steps, CONFIG)
    assert report.trapped
    text = compose_recovery(report, transitions, junk, current_state=state).render()
    assert "1.1.1" not in text, text
    assert "g1 (the belief gives it no readable text" in text
    assert "Relevant entities" not in text
    from pos_agent.belief import render_belief

    shown = render_belief(junk)
    assert "1.1.1" not in shown and "g1 achievement: (no readable text)" in shown
