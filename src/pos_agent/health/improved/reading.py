"""How the improved diagnosis reads each transition of a window: productive, exploring,
waiting, or why it was none (static, cycle, drift, unexplained), with the lags its world
returns at and the periods its call repeats at (see the package's doc)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pos_agent.health.distance import WorldKeys
from pos_agent.health.improved.calls import (
    MAX_PERIOD,
    action_repeats,
    call_returns,
    cycles,
    elsewhere,
    given_progress,
    observation_returns,
)
from pos_agent.health.window import HealthConfig, WindowStep

StepKind = Literal["productive", "exploring", "waiting", "static", "cycle", "drift", "unexplained"]
STUCK = ("static", "cycle", "drift")
NOT_STUCK = ("productive", "exploring", "waiting")
REREADABLE = ("productive", "exploring", "unexplained")
"""Readings that a loop's completed second round may re-read, in hindsight, as a cycle."""


@dataclass(frozen=True, slots=True)
class TransitionReading:
    """How the improved diagnosis reads one transition of the window."""

    kind: StepKind
    """`productive`; `exploring` (no progress, but first-seen things: not stuck); `waiting` (a
    repetition the caller declared normal); or why it was none: `static`, `cycle`, `drift` or
    `unexplained` (nothing repeated and nothing new: not counted as stuck)."""

    returns: tuple[int, ...]
    """Every lag 1..L at which the world is the same as it was (1 = unchanged), ascending."""

    novel: int
    """First-seen entity keys this transition brought (within the window when not given)."""

    repeats: tuple[int, ...] = ()
    """Periods 1..5 at which the action repeats (see `WindowStep.action`); empty when the
    actions are unknown or do not repeat."""


def changed_keys(a: WorldKeys, b: WorldKeys) -> int:
    """How many record keys differ between two worlds (the size of the symmetric differences)."""
    if a is b:
        return 0
    return sum(_difference(mine, theirs) for mine, theirs in a.by_kind(b))


def _difference(a: frozenset[str], b: frozenset[str]) -> int:
    if a is b or a == b:
        return 0
    return len(a ^ b)


def nonempty(keys: WorldKeys) -> bool:
    return bool(keys.entities or keys.states or keys.relations)


def same_world(a: WorldKeys, b: WorldKeys, tolerance: int) -> bool:
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


