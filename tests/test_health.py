"""Belief health (DESIGN section 4, Eq. 4-6): constructed windows with known answers."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import pytest

from pos_agent.health import (
    HealthConfig,
    HealthReport,
    WindowStep,
    WorldKeys,
    assess_window,
    diagnostic_progress,
    jaccard_distance,
    world_distance,
)

GAP = frozenset({"g1"})


def world(tag: str, size: int = 4) -> WorldKeys:
    """A world whose keys all carry `tag`, so worlds with different tags are at d_W = 1."""
    return WorldKeys(
        entities=frozenset(f"{tag}:e{i}" for i in range(size)),
        states=frozenset(f"{tag}:s{i}" for i in range(size)),
        relations=frozenset(f"{tag}:r{i}" for i in range(size)),
    )


def rebuilt(keys: WorldKeys) -> WorldKeys:
    """Equal content in new set objects, as a belief rebuilt at every step would give."""
    return WorldKeys(
        entities=frozenset(list(keys.entities)),
        states=frozenset(list(keys.states)),
        relations=frozenset(list(keys.relations)),
    )


def step(
    full: WorldKeys,
    focus: WorldKeys | None = None,
    epistemic: Iterable[str] = (),
    achievement: Iterable[str] = GAP,
    progress: int = 0,
) -> WindowStep:
    return WindowStep(
        world=rebuilt(full),
        focus=rebuilt(focus if focus is not None else full),
        epistemic=frozenset(epistemic),
        achievement=frozenset(achievement),
        progress=progress,
    )


def focus_sequence(tags: str, **kwargs: Any) -> list[WindowStep]:
    """One step per letter; equal letters are equal worlds (full and focus)."""
    return [step(world(tag), **kwargs) for tag in tags]


# --- distances ---------------------------------------------------------------------------------


def test_jaccard_distance_of_two_empty_sets_is_zero() -> None:
    assert jaccard_distance(frozenset(), frozenset()) == 0.0


def test_jaccard_distance_values() -> None:
    assert jaccard_distance(frozenset("ab"), frozenset("bc")) == pytest.approx(2 / 3)
    assert jaccard_distance(frozenset("ab"), frozenset("ab")) == 0.0
    assert jaccard_distance(frozenset("ab"), frozenset()) == 1.0
    assert jaccard_distance(frozenset("ab"), frozenset("cd")) == 1.0


def test_world_distance_is_the_mean_over_the_three_key_sets() -> None:
    a = WorldKeys(frozenset("ab"), frozenset("xy"), frozenset())
    b = WorldKeys(frozenset("bc"), frozenset("xy"), frozenset())
    # entities 2/3, states 0, relations d_J(empty, empty) = 0
    assert world_distance(a, b) == pytest.approx((2 / 3) / 3)


def test_world_keys_accepts_any_iterable_and_stores_frozensets() -> None:
    keys = WorldKeys({"e1"}, ["s1", "s1"], ())  # type: ignore[arg-type]
    assert keys.entities == frozenset({"e1"}) and isinstance(keys.states, frozenset)
    assert keys.states == frozenset({"s1"}) and keys.relations == frozenset()


# --- paper Table 4 boundary rows ---------------------------------------------------------------


def test_table4_persistent_gap_no_progress_no_recurrence_gives_health_zero() -> None:
    report = assess_window(focus_sequence("ABCDEFGH"))
    assert (report.persistence_a, report.stagnation, report.recurrence) == (1.0, 1.0, 0.0)
    assert report.health == 0.0
    assert report.trapped


def test_table4_persistent_gap_full_progress_full_recurrence_gives_health_zero() -> None:
    report = assess_window(focus_sequence("AAAAAAAA", progress=1))
    assert (report.persistence_a, report.stagnation, report.recurrence) == (1.0, 0.0, 1.0)
    assert report.health == 0.0
    assert report.trapped


def test_table4_persistent_gap_full_progress_no_recurrence_gives_health_one() -> None:
    report = assess_window(focus_sequence("ABCDEFGH", progress=1))
    assert (report.persistence_a, report.stagnation, report.recurrence) == (1.0, 0.0, 0.0)
    assert report.health == 1.0
    assert not report.trapped
    assert report.pattern is None and report.blocked is None


# --- diagnosis of constructed trapped windows --------------------------------------------------


def test_static_one_ineffective_action_repeated_in_an_unchanged_world() -> None:
    report = assess_window(focus_sequence("AAAAAAAA"))
    assert report.trapped
    assert report.pattern == "static"
    assert report.lag == 1
    assert report.blocked == "achievement"


def test_cycle_with_period_two() -> None:
    steps = focus_sequence("ABABABAB", epistemic={"e1"}, achievement=())
    report = assess_window(steps, HealthConfig(task="diagnosis"))
    assert report.trapped
    assert report.pattern == "cycle"
    assert report.recurrence == 1.0
    assert report.lag == 2
    assert report.blocked == "epistemic"


def test_cycle_with_period_three() -> None:
    report = assess_window(focus_sequence("ABCABCAB"))
    assert report.trapped
    assert report.pattern == "cycle"
    assert report.recurrence == 1.0
    assert report.lag == 3
    assert report.blocked == "achievement"


def test_drift_full_world_changes_while_the_focus_stays_the_same() -> None:
    same_focus = world("F")
    steps = [step(world(tag), same_focus, epistemic={"e1"}, achievement=()) for tag in "ABCDEFGH"]
    report = assess_window(steps)
    assert report.trapped
    assert report.pattern == "drift"
    assert report.lag == 1
    assert report.blocked == "epistemic"


def test_trapped_without_a_pattern() -> None:
    report = assess_window(focus_sequence("ABCDEFGH"))
    assert report.trapped
    assert report.pattern is None
    assert report.lag is None
    assert report.blocked == "achievement"


def test_weak_recurrence_is_not_a_cycle() -> None:
    report = assess_window(focus_sequence("ABABACDE"))
    assert report.recurrence == pytest.approx(3 / 6)
    assert report.lag == 2
    assert report.trapped
    assert report.pattern is None


def test_static_is_checked_before_cycle() -> None:
    same_world = world("W")
    steps = [step(same_world, world(tag)) for tag in "ABABABAB"]
    report = assess_window(steps)
    assert report.lag == 2
    assert report.pattern == "static"


def test_cycle_is_checked_before_drift() -> None:
    # The last two focus worlds are equal (drift would match), but lag 4 recurs fully.
    steps = [step(world(str(i)), world(tag)) for i, tag in enumerate("AABBAABB")]
    report = assess_window(steps)
    assert report.recurrence == 1.0
    assert report.lag == 4
    assert report.pattern == "cycle"


def test_lag_one_recurrence_is_drift_not_cycle_even_when_full() -> None:
    same_focus = world("F")
    steps = [step(world(tag), same_focus) for tag in "ABCDEFGH"]
    report = assess_window(steps, HealthConfig(theta_r=0.0))
    assert report.pattern == "drift"


@pytest.mark.parametrize(
    ("task", "expected"), [("diagnosis", "epistemic"), ("execution", "achievement")]
)
def test_blocked_kind_tie_on_persistence_follows_the_task(task: str, expected: str) -> None:
    steps = focus_sequence("AAAAAAAA", epistemic={"e1"}, achievement={"a1"})
    report = assess_window(steps, HealthConfig(task=task))  # type: ignore[arg-type]
    assert report.persistence_e == report.persistence_a == 1.0
    assert report.blocked == expected


def test_blocked_kind_is_the_more_persistent_one() -> None:
    # Epistemic: {e1, e2} at the first step, only e1 persists (P_e = 1/2); achievement P_a = 1.
    steps = focus_sequence("AAAAAAAA", epistemic={"e1"}, achievement={"a1"})
    steps[0] = step(world("A"), epistemic={"e1", "e2"}, achievement={"a1"})
    report = assess_window(steps, HealthConfig(task="diagnosis"))
    assert report.persistence_e == 0.5
    assert report.blocked == "achievement"


def test_blocked_kind_only_considers_kinds_with_an_open_gap_at_the_last_step() -> None:
    # theta_h = 1 traps every full window, so the P tie at 0 shows which kinds are candidates.
    config = HealthConfig(theta_h=1.0, task="diagnosis")
    steps = focus_sequence("ABCDEFGH", epistemic=(), achievement=())
    steps[-1] = step(world("H"), epistemic=(), achievement={"a9"})
    report = assess_window(steps, config)
    assert report.trapped and report.persistence_e == report.persistence_a == 0.0
    assert report.blocked == "achievement"  # the tie rule would have said epistemic
    steps[-1] = step(world("H"), epistemic=(), achievement=())
    assert assess_window(steps, config).blocked is None


# --- edge rules --------------------------------------------------------------------------------


def test_each_lag_counts_its_own_k_minus_lag_pairs() -> None:
    # Lag 1: (1,0), (2,1) close out of 7 pairs. Lag 2: (2,0) close out of 6.
    report = assess_window(focus_sequence("AAABCDEF"))
    assert report.recurrence == 2 / 7
    assert report.lag == 1
    # Lag 2: (2,0), (3,1), (4,2) close out of 6 pairs; no other lag recurs.
    report = assess_window(focus_sequence("ABABACDE"))
    assert report.recurrence == 3 / 6
    assert report.lag == 2


def test_lags_are_searched_up_to_max_lag() -> None:
    period_five = focus_sequence("ABCDEABC")
    assert assess_window(period_five).lag is None  # L = 4 < 5
    report = assess_window(period_five, HealthConfig(max_lag=5))
    assert (report.recurrence, report.lag) == (1.0, 5)
    period_two = focus_sequence("ABABABAB")
    assert assess_window(period_two, HealthConfig(max_lag=1)).recurrence == 0.0


def test_lags_are_searched_up_to_window_size_minus_one() -> None:
    # Three steps in the window: lags 1 and 2 exist, lag 3 (<= L = 4) has no pair.
    report = assess_window(focus_sequence("ABA"), HealthConfig(window=3))
    assert (report.recurrence, report.lag) == (1.0, 2)
    report = assess_window(focus_sequence("ABC"), HealthConfig(window=3, max_lag=4))
    assert (report.recurrence, report.lag) == (0.0, None)


def test_the_smallest_lag_wins_ties() -> None:
    assert assess_window(focus_sequence("AAAAAAAA")).lag == 1
    # Lag 2 and lag 4 both recur in every pair.
    assert assess_window(focus_sequence("ABABABAB")).lag == 2


def test_lag_is_none_when_nothing_recurs() -> None:
    report = assess_window(focus_sequence("ABCDEFGH"))
    assert report.recurrence == 0.0 and report.lag is None


def test_empty_focus_worlds_never_recur() -> None:
    # A gap that projects to nothing (no refs and no word in common with the world) used to make
    # every pair of steps "the same world" (d_J of two empty sets is 0): R = 1, trapped forever.
    empty = WorldKeys(frozenset(), frozenset(), frozenset())
    report = assess_window([step(world(tag), empty, progress=1) for tag in "ABCDEFGH"])
    assert report.recurrence == 0.0 and report.lag is None
    assert report.health == 1.0 and not report.trapped
    assert jaccard_distance(frozenset(), frozenset()) == 0.0, "d_J itself is unchanged"


def test_an_empty_focus_is_never_close_to_another_step() -> None:
    empty = WorldKeys(frozenset(), frozenset(), frozenset())
    steps = [step(world("A"), world("F")) for _ in range(4)] + [
        step(world("A"), empty) for _ in range(4)
    ]
    report = assess_window(steps)
    # Lag 1: the three F-F pairs recur, the empty ones and the F-empty pair do not.
    assert report.recurrence == pytest.approx(3 / 7) and report.lag == 1
    trapped = assess_window([step(world("A"), empty) for _ in range(8)])
    assert trapped.trapped and trapped.pattern == "static", "static reads the full world"
    drifting = assess_window([step(world(t), empty) for t in "ABCDEFGH"])
    assert drifting.trapped and drifting.pattern is None, "no drift on an empty projection"


def test_persistence_is_zero_when_the_first_gap_set_is_empty() -> None:
    steps = focus_sequence("AAAAAAAA", epistemic={"e1"}, achievement={"a1"})
    steps[0] = step(world("A"), epistemic=(), achievement={"a1"})
    report = assess_window(steps)
    assert report.persistence_e == 0.0
    assert report.persistence_a == 1.0


def test_persistence_is_the_share_of_first_gaps_open_throughout() -> None:
    steps = focus_sequence("AAAAAAAA", achievement={"a1", "a2", "a3"})
    steps[4] = step(world("A"), achievement={"a1", "a2"})  # a3 closes once, then reopens
    steps[6] = step(world("A"), achievement={"a2", "a1", "a4"})
    assert assess_window(steps).persistence_a == pytest.approx(2 / 3)


def test_stagnation_is_one_minus_mean_progress() -> None:
    steps = focus_sequence("ABCDEFGH")
    steps[1] = step(world("B"), progress=1)
    steps[5] = step(world("F"), progress=1)
    assert assess_window(steps).stagnation == 1 - 2 / 8


def test_not_ready_and_never_trapped_below_the_window_size() -> None:
    report = assess_window(focus_sequence("AAAAAAA"))
    assert not report.ready
    assert report.health == 0.0  # the numbers are still reported
    assert not report.trapped
    assert report.pattern is None and report.blocked is None


def test_empty_input_is_a_healthy_unready_report() -> None:
    report = assess_window([])
    assert not report.ready and not report.trapped
    assert report.health == 1.0 and report.lag is None


def test_only_the_last_window_steps_are_used() -> None:
    early = [step(world(tag), achievement={"old"}, progress=1) for tag in "WXYZ"]
    stuck = focus_sequence("AAAAAAAA")
    report = assess_window(early + stuck)
    assert report == assess_window(stuck)
    assert (report.persistence_a, report.stagnation) == (1.0, 1.0)
    assert report.trapped and report.pattern == "static"


def test_health_equal_to_theta_h_is_trapped() -> None:
    steps = focus_sequence("ABCDEFGH")
    for index in (2, 5):  # two progressing steps: S = 0.75, H = 0.25
        steps[index] = step(world("ABCDEFGH"[index]), progress=1)
    report = assess_window(steps)
    assert report.health == 0.25 and report.trapped
    steps[6] = step(world("G"), progress=1)  # S = 0.625, H = 0.375
    assert not assess_window(steps).trapped


def _pair_at(shared: int, own_a: int, own_b: int, prefix: str) -> tuple[frozenset[str], ...]:
    common = [f"{prefix}{i}" for i in range(shared)]
    return (
        frozenset([*common, *(f"{prefix}a{i}" for i in range(own_a))]),
        frozenset([*common, *(f"{prefix}b{i}" for i in range(own_b))]),
    )


def test_distance_equal_to_eps_w_in_exact_arithmetic_counts_as_close() -> None:
    # d_J = 1/5, 1/10 and 3/20: d_W = 0.15 exactly, which floats give as 0.15000000000000002.
    entities, states, relations = (
        _pair_at(4, 1, 0, "e"),
        _pair_at(9, 1, 0, "s"),
        _pair_at(17, 2, 1, "r"),
    )
    near_a = WorldKeys(entities[0], states[0], relations[0])
    near_b = WorldKeys(entities[1], states[1], relations[1])
    assert world_distance(near_a, near_b) == pytest.approx(0.15)
    steps = [step(world(tag), near_a if i % 2 else near_b) for i, tag in enumerate("ABCDEFGH")]
    report = assess_window(steps)
    assert (report.recurrence, report.lag, report.pattern) == (1.0, 1, "drift")
    # One more key on one side of the relations: d_W just above 0.15, only lag 2 recurs.
    far_b = WorldKeys(near_b.entities, near_b.states, near_b.relations | {"rb9"})
    steps = [step(world(tag), near_a if i % 2 else far_b) for i, tag in enumerate("ABCDEFGH")]
    report = assess_window(steps)
    assert (report.recurrence, report.lag, report.pattern) == (1.0, 2, "cycle")


# --- config, steps and report ------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {"window": 1},
        {"window": 2.5},
        {"window": True},
        {"max_lag": 0},
        {"eps_w": -0.1},
        {"eps_diag": 1.5},
        {"theta_h": math.nan},
        {"theta_r": "0.75"},
        {"task": "planning"},
    ],
)
def test_health_config_rejects_bad_values(overrides: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="HealthConfig"):
        HealthConfig(**overrides)  # type: ignore[arg-type]


def test_health_config_defaults_are_the_paper_values() -> None:
    config = HealthConfig()
    assert (config.window, config.max_lag, config.eps_w, config.eps_diag) == (8, 4, 0.15, 0.30)
    assert (config.theta_h, config.theta_r, config.task) == (0.25, 0.75, "execution")


@pytest.mark.parametrize("progress", [2, -1, 0.5, "1", None])
def test_window_step_rejects_a_progress_label_outside_0_1(progress: object) -> None:
    with pytest.raises(ValueError, match="progress"):
        WindowStep(world("A"), world("A"), GAP, GAP, progress)  # type: ignore[arg-type]


def test_window_step_rejects_a_world_that_is_not_world_keys() -> None:
    with pytest.raises(TypeError, match="WorldKeys"):
        WindowStep({"e1"}, world("A"), GAP, GAP, 0)  # type: ignore[arg-type]


def test_report_to_dict_is_json_ready() -> None:
    report = assess_window(focus_sequence("ABABABAB"))
    as_dict = report.to_dict()
    assert json.loads(json.dumps(as_dict)) == as_dict
    assert as_dict["pattern"] == "cycle" and as_dict["lag"] == 2
    assert set(as_dict) == set(HealthReport.__dataclass_fields__)


# --- diagnostic progress (Eq. 4) ---------------------------------------------------------------


def test_diagnostic_progress_below_and_above_eps() -> None:
    before = {"flu": 0.5, "covid": 0.3, "cold": 0.2}
    small_move = {"flu": 0.6, "covid": 0.2, "cold": 0.2}
    assert diagnostic_progress(before, small_move, 0.30) == (pytest.approx(0.1), 0)
    big_move = {"flu": 0.9, "covid": 0.05, "cold": 0.05}
    assert diagnostic_progress(before, big_move, 0.30) == (pytest.approx(0.4), 1)


def test_diagnostic_progress_exactly_eps_is_not_progress() -> None:
    # 0.5 * (|0.4 - 0.1| + |0.3 - 0.6|) = 0.3, which floats give as 0.30000000000000004.
    d, u = diagnostic_progress({"a": 0.1, "b": 0.6}, {"a": 0.4, "b": 0.3}, 0.30)
    assert d == pytest.approx(0.3) and u == 0


def test_diagnostic_progress_is_total_variation_over_the_union_of_both_sides() -> None:
    # DESIGN §4: a record missing on one side has confidence 0 there.
    assert diagnostic_progress({}, {"appears": 0.7}, 0.30) == (pytest.approx(0.35), 1)
    assert diagnostic_progress({"goes": 0.4}, {}, 0.30) == (pytest.approx(0.2), 0)
    before = {"kept": 0.2, "dropped": 1.0}
    after = {"kept": 0.4, "added": 1.0}
    assert diagnostic_progress(before, after, 0.30) == (pytest.approx(1.1), 1)


def test_diagnostic_progress_is_defensive_about_bad_confidences() -> None:
    before: dict[str, object] = {"nan": math.nan, "inf": 0.0, "text": 0.5, "none": 0.5, "big": 0.0}
    after: dict[str, object] = {"nan": 1.0, "inf": math.inf, "text": "high", "none": None, "big": 7}
    d, u = diagnostic_progress(before, after, 0.30)  # type: ignore[arg-type]
    # nan, text and none count as missing (confidence 0); inf and 7 clip to 1.
    assert (d, u) == (2.0, 1)


def test_diagnostic_progress_of_identical_or_empty_dicts_is_zero() -> None:
    confidences = {"a": 0.25, "b": 0.75}
    assert diagnostic_progress(confidences, dict(confidences), 0.30) == (0.0, 0)
    assert diagnostic_progress({}, {}, 0.30) == (0.0, 0)


def test_assessment_does_not_depend_on_set_object_identity() -> None:
    a, b, c = world("A"), world("B"), world("C")
    shared = [WindowStep(x, x, frozenset(), GAP, 0) for x in (a, b, c, a, b, c, a, b)]
    assert assess_window(shared) == assess_window(focus_sequence("ABCABCAB"))


def test_triangle_bounds_never_decide_a_pair_the_exact_distance_would_not() -> None:
    # a, b, c nest: the chain bound d(a,b) + d(b,c) is just above the true d(a,c).
    from pos_agent.health.window import _Closeness

    def nested(count: int) -> WorldKeys:
        return WorldKeys(*(frozenset(f"{kind}{i}" for i in range(count)) for kind in "esr"))

    a, b, c = nested(1000), nested(1050), nested(1100)
    true_distance = world_distance(a, c)
    chain_bound = world_distance(a, b) + world_distance(b, c)
    assert true_distance < chain_bound < true_distance + 0.003
    for eps_w in (true_distance - 1e-4, (true_distance + chain_bound) / 2, chain_bound + 1e-4):
        closeness = _Closeness([a, b, c], eps_w)
        assert closeness.close(1, 0) and closeness.close(2, 1)
        assert closeness.close(2, 0) == (true_distance <= eps_w)


def test_the_design_spelling_diagnostic_reads_as_diagnosis() -> None:
    """DESIGN §4 writes task="diagnostic"; the shared TaskKind says "diagnosis"."""
    assert HealthConfig(task="diagnostic").task == "diagnosis"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'execution' or 'diagnosis'"):
        HealthConfig(task="diagnose")  # type: ignore[arg-type]
