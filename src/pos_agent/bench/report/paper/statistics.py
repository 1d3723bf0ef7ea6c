"""The statistics beside each cell: a 95% bootstrap interval, and a paired test of PoS against
the strongest baseline on the same cases (pure; numpy for the resampling).

- Interval: the percentile bootstrap of the mean over the cell's scored cases (resampled with
  replacement `RESAMPLES` times, seeded, so a report is reproducible), as percentages.
- Paired test: McNemar's exact test on success over the cases both methods scored: under the
  null, the discordant cases (one method succeeded, the other failed) split evenly, so the
  two-sided p-value is twice the binomial tail of the smaller count, at most 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

RESAMPLES = 2000
LEVEL = 0.95
SEED = 20260101


def bootstrap_interval(
    values: Sequence[float], *, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean, in percent; None without values."""
    if not values:
        return None
    import numpy as np

    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(data), size=(resamples, len(data)))
    means = data[draws].mean(axis=1)
    tail = (1.0 - level) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return 100 * float(low), 100 * float(high)


@dataclass(frozen=True)
class PairedTest:
    """McNemar's exact test on the cases both methods scored."""

    n: int
    """Cases both scored."""
    only_first: int
    """Cases the first method solved and the second did not."""
    only_second: int
    p_value: float


def mcnemar_exact(first: dict[str, bool], second: dict[str, bool]) -> PairedTest:
    """Paired successes by case id (cases only one method scored are left out)."""
    shared = sorted(set(first) & set(second))
    b = sum(1 for case in shared if first[case] and not second[case])
    c = sum(1 for case in shared if second[case] and not first[case])
    return PairedTest(len(shared), b, c, _two_sided(b, c))


def _two_sided(b: int, c: int) -> float:
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)