class TransitionReader:
    """Reads the transitions of one window on demand: deciding `trapped` needs only the last
    `recent` of them, the pattern only the trailing stuck run."""

    def __init__(self, steps: Sequence[WindowStep], config: HealthConfig) -> None:
        self.steps = steps
        self.max_lag = config.max_lag
        self.tolerance = config.change_tolerance
        self._readings: dict[int, TransitionReading] = {}
        self._seen_before: list[frozenset[str]] | None = None
        self._marked: frozenset[int] | None = None
        self._spanned: frozenset[int] = frozenset()
        self._call_reach = max(self.max_lag, MAX_PERIOD)
        self._world_numbers: list[int] | None = None

    def _worlds(self) -> list[int]:
        """Per step, a number that the steps of the same world (the same keys, as `same_world`
        without tolerance says) share and no other step has."""
        numbers = self._world_numbers
        if numbers is None:
            seen: dict[tuple[frozenset[str], frozenset[str], frozenset[str]], int] = {}
            numbers = self._world_numbers = [
                seen.setdefault((w.entities, w.states, w.relations), len(seen))
                for w in [step.world for step in self.steps]
            ]
        return numbers

    def __call__(self, i: int) -> TransitionReading:
        """The reading of the transition into step i (i >= 1)."""
        reading = self._readings.get(i)
        if reading is None:
            reading = self._read(i)
            marked = self._marked if self._marked is not None else self._same_failure()
            if reading.kind != "drift" and i in marked:
                reading = replace(reading, kind="drift")
            elif (reading.kind == "unexplained" and self._opens_round(i)) or (
                reading.kind in REREADABLE and self._came_round_again(i)
            ):
                reading = replace(reading, kind="cycle")
            self._readings[i] = reading
        return reading

    def _same_failure(self) -> frozenset[int]:
        """The transitions of varied attempts that failed as before. A *varied attempt* is
        the stretch from a step whose output reported a failure to the next step reporting the
        same failure, at least two steps on, when some call made after the last progress given
        in it was never made before, some step between its ends reported no failure (the
        attempt itself: an edit, a setting, a restart), and its last step brought nothing
        (nothing first-seen, no declared poll).
        Once two
        consecutive stretches of one failure are varied attempts, their transitions that
        brought nothing are drift: the calls keep changing, the outcome does not. (One stretch is not enough: the first
        round of a cycle of calls also starts with calls never made before.)"""
        marked = self._marked
        if marked is not None:
            return marked
        steps = self.steps
        failing = [i for i, step in enumerate(steps) if step.failure is not None]
        if len(failing) < 3:  # two stretches need three failing steps
            self._marked = frozenset()
            return self._marked
        found: set[int] = set()
        spanned: set[int] = set()
        last: dict[str, int] = {}
        varied: dict[str, int] = {}
        """Per failure: where its latest varied attempt started."""
        for i in failing:
            failure = steps[i].failure
            assert failure is not None
            j = last.get(failure)
            last[failure] = i
            if j is None:
                continue
            # The attempt is what came after the last progress given in the stretch (what was
            # read to decide on it is not part of it); it holds a call never made before, and
            # something was done before the failing step (the same failure on the very next
            # step is what is shown, not the outcome of an attempt: distinct files that log
            # the same errors, read one after another). Between the two reports, some step
            # reported no failure: an act that went through. Outputs that all report failures,
            # one of them coming back a few steps on, are failures being read (log after log,
            # each with one of a few errors), not attempts.
            after = max((k for k in range(j + 1, i) if given_progress(steps[k])), default=j)
            attempt = (
                i - j >= 2
                and self._unproductive(i)
                and any(not steps[k].action_seen for k in range(after + 1, i + 1))
                and any(steps[k].failure is None for k in range(j + 1, i))
            )
            if not attempt:
                varied.pop(failure, None)
                continue
            start = varied.get(failure)
            varied[failure] = j + 1
            if start is not None:
                spanned.update(range(start, i + 1))
                found.update(k for k in range(start, i + 1) if self._unproductive(k))
        self._marked = frozenset(found)
        self._spanned = frozenset(spanned)
        return self._marked

    def _opens_round(self, i: int) -> bool:
        """The call into step i began a loop's next round: the call after it repeats, with
        it, the two calls p = 2..5 steps earlier, and brought nothing. Known in hindsight: when
        step i is the latest, or the next call breaks off, it stays as read. (A round may
        hold a call made there for the first time, e.g. the last call of the first round, so
        `call_returns` alone cannot tell a second round's first step from a detour.)"""
        steps = self.steps
        if i + 1 >= len(steps) or steps[i].action is None:
            return False
        following = steps[i + 1]
        if following.expected or given_progress(following) or self._novel(i + 1) > 0:
            return False
        return any(
            period > 1
            and not elsewhere(steps, i + 1, i + 1 - period)
            and not elsewhere(steps, i, i - period)
            for period in action_repeats(steps, i + 1)
        )

    def _came_round_again(self, i: int) -> bool:
        """Step i lies inside a loop's first round, after its first call, and that whole
        round has come back: the p = 2..5 calls from the round's start are repeated by the p
        calls after them, each of which brought nothing (stuck). The transition into step i is
        then the same call after the same call as one of the second round's, which showed
        nothing new: what step i brought was the first look the loop keeps taking. Known in
        hindsight, once the second round is complete; the round's first call is not re-read
        (it came from outside the loop). A step the caller labelled progress, or a declared
        poll, keeps its reading."""
        steps = self.steps
        step = steps[i]
        if step.action is None or step.expected or given_progress(step):
            return False
        size = len(steps)
        for period in range(2, MAX_PERIOD + 1):
            if i + period >= size or steps[i + period].action != step.action:
                continue
            # The round starts 1..period-1 steps before i; its second round ends period-1
            # steps after the first round's end.
            for start in range(max(0, i - period + 1), i):
                end = start + 2 * period - 1
                if end >= size:
                    break
                if self._round_repeats(start, period) and all(
                    self(k).kind in STUCK for k in range(start + period, end + 1)
                ):
                    return True
        return False

    def _round_repeats(self, start: int, period: int) -> bool:
        """The calls of steps start..start+period-1, consecutive ones different, are made
        again, in order, by the next `period` steps (a text command: showing the same things
        as then)."""
        steps = self.steps
        for k in range(start, start + period):
            action = steps[k].action
            if action is None or (k > start and steps[k - 1].action == action):
                return False
            if steps[k + period].action != action or elsewhere(steps, k + period, k):
                return False
        return True

    def within_attempts(self, i: int) -> bool:
        """Step i lies inside varied attempts that failed as before (whatever it brought)."""
        self._same_failure()
        return i in self._spanned

    def _unproductive(self, k: int) -> bool:
        step = self.steps[k]
        if step.expected or given_progress(step):
            return False
        return self._novel(k) == 0

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
        returns: tuple[int, ...] = ()
        # With the calls known, returns are looked for as far back as call loops (5 steps).
        reach = self.max_lag if step.action is None else self._call_reach
        lags = range(1, (reach if reach < i else i) + 1)
        if tolerance == 0:
            worlds = self._worlds()
            now = worlds[i]
            for lag in lags:
                if worlds[i - lag] == now:
                    returns += (lag,)
        else:
            world = step.world
            for lag in lags:
                if same_world(world, steps[i - lag].world, tolerance):
                    returns += (lag,)
        repeats = action_repeats(steps, i)
        novel = self._novel(i)
        if repeats and step.relative and novel == 0:
            # A text command acts where it is given: the same command that showed other known
            # things than at its earlier use (`go north` twice, into two known rooms) went
            # somewhere else; retracing a path is no loop. Numbers are never entities.
            repeats = tuple(p for p in repeats if not elsewhere(steps, i, i - p))
        kind: StepKind
        if step.expected:
            kind = "waiting"
        elif step.labelled:
            # The caller's label wins over novelty both ways. A label of progress is trusted
            # even when nothing visible changed (a poll the caller knows advanced), but not on
            # a step that closes a loop (back to a world left 2..L steps ago, or the calls of
            # 2..5 steps ago again): a loop gives back whatever it gained.
            closes_loop = (bool(returns) and returns[0] != 1) or (
                cycles(repeats) and 1 not in repeats
            )
            if step.progress == 1 and not closes_loop:
                kind = "productive"
            elif novel > 0 and not (1 in repeats and step.observation is None):
                # First-seen things are exploration, not a trap, even when the label says no
                # progress; but without a belief, the same call's first-seen words under a
                # label of 0 are taken for noise the volatile rules did not know.
                kind = "exploring"
            else:
                kind = self._stuck_kind(i, returns, repeats, novel)
        elif novel > 0 or (step.progress == 1 and not returns):
            kind = "productive"
        else:
            kind = self._stuck_kind(i, returns, repeats, novel)
        return TransitionReading(kind, returns, novel, repeats)

    def _stuck_kind(
        self, i: int, returns: tuple[int, ...], repeats: tuple[int, ...], novel: int
    ) -> StepKind:
        """Why a transition without progress is not progress: what repeated, or what changed."""
        steps, tolerance = self.steps, self.tolerance
        step, previous = steps[i], steps[i - 1]
        # A call never made before whose outcome is one already had is a varied attempt at
        # the same thing (drift); calls made before coming back to known outcomes go round.
        varied = step.action is not None and not step.action_seen
        if returns and returns[0] == 1:
            # The world did not change. Calls going round a loop are a cycle the world does
            # not show. With a belief, an observation that changed shows the actions taking
            # effect on things the belief does not track: drift, unless that output was seen
            # before after calls made before (going back over known ground: a cycle).
            if cycles(repeats) and 1 not in repeats:
                return "cycle"
            if 1 in repeats:
                return "static"
            if (
                step.observation is not None
                and previous.observation is not None
                and step.observation != previous.observation
            ):
                seen = step.observation_seen or observation_returns(steps, i, self.max_lag)
                return "cycle" if seen and not varied else "drift"
            return "drift" if varied else "static"
        if 1 in repeats and not (returns and step.observation is not None):
            # The same call again, and nothing new came of it (no progress, no first-seen
            # thing): whatever else its output shows (a number that moved), it is a repeat.
            # Only a belief's world coming back to where it was 2..L steps ago (a toggle) says
            # cycle instead; model-free, the world is the output text, whose noise can repeat.
            return "static"
        if returns:
            return "drift" if varied else "cycle"
        if cycles(repeats) and novel == 0:
            return "cycle"
        if nonempty(step.focus) and same_world(step.focus, previous.focus, tolerance):
            # An empty projection says nothing about what the change touched.
            return "drift"
        if novel == 0 and call_returns(steps, i):
            # The call of 2..5 steps ago again, every call since then one made before and
            # nothing new: going round known calls (the first step of a loop's second round).
            return "cycle"
        return "unexplained"


def read_transitions(
    steps: Sequence[WindowStep], config: HealthConfig
) -> list[TransitionReading | None]:
    """One reading per step; None for the first step, which has no previous world here."""
    reader = TransitionReader(steps, config)
    return [None, *(reader(i) for i in range(1, len(steps)))]


def read_latest(steps: Sequence[WindowStep], config: HealthConfig) -> TransitionReading | None:
    """The reading of the last transition of the window (None with fewer than two steps)."""
    window = list(steps[-config.window :]) if steps else []
    if len(window) < 2:
        return None
    return TransitionReader(window, config)(len(window) - 1)
