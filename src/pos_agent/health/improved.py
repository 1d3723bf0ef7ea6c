"""The `improved` diagnosis: belief health that stays right when beliefs are large.

Eq. 6 tests "static" as `d_W(W_t, W_t-1) <= eps_W` on the whole-world Jaccard distance. On a
belief of about 75 records one step moves that distance by 0.005-0.025, far below eps_W = 0.15,
so every alarm is labelled static and cycle and drift recovery are never chosen. Eq. 5 also
needs 6 of 8 transitions without progress before it fires, which is slow on plain repeats.

This mode keeps the report of Eq. 5 (P, S, R, H over the same kind of window) but reads each
transition on its own terms:

- **Same world** means the record-key sets differ in at most `change_tolerance` keys: a count
  of changed records, which does not shrink as the belief grows.
- Each transition is **productive** when its progress label is 1 and it does not merely return
  to a world held within the last `max_lag` steps (undoing a detour is not progress), or when it
  brought first-seen entities into the belief (exploration).
- Each unproductive transition gets a **kind**: static (the world did not change), cycle (it
  returned to the world of 2..L steps ago), drift (the world changed outside the focus on the
  active gap) or unexplained (the focus moved somewhere that is neither new nor a return).
- **Health** is judged over the last `recent` transitions: S = share of static, cycle and drift
  ones, R = share of returns, P_X = gap persistence over those steps, H = 1 - max_X P_X * S.
  An unexplained transition is not counted as stuck: nothing in it shows the agent repeating
  itself or working beside its goal, and counting it raised false alarms on productive runs
  (with model-free keys, every plan step that shows nothing new looks like one).
- The **pattern** is the kind held by most unproductive transitions in the window's trailing
  unproductive run, not only by the last one; a tie goes to the latest of the tied kinds.

Everything here is a pure function of the given steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pos_agent.health.distance import WorldKeys
from pos_agent.health.window import (
    HealthConfig,
    HealthReport,
    TrapPattern,
    WindowStep,
    judged_report,
)

StepKind = Literal["productive", "static", "cycle", "drift", "unexplained"]
_STUCK = ("static", "cycle", "drift")


@dataclass(frozen=True, slots=True)
class TransitionReading:
    """How the improved diagnosis reads one transition of the window."""

    kind: StepKind
    """`productive`, or why it was not: `static`, `cycle`, `drift` or `unexplained`."""

    returns: tuple[int, ...]
    """Every lag 1..L at which the world is the same as it was (1 = unchanged), ascending."""

    novel: int
    """First-seen entity keys this transition brought (within the window when not given)."""


def changed_keys(a: WorldKeys, b: WorldKeys) -> int:
    """How many record keys differ between two worlds (the size of the symmetric differences)."""
    if a is b:
        return 0
    return (
        _difference(a.entities, b.entities)
        + _difference(a.states, b.states)
        + _difference(a.relations, b.relations)
    )


def _difference(a: frozenset[str], b: frozenset[str]) -> int:
    if a is b or a == b:
        return 0
    return len(a ^ b)


def _nonempty(keys: WorldKeys) -> bool:
    return bool(keys.entities or keys.states or keys.relations)


def _same(a: WorldKeys, b: WorldKeys, tolerance: int) -> bool:
    if a is b:
        return True
    if tolerance == 0:
        # Frozensets cache their hash, so unequal worlds are mostly told apart without a scan.
        return (
            hash(a.states) == hash(b.states)
            and hash(a.relations) == hash(b.relations)
            and hash(a.entities) == hash(b.entities)
            and a.states == b.states
            and a.relations == b.relations
            and a.entities == b.entities
        )
    return changed_keys(a, b) <= tolerance


class _Reader:
    """Reads the transitions of one window on demand: deciding `trapped` needs only the last
    `recent` of them, the pattern only the trailing stuck run."""

    def __init__(self, steps: Sequence[WindowStep], config: HealthConfig) -> None:
        self.steps = steps
        self.max_lag = config.max_lag
        self.tolerance = config.change_tolerance
        self._readings: dict[int, TransitionReading] = {}
        self._seen_before: list[frozenset[str]] | None = None

    def __call__(self, i: int) -> TransitionReading:
        """The reading of the transition into step i (i >= 1)."""
        reading = self._readings.get(i)
        if reading is None:
            reading = self._read(i)
            self._readings[i] = reading
        return reading

    def _novel(self, i: int) -> int:
        step = self.steps[i]
        if step.novel is not None:
            return step.novel
        if self._seen_before is None:
            seen: set[str] = set()
            self._seen_before = []
            for earlier in self.steps:
                self._seen_before.append(frozenset(seen))
                seen |= earlier.world.entities
        return len(step.world.entities - self._seen_before[i])

    def _read(self, i: int) -> TransitionReading:
        steps, tolerance = self.steps, self.tolerance
        step = steps[i]
        world = step.world
        returns: tuple[int, ...] = ()
        for lag in range(1, (self.max_lag if self.max_lag < i else i) + 1):
            if _same(world, steps[i - lag].world, tolerance):
                returns += (lag,)
        novel = self._novel(i)
        kind: StepKind
        if novel > 0 or (step.progress == 1 and not returns):
            kind = "productive"
        elif returns and returns[0] == 1:
            kind = "static"
        elif returns:
            kind = "cycle"
        elif _nonempty(step.focus) and _same(step.focus, steps[i - 1].focus, tolerance):
            # An empty projection says nothing about what the change touched (DESIGN §2).
            kind = "drift"
        else:
            kind = "unexplained"
        return TransitionReading(kind, returns, novel)


def read_transitions(
    steps: Sequence[WindowStep], config: HealthConfig
) -> list[TransitionReading | None]:
    """One reading per step; None for the first step, which has no previous world here."""
    reader = _Reader(steps, config)
    return [None, *(reader(i) for i in range(1, len(steps)))]


def _pattern(reader: _Reader, last: int) -> TrapPattern | None:
    """The kind of most transitions in the trailing unproductive run (latest kind wins ties)."""
    run: list[TrapPattern] = []
    for i in range(last, 0, -1):
        kind = reader(i).kind
        if kind == "productive":
            break
        if kind != "unexplained":
            run.append(kind)
    if not run:
        return None
    votes = Counter(run)
    best = max(votes.values())
    # `run` is latest-first, so the first tied kind met is the latest one.
    return next(kind for kind in run if votes[kind] == best)


def _period(returns: Sequence[tuple[int, ...]]) -> int | None:
    """The lag most returns share (the loop's period); the smallest on ties, None if none."""
    counts: dict[int, int] = {}
    for lags in returns:
        for lag in lags:
            counts[lag] = counts.get(lag, 0) + 1
    if not counts:
        return None
    best = max(counts.values())
    return min(lag for lag, count in counts.items() if count == best)


def assess_improved(steps: Sequence[WindowStep], config: HealthConfig) -> HealthReport:
    """The improved health and diagnosis of the last `config.window` steps (see module doc)."""
    window = list(steps[-config.window :]) if steps else []
    recent = min(config.recent, config.window - 1)
    ready = len(steps) >= recent + 1
    reader = _Reader(window, config)
    judged = [reader(i) for i in range(max(1, len(window) - recent), len(window))]
    if not judged:
        return HealthReport(ready=False)
    stagnation = sum(r.kind in _STUCK for r in judged) / len(judged)
    stuck_returns = [r.returns for r in judged if r.returns and r.kind != "productive"]
    recurrence = len(stuck_returns) / len(judged)
    lag = _period(stuck_returns)
    # Persistence over the states after each judged transition, as Eq. 5a reads the window.
    tail = window[-len(judged) :]
    return judged_report(
        config,
        tail,
        ready,
        stagnation,
        recurrence,
        lag,
        pressure=stagnation,
        pattern=lambda: _pattern(reader, len(window) - 1),
    )
