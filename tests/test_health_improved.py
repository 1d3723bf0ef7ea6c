"""The `improved` diagnosis (health/improved.py) on constructed windows with known answers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pos_agent.health import HealthConfig, WindowStep, WorldKeys, assess_window
from pos_agent.health.improved import changed_keys, read_transitions

IMPROVED = HealthConfig(diagnosis="improved")
PAPER = HealthConfig()
GAP = frozenset({"g1"})
ENTITIES = frozenset(f"e{i}" for i in range(25))


def big_world(*changes: str, size: int = 25) -> WorldKeys:
    """A world of 75 records (25 entities, 25 states, 25 relations) plus `changes` as states.

    Worlds that differ only in their `changes` differ in one or two records: the whole-world
    Jaccard distance between them is far below eps_W = 0.15, as on real TextWorld beliefs."""
    entities = frozenset(f"e{i}" for i in range(size))
    states = frozenset(f"e{i}|colour|c{i}|1.00" for i in range(size)) | frozenset(changes)
    relations = frozenset(f"e{i}|near|e{(i + 1) % size}|1.00" for i in range(size))
    return WorldKeys(entities, states, relations)


def step(
    world: WorldKeys,
    focus: WorldKeys | None = None,
    *,
    progress: int = 0,
    achievement: Iterable[str] = GAP,
    novel: int | None = None,
) -> WindowStep:
    return WindowStep(
        world=world,
        focus=focus if focus is not None else world,
        epistemic=frozenset(),
        achievement=frozenset(achievement),
        progress=progress,
        novel=novel,
    )


def at(room: str) -> WorldKeys:
    return big_world(f"player|at|{room}|1.00")


def focus_at(room: str) -> WorldKeys:
    return WorldKeys(frozenset({"player"}), frozenset({f"player|at|{room}|1.00"}), frozenset())


def walk(rooms: str, progress: int = 0) -> list[WindowStep]:
    """One step per letter: the player is in that room; the focus is the player's location."""
    return [step(at(room), focus_at(room), progress=progress) for room in rooms]


def assess(steps: Sequence[WindowStep], config: HealthConfig = IMPROVED):  # type: ignore[no-untyped-def]
    return assess_window(steps, config)


# --- the weakness the improved mode fixes ------------------------------------------------------


def test_on_a_large_belief_paper_calls_a_two_room_cycle_static_and_improved_calls_it_a_cycle() -> (
    None
):
    steps = walk("ABABABAB")
    paper = assess(steps, PAPER)
    improved = assess(steps)
    assert paper.trapped and paper.pattern == "static"  # one step moves d_W by ~0.01 < 0.15
    assert improved.trapped and improved.pattern == "cycle"
    assert improved.lag == 2


def test_on_a_large_belief_improved_calls_drift_drift() -> None:
    # Each step changes a different irrelevant object; the focus (the goal's records) stays.
    goal_focus = WorldKeys(frozenset({"e0"}), frozenset({"e0|colour|c0|1.00"}), frozenset())
    steps = [step(big_world(f"e{i}|open|yes|1.00"), goal_focus) for i in range(1, 9)]
    assert assess(steps, PAPER).pattern == "static"
    report = assess(steps)
    assert report.trapped and report.pattern == "drift"


# --- patterns ----------------------------------------------------------------------------------


def test_static_repeating_a_no_op_is_static_after_recent_steps() -> None:
    steps = walk("A" * 6)
    assert not assess(steps[:4]).trapped  # 3 transitions: not enough to judge
    report = assess(steps[:5])
    assert report.ready and report.trapped and report.pattern == "static"
    assert report.lag == 1 and report.blocked == "achievement"


def test_cycle_over_three_places_back_and_forth() -> None:
    report = assess(walk("ABCBABCB"))
    assert report.trapped and report.pattern == "cycle"
    assert report.recurrence == 1.0
    assert report.lag == 4  # the period: the action 4 steps back closes the loop


def test_state_toggle_is_a_cycle() -> None:
    opened, closed = big_world("box|door|open|1.00"), big_world("box|door|closed|1.00")
    report = assess([step(w) for w in [opened, closed] * 4])
    assert report.trapped and report.pattern == "cycle" and report.lag == 2


def test_the_pattern_is_the_majority_of_the_stuck_run_not_the_last_step() -> None:
    # Five steps of a two-room cycle, then one repeat of the last room: still a cycle.
    report = assess(walk("ABABABB"))
    assert report.trapped and report.pattern == "cycle"


