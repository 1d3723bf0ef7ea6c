"""Properties of the health math, and agreement with a plain, line-by-line reading of the spec."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from pos_agent.health import (
    HealthConfig,
    HealthReport,
    WindowStep,
    WorldKeys,
    assess_window,
    diagnostic_progress,
)
from pos_agent.health.window import _Closeness

# A small key universe makes equal and near-equal worlds common, so every branch is reached.
KEYS = [f"k{i}" for i in range(8)]
GAP_IDS = ["g1", "g2", "g3"]

key_sets = st.frozensets(st.sampled_from(KEYS), max_size=len(KEYS))
worlds = st.builds(WorldKeys, key_sets, key_sets, key_sets)
gap_sets = st.frozensets(st.sampled_from(GAP_IDS), max_size=3)


@st.composite
def window_steps(draw: st.DrawFn, max_steps: int = 12) -> list[WindowStep]:
    """Steps whose worlds come from a small pool (cycles, repeats) or are fresh draws."""
    pool = draw(st.lists(worlds, min_size=1, max_size=4))
    pick = st.one_of(st.sampled_from(pool), worlds)
    count = draw(st.integers(min_value=0, max_value=max_steps))
    return [
        WindowStep(
            world=draw(pick),
            focus=draw(pick),
            epistemic=draw(gap_sets),
            achievement=draw(gap_sets),
            progress=draw(st.sampled_from([0, 1])),
        )
        for _ in range(count)
    ]


configs = st.builds(
    HealthConfig,
    window=st.integers(min_value=2, max_value=8),
    max_lag=st.integers(min_value=1, max_value=5),
    eps_w=st.sampled_from([0.0, 0.1, 0.15, 0.2, 1 / 3, 0.5, 1.0]),
    theta_h=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    theta_r=st.sampled_from([0.0, 0.5, 0.75, 1.0]),
    task=st.sampled_from(["execution", "diagnosis"]),
)


# --- a deliberately naive reading of DESIGN section 4, for comparison --------------------------


def naive_jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 0.0
    return 1 - len(a & b) / len(a | b)


def naive_world_distance(x: WorldKeys, y: WorldKeys) -> float:
    parts = [
        naive_jaccard(getattr(x, name), getattr(y, name))
        for name in ("entities", "states", "relations")
    ]
    return sum(parts) / 3


def is_empty(x: WorldKeys) -> bool:
    return not x.entities and not x.states and not x.relations


def naive_assess(steps: list[WindowStep], config: HealthConfig) -> dict[str, Any]:
    tolerance = 1e-9
    window = steps[-config.window :]
    size = len(window)

    def persistence(kind: str) -> float:
        first = getattr(window[0], kind)
        if not first:
            return 0.0
        common = set(first)
        for item in window:
            common &= getattr(item, kind)
        return len(common) / len(first)

    p_e, p_a = persistence("epistemic"), persistence("achievement")
    stagnation = 1 - sum(item.progress for item in window) / size
    recurrence, lag = 0.0, None
    for candidate in range(1, min(config.max_lag, size - 1) + 1):
        close = 0
        for tau in range(candidate, size):
            now, then = window[tau].focus, window[tau - candidate].focus
            d = naive_world_distance(now, then)
            # An empty projection is never a recurrence (DESIGN §2).
            close += not is_empty(now) and not is_empty(then) and d <= config.eps_w + tolerance
        fraction = close / (size - candidate)
        if fraction > recurrence:
            recurrence, lag = fraction, candidate
    health = 1 - max(p_e, p_a) * max(stagnation, recurrence)
    trapped = len(steps) >= config.window and health <= config.theta_h + tolerance
    pattern = blocked = None
    if trapped:
        last, before = window[-1], window[-2]
        if naive_world_distance(last.world, before.world) <= config.eps_w + tolerance:
            pattern = "static"
        elif lag is not None and lag > 1 and recurrence >= config.theta_r - tolerance:
            pattern = "cycle"
        elif (
            not is_empty(last.focus)
            and not is_empty(before.focus)
            and naive_world_distance(last.focus, before.focus) <= config.eps_w + tolerance
        ):
            pattern = "drift"
        candidates = {
            k: p for k, p in (("epistemic", p_e), ("achievement", p_a)) if getattr(last, k)
        }
        if len(candidates) == 1:
            blocked = next(iter(candidates))
        elif candidates:
            if p_e != p_a:
                blocked = "epistemic" if p_e > p_a else "achievement"
            else:
                blocked = "epistemic" if config.task == "diagnosis" else "achievement"
    return {
        "persistence_e": p_e,
        "persistence_a": p_a,
        "stagnation": stagnation,
        "recurrence": recurrence,
        "lag": lag,
        "health": health,
        "trapped": trapped,
        "pattern": pattern,
        "blocked": blocked,
    }


def rebuilt(step: WindowStep) -> WindowStep:
    def copy(keys: WorldKeys) -> WorldKeys:
        return WorldKeys(
            frozenset(list(keys.entities)),
            frozenset(list(keys.states)),
            frozenset(list(keys.relations)),
        )

    return replace(step, world=copy(step.world), focus=copy(step.focus))


@st.composite
def near_threshold_steps(draw: st.DrawFn) -> list[WindowStep]:
    """Worlds that are small edits of a few 30-key bases: distances straddle eps_W = 0.15."""
    # One seed drives a plain Random: much faster to generate than a draw per key.
    rng = random.Random(draw(st.integers(min_value=0, max_value=2**32 - 1)))
    universe = [f"u{i}" for i in range(60)]

    def base() -> frozenset[str]:
        return frozenset(rng.sample(universe, 30))

    bases = [WorldKeys(base(), base(), base()) for _ in range(rng.randint(1, 3))]

    def edited(keys: frozenset[str]) -> frozenset[str]:
        removed = rng.sample(sorted(keys), min(len(keys), rng.randint(0, 3)))
        added = rng.sample(universe, rng.randint(0, 3))
        return (keys - set(removed)) | set(added)

    def world(previous: WorldKeys | None) -> WorldKeys:
        # Edit a base (repeats and cycles) or the previous step (drift, where distances add up
        # along the chain and the triangle bounds are nearly tight).
        chosen = previous if previous is not None and rng.random() < 0.5 else rng.choice(bases)
        return WorldKeys(edited(chosen.entities), edited(chosen.states), edited(chosen.relations))

    steps: list[WindowStep] = []
    for _ in range(rng.randint(2, 10)):
        previous = steps[-1].focus if steps else None
        focus = world(previous)
        steps.append(
            WindowStep(world(previous), focus, frozenset({"g1"}), frozenset(), rng.choice([0, 1]))
        )
    return steps


# --- properties --------------------------------------------------------------------------------


def assess_both_ways(steps: list[WindowStep], config: HealthConfig) -> list[HealthReport]:
    """The report as computed for these (small) sets, and with the bound reasoning that large
    sets get forced on, so that both routes are checked against the naive reading."""
    direct = assess_window(steps, config)
    with patch.object(_Closeness, "_DIRECT_LOOKUPS", -1):
        bounded = assess_window(steps, config)
    return [direct, bounded]


@settings(max_examples=400, deadline=None)
@given(window_steps(), configs)
def test_assessment_matches_the_naive_reading_of_the_spec(
    steps: list[WindowStep], config: HealthConfig
) -> None:
    if not steps:
        return
    expected = naive_assess(steps, config)
    for report in assess_both_ways(steps, config):
        actual = report.to_dict()
        for name in ("lag", "trapped", "pattern", "blocked", "recurrence"):
            assert actual[name] == expected[name], name
        for name in ("persistence_e", "persistence_a", "stagnation", "health"):
            assert math.isclose(getattr(report, name), expected[name], abs_tol=1e-12), name


@settings(max_examples=300, deadline=None)
@given(near_threshold_steps(), st.sampled_from([0.05, 0.1, 0.15, 0.2]))
def test_near_threshold_worlds_match_the_naive_reading(
    steps: list[WindowStep], eps_w: float
) -> None:
    config = HealthConfig(eps_w=eps_w, theta_h=1.0, theta_r=0.5)
    expected = naive_assess(steps, config)
    for report in assess_both_ways(steps, config):
        actual = report.to_dict()
        for name in ("recurrence", "lag", "trapped", "pattern", "blocked"):
            assert actual[name] == expected[name], name


@given(window_steps(), configs)
def test_health_and_components_stay_in_the_unit_interval(
    steps: list[WindowStep], config: HealthConfig
) -> None:
    report = assess_window(steps, config)
    for value in (
        report.persistence_e,
        report.persistence_a,
        report.stagnation,
        report.recurrence,
        report.health,
    ):
        assert 0.0 <= value <= 1.0
    assert (report.lag is None) == (report.recurrence == 0.0)
    if report.lag is not None:
        assert 1 <= report.lag <= config.max_lag
    if not report.trapped:
        assert report.pattern is None and report.blocked is None


@given(window_steps(), configs)
def test_health_is_one_when_no_gap_persists_across_the_window(
    steps: list[WindowStep], config: HealthConfig
) -> None:
    # Give every step its own gap ids: nothing is open at both the first and the last step.
    fresh = [
        replace(s, epistemic=frozenset({f"e{i}"}), achievement=frozenset({f"a{i}"}))
        for i, s in enumerate(steps)
    ]
    report = assess_window(fresh, config)
    if len(fresh) >= 2:
        assert report.persistence_e == report.persistence_a == 0.0
        assert report.health == 1.0
        assert report.trapped == (report.ready and config.theta_h == 1.0)


@given(window_steps(), configs)
def test_never_ready_nor_trapped_below_the_window_size(
    steps: list[WindowStep], config: HealthConfig
) -> None:
    short = steps[: config.window - 1]
    report = assess_window(short, config)
    assert not report.ready
    assert not report.trapped
    assert report.pattern is None and report.blocked is None


@given(window_steps(), configs)
def test_assessment_is_deterministic_and_ignores_object_identity(
    steps: list[WindowStep], config: HealthConfig
) -> None:
    first: HealthReport = assess_window(steps, config)
    assert assess_window(steps, config) == first
    assert assess_window([rebuilt(s) for s in steps], config) == first
    assert assess_window(tuple(steps), config) == first


confidences = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-5, max_value=5),
    st.none(),
    st.text(max_size=3),
    st.booleans(),
)
belief_confidences = st.dictionaries(st.sampled_from(KEYS), confidences, max_size=len(KEYS))
float_confidences = st.dictionaries(
    st.sampled_from(KEYS), st.floats(min_value=0.0, max_value=1.0), max_size=len(KEYS)
)


@given(belief_confidences, belief_confidences, st.floats(allow_nan=True))
def test_diagnostic_progress_never_raises_and_is_bounded(
    before: dict[str, Any], after: dict[str, Any], eps: float
) -> None:
    d, u = diagnostic_progress(before, after, eps)
    assert 0.0 <= d <= 0.5 * len(KEYS)
    assert u in (0, 1)


@given(float_confidences, float_confidences, st.floats(min_value=0.0, max_value=1.0))
def test_diagnostic_progress_is_symmetric_in_magnitude(
    before: dict[str, float], after: dict[str, float], eps: float
) -> None:
    assert diagnostic_progress(before, after, eps) == diagnostic_progress(after, before, eps)


@given(float_confidences, st.floats(min_value=0.0, max_value=1.0))
def test_diagnostic_progress_of_identical_dicts_is_zero(
    confidences: dict[str, float], eps: float
) -> None:
    assert diagnostic_progress(confidences, dict(confidences), eps) == (0.0, 0)


@given(float_confidences, float_confidences)
def test_diagnostic_progress_label_is_d_above_eps(
    before: dict[str, float], after: dict[str, float]
) -> None:
    d, u = diagnostic_progress(before, after, 0.30)
    union = before.keys() | after.keys()
    naive = 0.5 * sum(abs(after.get(k, 0.0) - before.get(k, 0.0)) for k in union)
    assert math.isclose(d, naive, abs_tol=1e-12)
    if abs(d - 0.30) > 1e-6:
        assert u == int(d > 0.30)
