"""Volatile tokens: the parts of a tool's output (or of an action) that change on every call
while nothing that matters changed, replaced by a placeholder before any key is made.

A failing `curl` prints a new timestamp and request id each time, a test run ends "in 0.53s",
a download prints a new speed. Counted as first-seen things, such tokens make a loop look like
exploration. `normalise` rewrites them with an ordered list of `VolatileRule`s; novelty, world
keys and action keys are all made from what is left.

The rules run in the order of `DEFAULT_RULES` (more specific shapes first: a timestamp before
the clock time and the date inside it, a UUID before the hex rule, a size-per-second before a
plain size). Each replaces a match with its placeholder (`<time>`, `<uuid>`, ...), so two outputs
that differ only in volatile tokens normalise to the same text. Numbers that carry meaning are
left alone: counts such as "3 failed, 7 passed", line numbers, exit codes and page numbers are
not volatile here. A caller adds rules of its own (`TrapMonitor(volatile=...)`,
`Normaliser(extra=...)`), which run after the defaults, or replaces the list.

`rules.py` holds the rules, `normaliser.py` applies them, `meters.py` reads the progress meters
they hide.
"""

from pos_agent.monitor.volatile.meters import meter_advanced, meter_readings
from pos_agent.monitor.volatile.normaliser import Normaliser, normalise
from pos_agent.monitor.volatile.rules import DEFAULT_RULES, VolatileRule
from pos_agent.monitor.volatile.skeleton import bare, numbers_shrank, skeleton

__all__ = [
    "DEFAULT_RULES",
    "Normaliser",
    "VolatileRule",
    "bare",
    "meter_advanced",
    "meter_readings",
    "normalise",
    "numbers_shrank",
    "skeleton",
]
