"""Belief health over a window of validated transitions, and the trap diagnosis (Eq. 5-6).

Everything here is a pure function of plain sets, so the same math serves PoS and any other
agent that can describe its steps as `WindowStep`s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import islice
from typing import Literal, get_args

from pos_agent.health.distance import WorldKeys, jaccard_distance, world_distance
from pos_agent.kinds import TASK_KINDS, GapKind, TaskKind, TrapPattern

Diagnosis = Literal["paper", "improved"]

# Slack for "<=" against a threshold: a distance or health that equals the threshold in exact
# arithmetic (e.g. a mean of thirds against 0.15) must not flip on the last bit of a float.
_TOLERANCE = 1e-9


def _at_most(value: float, limit: float) -> bool:
    return value <= limit + _TOLERANCE


def _at_least(value: float, limit: float) -> bool:
    return value >= limit - _TOLERANCE


@dataclass(frozen=True, slots=True)
class WindowStep:
    """One validated transition, reduced to what the health math needs."""

    world: WorldKeys
    """Record keys of the full world after the transition (used by the static check)."""

    focus: WorldKeys
    """Record keys of the world projected onto the *current* active gap (recurrence, drift).
    An empty projection (nothing of the gap in that world) is never a recurrence."""

    epistemic: frozenset[str]
    """Ids of the open epistemic gaps after the transition."""

    achievement: frozenset[str]
    """Ids of the open achievement gaps after the transition."""

    progress: int
    """Progress label u in {0, 1} of the transition (Eq. 4 or the sentinel's judgment)."""

    novel: int | None = None
    """Entities first seen at this step over the whole episode, if the caller tracks them.

    Only the `improved` diagnosis reads it (first-seen entities are exploration); when None it
    counts entities absent from every earlier step of the window instead."""

    action: str | None = None
    """improved only: the canonical key of the action that led here (equal keys are the same
    call, see `pos_agent.monitor.actions`); None when unknown. Eq. 5-6 never read it."""

    observation: str | None = None
    """improved only: a key of the (normalised) observation of the step, when the world comes
    from a belief; tells "the belief did not change but the agent saw its actions take effect"
    (drift) from "nothing changed at all" (static). None when unknown or model-free."""

    observation_seen: bool = False
    """improved only: `observation` is one already seen earlier in the episode, also before
    the window (the agent went back over known ground)."""

    action_seen: bool = False
    """improved only: `action` was already made earlier in the episode (also before the
    window); a call never made before that ends as an earlier one did is a varied attempt."""

    labelled: bool = False
    """improved only: `progress` was given by the caller (a label or a callable), so it wins
    over first-seen entities both ways. False: progress is derived, as the PoS agent's is."""

    expected: bool = False
    """improved only: a repetition the caller declared normal (a poll within its allowance):
    neither progress nor stuck."""

    failure: str | None = None
    """improved only: the failure the observation reports, with its noise taken out (see
    `pos_agent.monitor.failures`); equal strings are the same failure. None when it reports
    none or when unknown."""

    relative: bool = False
    """improved only: the action is a text command, which acts where it is given (`go west`,
    `take key`): repeated, it is the same act only where it shows the same things again."""

    def __post_init__(self) -> None:
        if not isinstance(self.world, WorldKeys) or not isinstance(self.focus, WorldKeys):
            for name in ("world", "focus"):
                if not isinstance(getattr(self, name), WorldKeys):
                    raise TypeError(
                        f"WindowStep.{name} must be a WorldKeys, "
                        f"got {type(getattr(self, name)).__name__}"
                    )
        if self.progress not in (0, 1):
            raise ValueError(f"WindowStep.progress must be 0 or 1, got {self.progress!r}")
        if self.novel is not None and (
            isinstance(self.novel, bool) or not isinstance(self.novel, int) or self.novel < 0
        ):
            raise ValueError(
                f"WindowStep.novel must be None or an integer >= 0, got {self.novel!r}"
            )
        # Only what needs converting is set again (bool or other int-like labels, gap ids that
        # are not frozensets yet).
        if type(self.progress) is not int:
            object.__setattr__(self, "progress", int(self.progress))
        if not isinstance(self.epistemic, frozenset):
            object.__setattr__(self, "epistemic", frozenset(self.epistemic))
        if not isinstance(self.achievement, frozenset):
            object.__setattr__(self, "achievement", frozenset(self.achievement))


def _check_unit_interval(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"HealthConfig.{name} must be a number in [0, 1], got {value!r}")


@dataclass(frozen=True, slots=True)
class HealthConfig:
    """Parameters of the health check; the defaults are the paper's Table 8."""

    window: int = 8
    """K: how many of the latest validated transitions form the window (at least 2)."""

    max_lag: int = 4
    """L: the largest lag searched for recurrence (at least 1)."""

    eps_w: float = 0.15
    """eps_W: two worlds with d_W at most this are the same for recurrence, static and drift."""

    eps_diag: float = 0.30
    """eps for the diagnostic progress label (Eq. 4); carried for callers, not used here."""

    theta_h: float = 0.25
    """theta_H: the window is trapped when health H is at most this."""

    theta_r: float = 0.75
    """theta_R: recurrence at least this (with lag > 1) diagnoses a cycle."""

    task: TaskKind = "execution"
    """Task family; breaks ties on the blocked gap kind ("diagnosis" -> epistemic). The
    spelling "diagnostic" (the paper's) is accepted and read as "diagnosis"."""

    diagnosis: Diagnosis = "paper"
    """"paper": Eq. 5-6 as published; "improved": the diagnosis of `health.improved`, which
    counts changed records instead of thresholding the whole-world Jaccard distance."""

    recent: int = 4
    """improved: how many of the latest transitions decide whether the window is trapped."""

    change_tolerance: int = 0
    """improved: two worlds whose key sets differ in at most this many keys are the same."""

    def __post_init__(self) -> None:
        for name, minimum in (
            ("window", 2),
            ("max_lag", 1),
            ("recent", 1),
            ("change_tolerance", 0),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(
                    f"HealthConfig.{name} must be an integer >= {minimum}, got {value!r}"
                )
        for name in ("eps_w", "eps_diag", "theta_h", "theta_r"):
            _check_unit_interval(name, getattr(self, name))
        if self.task == "diagnostic":
            object.__setattr__(self, "task", "diagnosis")  # the paper's spelling
        if self.task not in TASK_KINDS:
            raise ValueError(
                f"HealthConfig.task must be 'execution' or 'diagnosis', got {self.task!r}"
            )
        if self.diagnosis not in get_args(Diagnosis):
            raise ValueError(
                f"HealthConfig.diagnosis must be 'paper' or 'improved', got {self.diagnosis!r}"
            )


@dataclass(frozen=True, slots=True)
class HealthReport:
    """The health of one window and, when trapped, its diagnosis.

    The defaults are the report of a window with nothing to judge yet: full health, not trapped.
    """

    ready: bool
    """Enough steps to judge: the full window (paper), or `recent` + 1 steps (improved)."""

    persistence_e: float = 0.0
    """P_epistemic: share of the first step's epistemic gaps still open at every step [5a]."""

    persistence_a: float = 0.0
    """P_achievement: the same for achievement gaps [5a]."""

    stagnation: float = 0.0
    """S = 1 - mean progress label over the window [5a]."""

    recurrence: float = 0.0
    """R: the best fraction of same-lag focus pairs within eps_W, over lags 1..min(L, K-1) [5b]."""

    lag: int | None = None
    """k*: the smallest lag attaining R; None when R = 0."""

    health: float = 1.0
    """H = 1 - max_X [P_X * max(S, R)] [5c]."""

    trapped: bool = False
    """The report is ready and H <= theta_H."""

    pattern: TrapPattern | None = None
    """Trap pattern when trapped: "static", "cycle", "drift", or None (none or not trapped)."""

    blocked: GapKind | None = None
    """Blocked gap kind when trapped: "epistemic", "achievement", or None."""

    def to_dict(self) -> dict[str, float | int | bool | str | None]:
        """A plain JSON-able dict of every field, for traces."""
        return asdict(self)


def _persistence(gap_sets: Sequence[frozenset[str]]) -> float:
    """P_X: |intersection of all gap sets| / |first gap set|, 0 when the first set is empty."""
    first = gap_sets[0]
    if not first:
        return 0.0
    return len(first.intersection(*gap_sets[1:])) / len(first)


class _Closeness:
    """Decides `d_W(x, y) <= eps_W` for pairs of worlds while computing few Jaccard distances.

    Each exact d_J over 10,000-key sets costs a pass over a hash table, so the answer is first
    sought from bounds that cost nothing once a few distances are bracketed. Jaccard distance is
    a metric, so d(a,b) <= d(a,k) + d(k,b) and d(a,b) >= d(a,k) - d(k,b); and d(a,b) >= 1 -
    min/max of the set sizes. Only when the bounds leave the answer open is the next component
    computed exactly, and a pair whose three components are all known is decided by its exact
    d_W, so the answers equal comparing `world_distance` with eps_W for every pair (bounds are
    only trusted 1e-12 away from the limit, far beyond float rounding).
    """

    # Bounds are only trusted this far away from the limit; closer calls are computed exactly.
    _BOUND_MARGIN = 1e-12
    # Below this many lookups an exact d_W is cheaper than reasoning about bounds.
    _DIRECT_LOOKUPS = 2048

    def __init__(self, worlds: Sequence[WorldKeys], eps_w: float) -> None:
        self._limit = eps_w + _TOLERANCE
        self._worlds = worlds
        # Per component (entities, states, relations): the set objects seen so far (kept alive so
        # their ids stay unique) and a (lower, upper) bracket on d_J for pairs of them.
        self._nodes: list[dict[int, frozenset[str]]] = [{}, {}, {}]
        self._brackets: list[dict[tuple[int, int], tuple[float, float]]] = [{}, {}, {}]
        self._decided: dict[tuple[int, int], bool] = {}

    def close(self, i: int, j: int) -> bool:
        """Whether d_W(worlds[i], worlds[j]) <= eps_W (up to the shared tolerance)."""
        a, b = self._worlds[i], self._worlds[j]
        if a is b:
            return True
        pair = _pair_key(id(a), id(b))
        decided = self._decided.get(pair)
        if decided is None:
            decided = self._decide(a, b)
            self._decided[pair] = decided
        return decided

    def _decide(self, a: WorldKeys, b: WorldKeys) -> bool:
        sets_a = (a.entities, a.states, a.relations)
        sets_b = (b.entities, b.states, b.relations)
        if (
            sum(min(len(x), len(y)) for x, y in zip(sets_a, sets_b, strict=True))
            <= self._DIRECT_LOOKUPS
        ):
            return world_distance(a, b) <= self._limit
        brackets = [self._bracket(c, sets_a[c], sets_b[c]) for c in range(3)]
        verdict = self._verdict(brackets)
        while verdict is None:
            # The cheapest pass first: an intersection walks the smaller of the two sets.
            component = min(
                (c for c in range(3) if brackets[c][0] != brackets[c][1]),
                key=lambda c: min(len(sets_a[c]), len(sets_b[c])),
            )
            distance = jaccard_distance(sets_a[component], sets_b[component])
            brackets[component] = (distance, distance)
            verdict = self._verdict(brackets)
        for c in range(3):
            self._store(c, sets_a[c], sets_b[c], brackets[c])
        return verdict

    def _verdict(self, brackets: Sequence[tuple[float, float]]) -> bool | None:
        """The answer if the brackets settle it, else None (some component must be computed)."""
        if all(low == high for low, high in brackets):
            # Same expression as world_distance, so the decision matches it exactly.
            return (brackets[0][0] + brackets[1][0] + brackets[2][0]) / 3.0 <= self._limit
        if sum(high for _, high in brackets) / 3.0 <= self._limit - self._BOUND_MARGIN:
            return True
        if sum(low for low, _ in brackets) / 3.0 > self._limit + self._BOUND_MARGIN:
            return False
        return None

    def _store(
        self, component: int, x: frozenset[str], y: frozenset[str], bracket: tuple[float, float]
    ) -> None:
        if x is y:
            return
        nodes = self._nodes[component]
        nodes[id(x)] = x
        nodes[id(y)] = y
        self._brackets[component][_pair_key(id(x), id(y))] = bracket

    def _known(self, component: int, x: int, y: int) -> tuple[float, float] | None:
        if x == y:
            return (0.0, 0.0)
        return self._brackets[component].get(_pair_key(x, y))

    def _bracket(self, component: int, x: frozenset[str], y: frozenset[str]) -> tuple[float, float]:
        """(lower, upper) bounds on d_J(x, y) from what is already known; equal when exact."""
        if x is y or (not x and not y):
            return (0.0, 0.0)
        if not x or not y:
            return (1.0, 1.0)
        known = self._known(component, id(x), id(y))
        if known is not None and known[0] == known[1]:
            return known
        small, large = sorted((len(x), len(y)))
        low, high = known if known is not None else (0.0, 1.0)
        low = max(low, 1.0 - small / large)
        for via in self._nodes[component]:
            to_x = self._known(component, id(x), via)
            to_y = self._known(component, via, id(y))
            if to_x is not None and to_y is not None:
                low = max(low, to_x[0] - to_y[1], to_y[0] - to_x[1])
                high = min(high, to_x[1] + to_y[1])
        return (low, high)


def _pair_key(x: int, y: int) -> tuple[int, int]:
    return (x, y) if x <= y else (y, x)


def _recurs(closeness: _Closeness, window: Sequence[WindowStep], i: int, j: int) -> bool:
    """The focus worlds of steps i and j are the same world: within eps_W and not empty. Two
    empty projections say nothing about the agent revisiting a state."""
    if window[i].focus.empty or window[j].focus.empty:
        return False
    return closeness.close(i, j)


def _recurrence(
    closeness: _Closeness, window: Sequence[WindowStep], config: HealthConfig
) -> tuple[float, int | None]:
    """R and k* over lags 1..min(L, size - 1); the smallest lag wins ties, None when R = 0."""
    size = len(window)
    best_fraction = 0.0
    best_lag: int | None = None
    for lag in range(1, min(config.max_lag, size - 1) + 1):
        pairs = size - lag
        close = sum(1 for tau in range(lag, size) if _recurs(closeness, window, tau, tau - lag))
        # Equal rationals divide to equal floats, so ties are exact and ">" keeps the smaller lag.
        fraction = close / pairs
        if fraction > best_fraction:
            best_fraction, best_lag = fraction, lag
    return best_fraction, best_lag


def _blocked_kind(
    latest: WindowStep, persistence_e: float, persistence_a: float, task: TaskKind
) -> GapKind | None:
    if latest.epistemic and not latest.achievement:
        return "epistemic"
    if latest.achievement and not latest.epistemic:
        return "achievement"
    if not latest.epistemic and not latest.achievement:
        return None
    if persistence_e > persistence_a:
        return "epistemic"
    if persistence_a > persistence_e:
        return "achievement"
    return "epistemic" if task == "diagnosis" else "achievement"


def judged_report(
    config: HealthConfig,
    persisting: Sequence[WindowStep],
    ready: bool,
    stagnation: float,
    recurrence: float,
    lag: int | None,
    *,
    pressure: float,
    pattern: Callable[[], TrapPattern | None],
) -> HealthReport:
    """The report of a judged window: P_X over the `persisting` steps (the last is the latest),
    H = 1 - max(P_E, P_A) * pressure clamped to [0, 1] (pressure is max(S, R) in the paper's
    Eq. 5c, S in the improved diagnosis); when trapped, the pattern (asked only then) and the
    blocked gap kind."""
    persistence_e = _persistence([step.epistemic for step in persisting])
    persistence_a = _persistence([step.achievement for step in persisting])
    health = min(1.0, max(0.0, 1.0 - max(persistence_e, persistence_a) * pressure))
    trapped = ready and _at_most(health, config.theta_h)
    blocked = None
    if trapped:
        blocked = _blocked_kind(persisting[-1], persistence_e, persistence_a, config.task)
    return HealthReport(
        ready=ready,
        persistence_e=persistence_e,
        persistence_a=persistence_a,
        stagnation=stagnation,
        recurrence=recurrence,
        lag=lag,
        health=health,
        trapped=trapped,
        pattern=pattern() if trapped else None,
        blocked=blocked,
    )


_DEFAULT_CONFIG = HealthConfig()


def assess_paper(
    steps: Sequence[WindowStep], config: HealthConfig = _DEFAULT_CONFIG
) -> HealthReport:
    """Health (Eq. 5) of the last `config.window` steps and, when trapped, the diagnosis (Eq. 6),
    as published (the "paper" diagnosis; `health.assess.assess_window` dispatches on it).

    Fewer steps than the window are assessed as they are but are never `ready` nor `trapped`.
    """
    window = list(islice(steps, max(0, len(steps) - config.window), None))
    size = len(window)
    ready = len(steps) >= config.window
    if size == 0:
        return HealthReport(ready=ready)

    stagnation = 1.0 - sum(step.progress for step in window) / size
    # Focus worlds first, then the last two full worlds (static check) share one oracle.
    worlds = [step.focus for step in window] + [step.world for step in window[-2:]]
    closeness = _Closeness(worlds, config.eps_w)
    recurrence, lag = _recurrence(closeness, window, config)

    def pattern() -> TrapPattern | None:
        if closeness.close(len(worlds) - 1, len(worlds) - 2):
            return "static"
        if lag is not None and lag > 1 and _at_least(recurrence, config.theta_r):
            return "cycle"
        if _recurs(closeness, window, size - 1, size - 2):
            return "drift"
        return None

    pressure = max(stagnation, recurrence)
    return judged_report(
        config, window, ready, stagnation, recurrence, lag, pressure=pressure, pattern=pattern
    )
