"""What the calls into a window's steps repeat: the same call again, a round of 2..5 calls
coming back, a known call returning after known calls; and whether a step's text command
acted somewhere else than before. Pure functions of the steps."""

from __future__ import annotations

from collections.abc import Sequence

from pos_agent.health.window import WindowStep

MAX_PERIOD = 5
"""The longest repeating call sequence read from the actions (Gemini CLI looks for 1-5)."""


def call_returns(steps: Sequence[WindowStep], i: int) -> bool:
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
            return steps[i].action_seen and not elsewhere(steps, i, i - period)
    return False


def elsewhere(steps: Sequence[WindowStep], i: int, j: int) -> bool:
    """Step i's text command showed other things than at step j (it acted somewhere else)."""
    step = steps[i]
    return step.relative and step.world.entities != steps[j].world.entities


def given_progress(step: WindowStep) -> bool:
    return step.labelled and step.progress == 1


def observation_returns(steps: Sequence[WindowStep], i: int, max_lag: int) -> bool:
    observation = steps[i].observation
    lags = range(2, min(max(max_lag, MAX_PERIOD), i) + 1)
    return any(steps[i - lag].observation == observation for lag in lags)


def cycles(repeats: tuple[int, ...]) -> bool:
    return any(period > 1 for period in repeats)


def action_repeats(steps: Sequence[WindowStep], i: int) -> tuple[int, ...]:
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
