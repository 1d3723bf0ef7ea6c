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
- **Varied attempts that fail the same way** (`WindowStep.failure`, from
  `pos_agent.monitor.failures`): two stretches in a row ending in the same failure, each with a
  call never made before, make their transitions that brought nothing drift (a semantic loop).
- A known call coming back 2..5 steps later, after calls all made before, with nothing new, is
  a cycle (the first step of a loop's second round). In hindsight, so is a step read as
  unexplained when the call after it repeats, with it, the two calls p = 2..5 steps earlier
  (a round that held a call made there for the first time). And once a whole round of
  p = 2..5 calls has come back and its second round brought nothing, the first round's steps
  after its first call are a cycle too (each is the same call after the same call as a step
  that brought nothing), whatever they brought then.
- **Health** is judged over the last `recent` transitions: S = share of static, cycle and drift
  ones after the latest productive transition (progress ends what came before it), R = share
  of returns, P_X = gap persistence over those steps, H = 1 - max_X P_X * S.
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
from dataclasses import dataclass, replace
from typing import Literal

from pos_agent.health.distance import WorldKeys
from pos_agent.health.window import (
    HealthConfig,
    HealthReport,
    TrapPattern,
    WindowStep,
    judged_report,
)

StepKind = Literal["productive", "exploring", "waiting", "static", "cycle", "drift", "unexplained"]
_STUCK = ("static", "cycle", "drift")
_NOT_STUCK = ("productive", "exploring", "waiting")
_REREADABLE = ("productive", "exploring", "unexplained")
"""Readings that a loop's completed second round may re-read, in hindsight, as a cycle."""
MAX_PERIOD = 5
"""The longest repeating call sequence read from the actions (Gemini CLI looks for 1-5)."""


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
        self._marked: frozenset[int] | None = None
        self._spanned: frozenset[int] = frozenset()
        self._call_reach = max(self.max_lag, MAX_PERIOD)
        self._world_numbers: list[int] | None = None

    def _worlds(self) -> list[int]:
        """Per step, a number that the steps of the same world (the same keys, as `_same`
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
                reading.kind in _REREADABLE and self._came_round_again(i)
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
            after = max((k for k in range(j + 1, i) if _given_progress(steps[k])), default=j)
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
        `_call_returns` alone cannot tell a second round's first step from a detour.)"""
        steps = self.steps
        if i + 1 >= len(steps) or steps[i].action is None:
            return False
        following = steps[i + 1]
        if following.expected or _given_progress(following) or self._novel(i + 1) > 0:
            return False
        return any(
            period > 1
            and not _elsewhere(steps, i + 1, i + 1 - period)
            and not _elsewhere(steps, i, i - period)
            for period in _action_repeats(steps, i + 1)
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
        if step.action is None or step.expected or _given_progress(step):
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
                    self(k).kind in _STUCK for k in range(start + period, end + 1)
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
            if steps[k + period].action != action or _elsewhere(steps, k + period, k):
                return False
        return True

    def within_attempts(self, i: int) -> bool:
        """Step i lies inside varied attempts that failed as before (whatever it brought)."""
        self._same_failure()
        return i in self._spanned

    def _unproductive(self, k: int) -> bool:
        step = self.steps[k]
        if step.expected or _given_progress(step):
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
                if _same(world, steps[i - lag].world, tolerance):
                    returns += (lag,)
        repeats = _action_repeats(steps, i)
        novel = self._novel(i)
        if repeats and step.relative and novel == 0:
            # A text command acts where it is given: the same command that showed other known
            # things than at its earlier use (`go north` twice, into two known rooms) went
            # somewhere else; retracing a path is no loop. Numbers are never entities.
            repeats = tuple(p for p in repeats if not _elsewhere(steps, i, i - p))
        kind: StepKind
        if step.expected:
            kind = "waiting"
        elif step.labelled:
            # The caller's label wins over novelty both ways. A label of progress is trusted
            # even when nothing visible changed (a poll the caller knows advanced), but not on
            # a step that closes a loop (back to a world left 2..L steps ago, or the calls of
            # 2..5 steps ago again): a loop gives back whatever it gained.
            closes_loop = (bool(returns) and returns[0] != 1) or (
                _cycles(repeats) and 1 not in repeats
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
            if _cycles(repeats) and 1 not in repeats:
                return "cycle"
            if 1 in repeats:
                return "static"
            if (
                step.observation is not None
                and previous.observation is not None
                and step.observation != previous.observation
            ):
                seen = step.observation_seen or _observation_returns(steps, i, self.max_lag)
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
        if _cycles(repeats) and novel == 0:
            return "cycle"
        if _nonempty(step.focus) and _same(step.focus, previous.focus, tolerance):
            # An empty projection says nothing about what the change touched (DESIGN §2).
            return "drift"
        if novel == 0 and _call_returns(steps, i):
            # The call of 2..5 steps ago again, every call since then one made before and
            # nothing new: going round known calls (the first step of a loop's second round).
            return "cycle"
        return "unexplained"


def _call_returns(steps: Sequence[WindowStep], i: int) -> bool:
    """The call into step i is the call of p = 2..MAX_PERIOD steps earlier, not the previous
    one, and every call since that one was made before in the episode (a text command: and
    it showed the same things as then)."""
    action = steps[i].action
    if action is None or steps[i - 1].action == action:
        return False
    for period in range(2, min(MAX_PERIOD, i) + 1):
        if not steps[i - period + 1].action_seen:
            return False
        if steps[i - period].action == action:
            return steps[i].action_seen and not _elsewhere(steps, i, i - period)
    return False


def _elsewhere(steps: Sequence[WindowStep], i: int, j: int) -> bool:
    """Step i's text command showed other things than at step j (it acted somewhere else)."""
    step = steps[i]
    return step.relative and step.world.entities != steps[j].world.entities


def _given_progress(step: WindowStep) -> bool:
    return step.labelled and step.progress == 1


def _observation_returns(steps: Sequence[WindowStep], i: int, max_lag: int) -> bool:
    observation = steps[i].observation
    lags = range(2, min(max(max_lag, MAX_PERIOD), i) + 1)
    return any(steps[i - lag].observation == observation for lag in lags)


def _loop_lags(reading: TransitionReading) -> tuple[int, ...]:
    """The lags a stuck transition repeats at: for a cycle, its world's returns to 2..L steps
    ago, else the periods of its calls; otherwise its returns (1: unchanged) or call repeats."""
    if reading.kind == "cycle":
        # A world that did not change at all says nothing of the loop's period; its calls do.
        returns = reading.returns
        world = returns if returns and returns[0] != 1 else ()
        return world or tuple(period for period in reading.repeats if period > 1)
    return reading.returns or reading.repeats


def _cycles(repeats: tuple[int, ...]) -> bool:
    return any(period > 1 for period in repeats)


def _action_repeats(steps: Sequence[WindowStep], i: int) -> tuple[int, ...]:
    """Periods 1..MAX_PERIOD at which the call into step i repeats: period 1 when it is the
    previous call again; p >= 2 when it and the call before it repeat the two calls p steps
    earlier and differ from each other (an A/B alternation, a cycle of 3-5 calls)."""
    action = steps[i].action
    if action is None:
        return ()
    found: tuple[int, ...] = ()
    if steps[i - 1].action == action:
        found += (1,)
    previous = steps[i - 1].action
    if previous is None or previous == action:
        return found
    for period in range(2, min(MAX_PERIOD, i - 1) + 1):
        if steps[i - period].action == action and steps[i - 1 - period].action == previous:
            found += (period,)
    return found


def read_transitions(
    steps: Sequence[WindowStep], config: HealthConfig
) -> list[TransitionReading | None]:
    """One reading per step; None for the first step, which has no previous world here."""
    reader = _Reader(steps, config)
    return [None, *(reader(i) for i in range(1, len(steps)))]


def read_latest(steps: Sequence[WindowStep], config: HealthConfig) -> TransitionReading | None:
    """The reading of the last transition of the window (None with fewer than two steps)."""
    window = list(steps[-config.window :]) if steps else []
    if len(window) < 2:
        return None
    return _Reader(window, config)(len(window) - 1)


def _pattern(reader: _Reader, last: int) -> TrapPattern | None:
    """The kind of most transitions in the trailing unproductive run (latest kind wins ties)."""
    run: list[TrapPattern] = []
    for i in range(last, 0, -1):
        kind = reader(i).kind
        if kind in _NOT_STUCK:
            break
        if kind == "static" or kind == "cycle" or kind == "drift":
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
    return assess_and_read(steps, config)[0]


def assess_and_read(
    steps: Sequence[WindowStep], config: HealthConfig
) -> tuple[HealthReport, TransitionReading | None]:
    """`assess_improved`, and the reading of the window's last transition (None with fewer
    than two steps), from one pass over the window."""
    window = list(steps[-config.window :]) if steps else []
    recent = min(config.recent, config.window - 1)
    ready = len(steps) >= recent + 1
    reader = _Reader(window, config)
    first = max(1, len(window) - recent)
    judged = [reader(i) for i in range(first, len(window))]
    if not judged:
        return HealthReport(ready=False), None
    # Progress ends what came before it: stuck transitions older than the latest productive
    # one are not counted (an agent that escaped and then repeats one call is not trapped again
    # on the strength of the loop it left). A step inside varied attempts that keep failing
    # the same way is no escape, whatever it showed.
    last_productive = next(
        (
            k
            for k in range(len(judged) - 1, -1, -1)
            if judged[k].kind == "productive" and not reader.within_attempts(first + k)
        ),
        -1,
    )
    stagnation = len([r for r in judged[last_productive + 1 :] if r.kind in _STUCK]) / len(judged)
    stuck_returns = [lags for r in judged if r.kind in _STUCK and (lags := _loop_lags(r))]
    recurrence = len(stuck_returns) / len(judged)
    lag = _period(stuck_returns)
    # Persistence over the states after each judged transition, as Eq. 5a reads the window.
    tail = window[-len(judged) :]
    report = judged_report(
        config,
        tail,
        ready,
        stagnation,
        recurrence,
        lag,
        pressure=stagnation,
        pattern=lambda: _pattern(reader, len(window) - 1),
    )
    if report.trapped and report.pattern is None:
        # The latest transition made progress or explored: the agent is out, whatever the
        # earlier steps of the window say, and there is no pattern to name.
        report = replace(report, trapped=False, blocked=None)
    return report, judged[-1]
