"""The diagnostic progress label (Eq. 4): did the inferred confidences move enough?"""

from __future__ import annotations

import math
from collections.abc import Mapping

# A distance equal to eps in exact arithmetic is "not above eps" even if float sums overshoot.
_TOLERANCE = 1e-9


def _confidence(value: object) -> float | None:
    """A confidence clipped to [0, 1]; None (treated as missing) for NaN or non-numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if math.isnan(number):
        return None
    return min(1.0, max(0.0, number))


def diagnostic_progress(
    before: Mapping[str, float], after: Mapping[str, float], eps: float
) -> tuple[float, int]:
    """(d, u) with d = 0.5 * sum_x |c_after(x) - c_before(x)| and u = 1 iff d > eps [4].

    `before` and `after` map the keys of inferred states and relations to their confidences.
    The sum runs over the union of both sides: a record missing on one side has confidence 0
    there, so a hypothesis that appears with 0.7 contributes 0.35 (total variation).
    Confidences are clipped to [0, 1]; NaN and non-numeric values count as missing (0). Never
    raises. d is compared with eps up to a 1e-9 slack, so float rounding cannot flip an exact tie.
    """
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return 0.0, 0
    changes: list[float] = []
    for key in before.keys() | after.keys():
        previous = _confidence(before.get(key)) or 0.0
        current = _confidence(after.get(key)) or 0.0
        changes.append(abs(current - previous))
    # fsum is exact, so the result does not depend on which side's key order was walked.
    distance = 0.5 * math.fsum(changes)
    moved = isinstance(eps, int | float) and distance > eps + _TOLERANCE
    return distance, int(moved)