def test_an_empty_focus_is_not_evidence_of_drift() -> None:
    empty = WorldKeys(frozenset(), frozenset(), frozenset())
    steps = [step(big_world(f"e{i}|open|yes|1.00"), empty) for i in range(1, 9)]
    assert [r.kind for r in read_transitions(steps, IMPROVED)[1:] if r] == ["unexplained"] * 7
    report = assess(steps)
    assert not report.trapped and report.stagnation == 0.0


def test_changes_to_the_focus_without_progress_are_no_pattern_and_no_trap() -> None:
    # Walking on to places that are neither new nor recent: nothing says the agent is stuck.
    report = assess(walk("ABCDEFGH"))
    assert not report.trapped and report.pattern is None


# --- what is productive ------------------------------------------------------------------------


def test_first_seen_entities_are_exploration_not_a_trap() -> None:
    steps = [
        step(
            WorldKeys(ENTITIES | {f"room{i}"}, frozenset({f"player|at|room{i}|1.00"}), frozenset())
        )
        for i in range(10)
    ]
    report = assess(steps)
    assert not report.trapped and report.stagnation == 0.0


def test_caller_counted_novelty_overrides_the_window_count() -> None:
    # Pacing between two rooms is a cycle, unless the caller says each step showed new things.
    pacing = walk("ABABABAB")
    assert assess(pacing).trapped
    seeing_new_things = [replace(s, novel=1) for s in pacing]
    assert not assess(seeing_new_things).trapped


def test_progress_that_only_returns_to_an_earlier_world_is_not_progress() -> None:
    # The plan shrinks on every way back (u = 1 every other step) but the agent is pacing.
    steps = [step(at(room), focus_at(room), progress=int(room == "A")) for room in "ABABABAB"]
    assert assess(steps, PAPER).stagnation == 0.5
    report = assess(steps)
    assert report.trapped and report.pattern == "cycle"


def test_progress_to_new_worlds_keeps_the_window_healthy() -> None:
    steps = [step(big_world(f"done|{i}"), progress=1) for i in range(10)]
    report = assess(steps)
    assert not report.trapped and report.health == 1.0


def test_one_stuck_step_in_four_is_not_a_trap_three_are() -> None:
    productive = [step(big_world(f"done|{i}"), progress=1) for i in range(6)]
    stuck = productive[-1]
    assert not assess([*productive, stuck]).trapped
    assert not assess([*productive, stuck, stuck]).trapped
    report = assess([*productive, stuck, stuck, stuck])
    assert report.trapped and report.stagnation == 0.75


def test_a_resolved_gap_means_no_trap() -> None:
    steps = walk("ABABABAB")
    steps[-1] = replace(steps[-1], achievement=frozenset())
    assert not assess(steps).trapped


# --- configuration and invariants --------------------------------------------------------------


def test_change_tolerance_treats_small_changes_as_the_same_world() -> None:
    steps = [step(big_world(f"e0|confidence|{i}|1.00")) for i in range(8)]
    assert not assess(steps).trapped  # every step changes one record of the focus: unexplained
    tolerant = assess(steps, replace(IMPROVED, change_tolerance=2))
    assert tolerant.trapped and tolerant.pattern == "static"


