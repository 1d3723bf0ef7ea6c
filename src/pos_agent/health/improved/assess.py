"""The improved health report of a window: stagnation and recurrence over the last `recent`
transitions as read (reading.py), the loop's period, and the trailing run's pattern."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from pos_agent.health.improved.reading import (
    NOT_STUCK,
    STUCK,
    TransitionReader,
    TransitionReading,
)
from pos_agent.health.window import (
    HealthConfig,
    HealthReport,
    TrapPattern,
    WindowStep,
    judged_report,
)


def _loop_lags(reading: TransitionReading) -> tuple[int, ...]:
    """The lags a stuck transition repeats at: for a cycle, its world's returns to 2..L steps
    ago, else the periods of its calls; otherwise its returns (1: unchanged) or call repeats."""
    if reading.kind == "cycle":
        # A world that did not change at all says nothing of the loop's period; its calls do.
        returns = reading.returns
        world = returns if returns and returns[0] != 1 else ()
        return world or tuple(period for period in reading.repeats if period > 1)
    return reading.returns or reading.repeats


def _pattern(reader: TransitionReader, last: int) -> TrapPattern | None:
    """The kind of most transitions in the trailing unproductive run (latest kind wins ties)."""
    run: list[TrapPattern] = []
    for i in range(last, 0, -1):
        kind = reader(i).kind
        if kind in NOT_STUCK:
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
    reader = TransitionReader(window, config)
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
    stagnation = len([r for r in judged[last_productive + 1 :] if r.kind in STUCK]) / len(judged)
    stuck_returns = [lags for r in judged if r.kind in STUCK and (lags := _loop_lags(r))]
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
