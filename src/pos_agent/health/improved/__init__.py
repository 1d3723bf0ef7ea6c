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

Everything here is a pure function of the given steps: `reading.py` reads each transition (with
`calls.py`, what the calls repeat), `assess.py` turns the readings into the report.
"""

from __future__ import annotations

from pos_agent.health.improved.assess import assess_and_read, assess_improved
from pos_agent.health.improved.calls import MAX_PERIOD
from pos_agent.health.improved.reading import (
    StepKind,
    TransitionReading,
    changed_keys,
    read_latest,
    read_transitions,
)

__all__ = [
    "MAX_PERIOD",
    "StepKind",
    "TransitionReading",
    "assess_and_read",
    "assess_improved",
    "changed_keys",
    "read_latest",
    "read_transitions",
]