def test_changed_keys_counts_the_symmetric_difference() -> None:
    assert changed_keys(at("A"), at("B")) == 2
    assert changed_keys(at("A"), at("A")) == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [("diagnosis", "clever"), ("recent", 0), ("change_tolerance", -1), ("recent", True)],
)
def test_invalid_improved_settings_are_rejected(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        HealthConfig(**{field: value})  # type: ignore[arg-type]


def test_window_step_rejects_a_negative_novelty() -> None:
    with pytest.raises(ValueError, match="novel"):
        step(at("A"), novel=-1)


def test_readings_name_every_transition() -> None:
    readings = read_transitions(walk("AABAB"), IMPROVED)
    assert readings[0] is None
    assert [r.kind for r in readings[1:] if r] == ["static", "unexplained", "cycle", "cycle"]
    assert [r.returns for r in readings[1:] if r] == [(1,), (), (2, 3), (2,)]


worlds = st.builds(
    lambda states: big_world(*states, size=3),
    st.frozensets(st.sampled_from([f"x{i}" for i in range(4)]), max_size=3),
)
windows = st.lists(
    st.builds(
        step,
        worlds,
        progress=st.integers(0, 1),
        achievement=st.sampled_from([GAP, frozenset(), frozenset({"g1", "g2"})]),
        novel=st.one_of(st.none(), st.integers(0, 2)),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(windows, st.integers(1, 7), st.integers(0, 3))
def test_improved_reports_stay_consistent(
    steps: list[WindowStep], recent: int, tolerance: int
) -> None:
    config = HealthConfig(diagnosis="improved", recent=recent, change_tolerance=tolerance)
    report = assess(steps, config)
    for value in (report.stagnation, report.recurrence, report.health, report.persistence_a):
        assert 0.0 <= value <= 1.0
    # Trapped: ready, H <= theta_H, and a pattern to name (the latest step is not out of it).
    low = report.ready and report.health <= config.theta_h + 1e-9
    assert report.trapped == (low and report.pattern is not None)
    if not report.trapped:
        assert report.pattern is None and report.blocked is None
    assert (report.lag is None) == (report.recurrence == 0.0)
    assert assess(list(steps), config) == report


# --- issue 20: actions, labels, release ----------------------------------------------------------


def test_the_window_is_released_on_the_first_step_out_of_the_trap() -> None:
    stuck = [step(at("A"))] * 6
    assert assess(stuck).trapped
    out = assess([*stuck, step(at("B"), progress=1)])
    # 3 of the last 4 transitions were stuck, but the latest made progress: what came before
    # it no longer counts.
    assert out.stagnation == 0.0 and not out.trapped and out.pattern is None


def test_after_an_escape_only_new_stuck_steps_count() -> None:
    """An agent that left a loop and then repeats one call is not trapped again on the
    strength of the loop it left; three stuck steps after the escape are a new trap."""
    stuck = [step(at("A"))] * 6
    escaped = [*stuck, step(at("B"), progress=1)]
    once = assess([*escaped, step(at("B"))])
    assert not once.trapped and once.stagnation == 0.25
    again = assess([*escaped, *[step(at("B"))] * 3])
    assert again.trapped and again.pattern == "static"


def test_a_caller_label_wins_over_novelty_both_ways() -> None:
    labelled = [replace(step(big_world(f"new|{i}"), novel=2), labelled=True) for i in range(6)]
    assert [r and r.kind for r in read_transitions(labelled, IMPROVED)[1:]] == ["exploring"] * 5
    polls = [replace(step(at("A"), progress=1), labelled=True)] * 6
    assert not assess(polls).trapped
    assert {r and r.kind for r in read_transitions(polls, IMPROVED)[1:]} == {"productive"}
    unlabelled = [step(at("A"), progress=1)] * 6  # the PoS agent's own label: a return
    assert assess(unlabelled).trapped


def test_calls_repeating_with_a_period_are_a_cycle_the_world_does_not_show() -> None:
    calls = ["read a", "read b", "read c"] * 3
    steps = [replace(step(at("A")), action=call) for call in calls]
    report = assess(steps)
    assert report.trapped and report.pattern == "cycle" and report.lag == 3


def test_the_same_call_with_a_changing_output_and_nothing_new_is_static() -> None:
    steps = [replace(step(big_world(f"uptime|{i % 3}"), novel=0), action="poll") for i in range(8)]
    report = assess(steps)
    assert report.trapped and report.pattern == "static"
    # Without the call, the changing world reads as a cycle of period 3.
    assert assess([replace(s, action=None) for s in steps]).pattern == "cycle"


def test_a_belief_unchanged_while_the_output_changes_is_drift_not_static() -> None:
    steps = [
        replace(step(at("A")), action=f"take thing {i}", observation=f"you take thing {i}.")
        for i in range(6)
    ]
    report = assess(steps)
    assert report.trapped and report.pattern == "drift"
    # Calls never made before that end as the last one did: varied attempts, still drift.
    same = [replace(s, observation="nothing happens.") for s in steps]
    assert assess(same).pattern == "drift"
    repeated = [replace(s, action="wait", observation="nothing happens.") for s in steps]
    assert assess(repeated).pattern == "static"


def test_an_expected_repeat_is_waiting_not_stuck() -> None:
    steps = [replace(step(at("A")), action="status", expected=True)] * 6
    assert not assess(steps).trapped
    assert {r and r.kind for r in read_transitions(steps, IMPROVED)[1:]} == {"waiting"}
